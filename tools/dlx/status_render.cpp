// SPDX-License-Identifier: Apache-2.0
#include "status_render.hpp"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "dlx/common/byte_size.hpp"
#include "dlx/common/id_ranges.hpp"
#include "dlx/config/display_text.hpp"
#include "sparkline.hpp"
#include "table.hpp"

namespace dlx::cli {

namespace {

std::string format_metric(const std::optional<double>& value) {
  return value ? fmt::format("{:.6g}", *value) : "-";
}

constexpr std::size_t kSparklineWidth = 16;

// The lines under the table, one per distinct text: trials that say the same (a grid whose every
// trial failed on one bug, a cancelled job's trials not started) share one line, "# trials 0-63
// failed: ...", in the order each text first appears. The texts are printable already.
class TrialLines {
 public:
  void add(int trial, std::string text) {
    // By text through an index: an experiment of thousands of trials, each with a line of its
    // own ("pending: waits its turn in array task 7"), stays linear.
    const auto [found, added] = index_.try_emplace(text, lines_.size());
    if (added) {
      lines_.push_back({std::move(text), {trial}});
    } else {
      lines_[found->second].trials.push_back(trial);
    }
  }
  std::string rendered() const {
    std::string out;
    for (const auto& line : lines_) {
      out += line.trials.size() == 1 ? fmt::format("# trial {} {}\n", line.trials.front(), line.text)
                                     : fmt::format("# trials {} {}\n", id_ranges(line.trials), line.text);
    }
    return out;
  }

 private:
  struct Line {
    std::string text;
    std::vector<int> trials;  // ascending: rows come in trial order
  };
  std::vector<Line> lines_;
  std::unordered_map<std::string, std::size_t> index_;  // text -> its place in lines_
};

Table trial_table(const StatusReport& report, const config::Experiment& experiment, bool with_sparklines) {
  const auto& metric = experiment.searcher.metric;
  std::vector<std::string> headers{"trial", "state"};
  for (const auto& hp : experiment.hyperparameters) headers.push_back(hp.name);
  headers.push_back("last " + metric);
  headers.push_back("best " + metric);
  if (report.searcher_column) headers.push_back("searcher");
  // What running trials use now, when any samples (resources.sample_period).
  const bool system = std::any_of(report.rows.begin(), report.rows.end(), [](const auto& row) { return row.system; });
  if (system) {
    headers.push_back("cpu%");
    headers.push_back("mem");
  }
  const bool gpu = std::any_of(report.rows.begin(), report.rows.end(), [](const auto& row) {
    return row.system && (row.system->gpu_percent || row.system->gpu_memory_bytes);
  });
  if (gpu) {
    headers.push_back("gpu%");
    headers.push_back("gpu mem");
  }
  // Last: its cells are UTF-8 blocks of 3 bytes each, which Table pads as bytes; as the last
  // column it is never padded.
  if (with_sparklines) headers.push_back(metric + " curve");
  Table table(headers);
  for (const auto& row : report.rows) {
    std::vector<std::string> cells{std::to_string(row.spec.id), row.shown_state()};
    for (const auto& hp : experiment.hyperparameters) cells.push_back(format_value(row.spec.hparams[hp.name]));
    cells.push_back(format_metric(row.last));
    cells.push_back(format_metric(row.best));
    if (report.searcher_column) cells.push_back(row.searcher.empty() ? "-" : row.searcher);
    if (system) {
      cells.push_back(row.system ? fmt::format("{:.0f}", row.system->cpu_percent) : "-");
      cells.push_back(row.system ? format_byte_size(static_cast<std::uint64_t>(row.system->memory_bytes)) : "-");
    }
    if (gpu) {
      const auto* now = row.system ? &*row.system : nullptr;
      cells.push_back(now && now->gpu_percent ? fmt::format("{:.0f}", *now->gpu_percent) : "-");
      cells.push_back(now && now->gpu_memory_bytes
                          ? format_byte_size(static_cast<std::uint64_t>(*now->gpu_memory_bytes)) : "-");
    }
    if (with_sparklines) cells.push_back(sparkline(row.metric_values, kSparklineWidth));
    table.add_row(cells);
  }
  return table;
}

std::size_t widest_line(const std::string& text) {
  std::size_t widest = 0, start = 0;
  for (std::size_t end = text.find('\n'); end != std::string::npos; start = end + 1, end = text.find('\n', start)) {
    widest = std::max(widest, end - start);
  }
  return widest;
}

std::string rendered_rows(const StatusReport& report, const config::Experiment& experiment,
                          const SparklineChoice& sparklines) {
  if (sparklines.always) return trial_table(report, experiment, true).render();
  auto plain = trial_table(report, experiment, false).render();
  // The column's room: two spaces and 16 blocks (a block is one column wide, three bytes).
  if (sparklines.columns && widest_line(plain) + 2 + kSparklineWidth <= *sparklines.columns) {
    return trial_table(report, experiment, true).render();
  }
  return plain;
}

}  // namespace

std::string render_status_table(const StatusReport& report, const config::Experiment& experiment,
                                const SparklineChoice& sparklines, const std::string& progress_lines) {
  const auto& metric = experiment.searcher.metric;
  const auto& rows = report.rows;
  // '#' lines and cells are shown through config::printable (table.hpp): hyperparameter values,
  // reasons and paths cannot act on the terminal or add lines.
  std::string out = fmt::format("# experiment {}  {}\n", config::printable(experiment.name),
                                config::printable(report.directory.string()));
  out += fmt::format("# searcher {}, metric {} ({} is better)\n", config::to_string(experiment.searcher.name),
                     config::printable(metric), experiment.searcher.smaller_is_better ? "smaller" : "larger");
  if (!report.code.empty()) out += fmt::format("# code {}\n", config::printable(report.code));
  for (const auto& image : report.containers) out += fmt::format("# image {}\n", config::printable(image));
  if (!report.slurm.empty()) out += fmt::format("# slurm {}\n", config::printable(report.slurm));
  out += progress_lines;
  out += rendered_rows(report, experiment, sparklines);
  TrialLines lines;
  for (const auto& row : rows) {
    if (!row.problem.empty()) out += fmt::format("# trial {}: {}\n", row.spec.id, config::printable(row.problem));
    // Why a trial failed, where a user looks first (the job's output may be gone or overwritten).
    if (row.state == "failed" && !row.stop_reason.empty()) {
      const bool says_failed = row.stop_reason.starts_with("failed");
      lines.add(row.spec.id, fmt::format("{}{}", says_failed ? "" : "failed: ", config::printable(row.stop_reason)));
    }
    // What a requeued, restarting, crash-looping, lost or unlaunched trial is waiting for.
    if (!row.detail.empty()) lines.add(row.spec.id, config::printable(row.detail));
    // A script without validation (PyTorch's regression example) leaves the columns empty: why.
    if (row.metric_in_training_only && (row.state == "completed" || row.state == "stopped" || row.state == "paused")) {
      lines.add(row.spec.id, fmt::format("reported {} in training only: the last and best columns, and the "
                                         "searcher, take validation values (give dlx.torch.Loop a validate=, or "
                                         "report them with trial.report_validation)",
                                         config::printable(metric)));
    }
  }
  out += lines.rendered();
  for (const auto& line : report.hparam_warnings) out += fmt::format("# warning: {}\n", config::printable(line));
  std::string summary;
  for (const auto& [state, count] : report.states) {
    summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", count, state);
  }
  out += fmt::format("# {}: {}\n", counted(static_cast<std::int64_t>(rows.size()), "trial"), summary);
  if (report.best_row) {
    out += fmt::format("# best: trial {} {}={}\n", rows[*report.best_row].spec.id, config::printable(metric),
                       format_metric(rows[*report.best_row].best));
  }
  return out;
}

nlohmann::ordered_json status_json(const StatusReport& report, const config::Experiment& experiment) {
  const auto& rows = report.rows;
  auto out = nlohmann::ordered_json::object();
  out["experiment"] = experiment.name;
  out["directory"] = report.directory.string();
  out["metric"] = experiment.searcher.metric;
  out["smaller_is_better"] = experiment.searcher.smaller_is_better;
  if (!report.code.empty()) {
    out["code"] = {{"commit", report.code_commit ? nlohmann::ordered_json(*report.code_commit) : nlohmann::ordered_json()},
                   {"dirty", report.code_dirty},
                   {"description", report.code}};
  }
  if (!report.containers.empty()) out["containers"] = report.containers;
  out["trials"] = nlohmann::ordered_json::array();
  for (const auto& row : rows) {
    nlohmann::ordered_json item{{"id", row.spec.id}, {"state", row.state}, {"hparams", row.spec.hparams}};
    if (!row.state_note.empty()) item["state_note"] = row.state_note;
    if (!row.detail.empty()) item["detail"] = row.detail;
    if (row.ticket) item["ticket"] = *row.ticket;
    if (!row.last_error.empty()) item["last_error"] = row.last_error;
    if (row.failures > 0) item["failures"] = row.failures;
    if (!row.hparam_warnings.empty()) {
      auto warnings = nlohmann::ordered_json::array();
      for (const auto& warning : row.hparam_warnings) {
        warnings.push_back({{"kind", warning.kind}, {"name", warning.name}, {"message", warning.message}});
      }
      item["hparam_warnings"] = std::move(warnings);
    }
    item["last"] = row.last ? nlohmann::ordered_json(*row.last) : nlohmann::ordered_json();
    item["best"] = row.best ? nlohmann::ordered_json(*row.best) : nlohmann::ordered_json();
    if (!row.searcher.empty()) item["searcher"] = row.searcher;
    if (!row.stop_reason.empty()) item["stop_reason"] = row.stop_reason;
    if (!row.problem.empty()) item["problem"] = row.problem;
    if (!row.nodes.empty()) item["nodes"] = row.nodes;
    if (row.system) {
      item["system"] = {{"cpu_percent", row.system->cpu_percent}, {"memory_bytes", row.system->memory_bytes},
                        {"ranks", row.system->ranks}, {"sampled_unix", row.system->sampled_unix}};
      if (row.system->gpu_percent) item["system"]["gpu_percent"] = *row.system->gpu_percent;
      if (row.system->gpu_memory_bytes) item["system"]["gpu_memory_bytes"] = *row.system->gpu_memory_bytes;
    }
    if (!row.restarts.empty()) {
      // Each restart: why the attempt before it ended, on which nodes, and what it cost.
      auto restarts = nlohmann::ordered_json::array();
      for (const auto& event : row.restarts) {
        restarts.push_back({{"cause", event.cause}, {"reason", event.reason}, {"previous_nodes", event.previous_nodes},
                            {"unix_time", event.unix_time}, {"resumed_step", event.resumed_step},
                            {"steps_lost", event.steps_lost}, {"seconds_lost", event.seconds_lost},
                            {"downtime_seconds", event.downtime_seconds}});
      }
      item["restarts"] = std::move(restarts);
    }
    out["trials"].push_back(item);
  }
  out["best_trial"] = report.best_row ? nlohmann::ordered_json(rows[*report.best_row].spec.id)
                                      : nlohmann::ordered_json();
  out["hparam_warnings"] = report.hparam_warnings;
  if (!report.slurm.empty()) out["slurm"] = report.slurm;
  return out;
}

}  // namespace dlx::cli
