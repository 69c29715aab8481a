// SPDX-License-Identifier: Apache-2.0
// dlx logs: a trial's output, attempt by attempt. dlx-launch keeps each rank's output of each
// attempt in trials/<id>/logs/ (store/trial_logs.hpp); where it kept none, Slurm's own output file
// of the job that ran the trial last (logs_slurm.hpp), read only as a regular file of the job's
// user who owns the experiment, as that user when run by root (slurm_file_reader). Reads only: any
// user who can read the experiment can run it, while the trial runs (--follow) or after.

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "dlx/record/trial_record.hpp"
#include "dlx/common/error.hpp"
#include "dlx/common/trusted_path.hpp"
#include "dlx/config/display_text.hpp"
#include "dlx/store/experiment_layout.hpp"
#include "dlx/store/trial_logs.hpp"
#include "experiment_locator.hpp"
#include "logs_job.hpp"
#include "logs_output.hpp"
#include "logs_slurm.hpp"
#include "options.hpp"
#include "owner_rights.hpp"
#include "terminal.hpp"
#include "stop_signals.hpp"

namespace dlx::cli {

namespace {

namespace fs = std::filesystem;

CommandLine logs_command_line() {
  namespace po = boost::program_options;
  CommandLine command(
      "logs", "JOBID|EXPERIMENT_DIR TRIAL [--attempt N] [--rank R] [--follow] [--json] [--raw]",
      "A trial's output (stdout and stderr as its ranks wrote them), attempt by attempt:\n"
      "attempt 0 is its first run, each requeue or restart the next. dlx-launch keeps every\n"
      "rank's output of every attempt in trials/<id>/logs/ (at most DLX_LOG_MAX_MB, 64 MiB,\n"
      "each); where it kept none, Slurm's own output file of the job that ran the trial\n"
      "last is shown, as Slurm names it: only a file of the job's user, never through a\n"
      "link (as root, read as that user). Each file starts with a '# ' header\n"
      "naming it. On a terminal control characters are shown escaped (--raw: as written).\n"
      "--follow prints the latest attempt and then what is written, next attempts included,\n"
      "until the trial is completed or failed, or Ctrl-C.",
      "dlx logs 42 3\n"
      "dlx logs 42 3 --attempt 1 --rank 0\n"
      "dlx logs /shared/dlx/alice/logreg-grid 3 --follow");
  command.options.add_options()("attempt", po::value<int>()->value_name("N"), "only attempt N (0: the first run)")(
      "rank", po::value<int>()->value_name("R"), "only rank R's output")(
      "follow", "print the output as it is written, until the trial ends or Ctrl-C")(
      "json", "list the attempts and their files (no output) as JSON")(
      "raw", "write the bytes as the trial wrote them, on a terminal too");
  command.operands.add_options()("experiment", po::value<std::string>()->required(), "job id or experiment directory")(
      "trial", po::value<std::string>()->required(), "trial id");
  command.positional.add("experiment", 1).add("trial", 1);
  return command;
}

struct Request {
  std::string given;  // what the user typed: job id or directory
  fs::path experiment;
  int trial = 0;
  std::optional<int> attempt;
  std::optional<int> rank;
  bool follow = false;
  bool json = false;
  bool escape = false;
  fs::path trial_dir() const { return store::trial_dir(experiment, trial); }
  fs::path logs_dir() const { return store::trial_logs_dir(trial_dir()); }
};

std::string readable_hint(int error) {
  return error == EACCES ? " (the experiment's files are readable by its owner and their group only: "
                           "ask its owner, or run dlx logs as a member of that group)"
                         : "";
}

// The trial's directory must exist: otherwise the trial has not started, or there is no such trial.
void require_trial(const Request& request) {
  std::error_code error;
  const auto status = fs::status(request.trial_dir(), error);
  if (error && status.type() != fs::file_type::not_found) {
    throw Error(fmt::format("cannot read {}: {}{}", request.trial_dir().string(), error.message(),
                            readable_hint(error.value())));
  }
  if (!fs::is_directory(status)) {
    throw Error(fmt::format("trial {} has no directory in {} ({} does not exist): it has not started "
                            "yet, or the experiment has no trial {} (dlx status {} lists its trials)",
                            request.trial, request.experiment.string(), request.trial_dir().string(),
                            request.trial, request.given));
  }
}

std::vector<store::AttemptLogs> all_attempts(const Request& request) {
  try {
    return store::list_trial_logs(request.logs_dir());
  } catch (const SystemError& error) {
    throw Error(fmt::format("{}{}", error.what(), readable_hint(error.error_number())));
  }
}

// The attempts and ranks asked for (--attempt, --rank), those with a file only.
std::vector<store::AttemptLogs> selected(const Request& request, std::vector<store::AttemptLogs> attempts) {
  std::vector<store::AttemptLogs> out;
  for (auto& attempt : attempts) {
    if (request.attempt && attempt.attempt != *request.attempt) continue;
    if (request.rank) {
      std::erase_if(attempt.ranks, [&](const store::RankLog& log) { return log.rank != *request.rank; });
    }
    if (!attempt.ranks.empty()) out.push_back(std::move(attempt));
  }
  return out;
}

std::string numbers(const std::vector<store::AttemptLogs>& attempts) {
  std::vector<int> list;
  for (const auto& attempt : attempts) list.push_back(attempt.attempt);
  return fmt::format("{}", fmt::join(list, ", "));
}

// Completed or failed in trial.h5 (read alone: the state is there, the metrics logs do not matter).
bool trial_ended(const Request& request) {
  try {
    const auto path = request.trial_dir() / record::kTrialFileName;
    if (!fs::exists(path)) return false;
    const auto record = record::load_trial_record_file(path);
    return record.state == "completed" || record.state == "failed";
  } catch (const std::exception&) {
    return false;  // being replaced, or unreadable: no state to go by
  }
}

std::string header_of(const Request& request, const store::AttemptLogs& attempt, const store::RankLog& log) {
  return fmt::format("trial {} attempt {} rank {}{}: {}", request.trial, attempt.attempt, log.rank,
                     attempt.run.empty() ? "" : fmt::format(" (run {})", attempt.run), log.path.string());
}

// Run keys and paths are bytes from the file system: invalid UTF-8 is replaced, never an error.
std::string json_text(const nlohmann::ordered_json& doc) {
  return doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

nlohmann::ordered_json attempts_json(const std::vector<store::AttemptLogs>& attempts) {
  auto list = nlohmann::ordered_json::array();
  for (const auto& attempt : attempts) {
    nlohmann::ordered_json item{{"attempt", attempt.attempt}, {"run", attempt.run}};
    auto files = nlohmann::ordered_json::array();
    for (const auto& log : attempt.ranks) {
      std::error_code error;
      const auto size = fs::file_size(log.path, error);
      files.push_back({{"rank", log.rank}, {"path", log.path.string()},
                       {"bytes", error ? nlohmann::ordered_json() : nlohmann::ordered_json(size)}});
    }
    item["files"] = std::move(files);
    list.push_back(std::move(item));
  }
  return list;
}

// Slurm's file(s) of the job that ran the trial last (logs_job.hpp).
std::optional<SlurmOutput> slurm_files_of(const Request& request, std::string& why_not) {
  const auto job = trial_job(request.experiment, request.trial, request.given, why_not);
  if (!job) return std::nullopt;
  std::string slurm_says;
  auto files = slurm_output_files(job->job_id, slurm_says);
  if (!files) {
    why_not = fmt::format("{} ({}; Slurm forgets finished jobs after MinJobAge): its output is where sbatch "
                          "--output put it, slurm-%A_%a.out in the submit directory by default",
                          slurm_says, job->how);
  }
  return files;
}

// Slurm's file is the job's user's, at a path the user chose: it is read only when that user owns
// the experiment too (a trial record may name anyone's job), as that user when dlx runs as root
// (owner_rights.hpp), and only as a regular file of theirs, never through a link (copy_log).
std::optional<LogOwner> slurm_file_reader(const Request& request, const SlurmOutput& files, LogOutput& out) {
  struct stat experiment {};
  if (::stat(request.experiment.c_str(), &experiment) != 0) {
    throw SystemError(fmt::format("cannot look at {}", request.experiment.string()), errno);
  }
  if (experiment.st_uid != files.uid) {
    throw Error(fmt::format("trial {}: job {} ran as {}, but {} belongs to {}: Slurm's output file of another "
                            "user's job is not shown (the trial's record names that job; dlx logs {} shows it "
                            "to those who may read it)",
                            request.trial, files.job_id, user_name_of(files.uid), request.experiment.string(),
                            user_name_of(experiment.st_uid), files.job_id));
  }
  if (::geteuid() == 0 && files.uid != 0) {
    act_as_user(files.uid);
    out.header(fmt::format("reading Slurm's files as {}, the user job {} ran as, not as root", user_name_of(files.uid),
                           files.job_id));
  }
  return LogOwner{files.uid, user_name_of(files.uid), files.job_id};
}

int print_slurm(const Request& request, const SlurmOutput& files, LogOutput& out) {
  std::vector<fs::path> paths{files.stdout_path};
  if (files.stderr_path) paths.push_back(*files.stderr_path);
  if (request.json) {
    nlohmann::ordered_json doc{{"experiment", request.experiment.string()}, {"trial", request.trial},
                               {"source", "slurm"}, {"job_id", files.job_id},
                               {"stdout", files.stdout_path.string()},
                               {"stderr", files.stderr_path ? files.stderr_path->string() : files.stdout_path.string()},
                               {"attempts", nlohmann::ordered_json::array()}};
    fmt::print("{}\n", json_text(doc));
    return 0;
  }
  const auto owner = slurm_file_reader(request, files, out);
  std::vector<std::uint64_t> offsets(paths.size(), 0);
  const auto pass = [&] {
    for (std::size_t i = 0; i < paths.size(); ++i) {
      const auto before = offsets[i];
      offsets[i] = copy_log(paths[i], offsets[i], out, owner);
      if (offsets[i] != before) out.end_source();
    }
  };
  for (std::size_t i = 0; i < paths.size(); ++i) {
    out.header(fmt::format("trial {}: no output kept by dlx-launch in {}; Slurm's {} file of job {} "
                           "(every attempt, as Slurm wrote it): {}",
                           request.trial, request.logs_dir().string(), i == 0 ? "output" : "error",
                           files.job_id, paths[i].string()));
    offsets[i] = copy_log(paths[i], 0, out, owner);
    out.end_source();
  }
  if (!request.follow) return 0;
  const StopSignals signals;
  while (!StopSignals::requested() && !trial_ended(request)) {
    sleep_unless_stopped(std::chrono::milliseconds(500));
    pass();
  }
  pass();
  return 0;
}

int follow(const Request& request, LogOutput& out) {
  const StopSignals signals;
  std::optional<int> current;                        // the attempt being followed
  std::map<fs::path, std::uint64_t> offsets;         // per rank file of that attempt
  std::optional<fs::path> last_source;
  bool waiting_said = false;
  const auto pass = [&] {
    const auto attempts = selected(request, all_attempts(request));
    if (attempts.empty()) {
      if (!waiting_said) {
        out.header(fmt::format("trial {}: no output yet; waiting for it (Ctrl-C to stop)", request.trial));
      }
      waiting_said = true;
      return;
    }
    // The current attempt to its end, then the latest one (a requeue started it) from its start.
    for (const auto& attempt : attempts) {
      if (current && attempt.attempt < *current) continue;
      if (!current || attempt.attempt > *current) {
        if (attempt.attempt != attempts.back().attempt) continue;
        current = attempt.attempt;
        offsets.clear();
      }
      for (const auto& log : attempt.ranks) {
        auto& offset = offsets[log.path];
        std::error_code error;
        const auto size = fs::file_size(log.path, error);
        if (error || size <= offset) continue;  // nothing new: no header
        if (last_source != log.path) {
          out.header(header_of(request, attempt, log));
          last_source = log.path;
        }
        offset = copy_log(log.path, offset, out);
      }
    }
    std::fflush(stdout);
  };
  pass();
  // When the trial ends its last lines (dlx-launch's own, the trainer's after its record said so)
  // may still be on their way: one more pass a moment later.
  while (!StopSignals::requested() && !trial_ended(request)) {
    sleep_unless_stopped(std::chrono::milliseconds(500));
    pass();
  }
  if (!StopSignals::requested()) {
    sleep_unless_stopped(std::chrono::milliseconds(1500));
    pass();
  }
  out.end_source();
  return 0;
}

// The command line's request (the experiment located, the trial known to it). Throws UsageError.
Request request_from(const Arguments& arguments) {
  const auto command = logs_command_line();
  auto values = parse_options(arguments, command);
  Request request;
  request.given = values["experiment"].as<std::string>();
  const auto trial_text = values["trial"].as<std::string>();
  try {
    std::size_t used = 0;
    request.trial = std::stoi(trial_text, &used);
    if (used != trial_text.size() || request.trial < 0 || trial_text.front() == '+') throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw UsageError(fmt::format("TRIAL must be a trial id (a non-negative integer), not '{}'",
                                 config::abbreviated(trial_text)), usage_text(command));
  }
  if (values.count("attempt")) request.attempt = values["attempt"].as<int>();
  if (values.count("rank")) request.rank = values["rank"].as<int>();
  request.follow = values.count("follow") > 0;
  request.json = values.count("json") > 0;
  if (request.follow && request.json) throw UsageError("--follow and --json do not go together", usage_text(command));
  request.escape = !values.count("raw") && stdout_is_terminal();
  request.experiment = locate_experiment(request.given);
  require_trial(request);
  return request;
}

void print_json(const Request& request, const char* source, nlohmann::ordered_json attempts) {
  nlohmann::ordered_json doc{{"experiment", request.experiment.string()}, {"trial", request.trial},
                             {"source", source ? nlohmann::ordered_json(source) : nlohmann::ordered_json(nullptr)},
                             {"logs_dir", request.logs_dir().string()}, {"attempts", std::move(attempts)}};
  fmt::print("{}\n", json_text(doc));
}

// dlx-launch kept nothing for the trial: Slurm's file, if Slurm still knows the job; else an empty
// answer for --json, an error naming both places, or nothing yet for --follow (nullopt: go on).
std::optional<int> without_attempts(const Request& request, LogOutput& out) {
  std::string why_not;
  if (const auto slurm = slurm_files_of(request, why_not)) return print_slurm(request, *slurm, out);
  if (request.json) {
    print_json(request, nullptr, nlohmann::ordered_json::array());
    return 0;
  }
  if (!request.follow) {
    throw Error(fmt::format("trial {} has no output yet: {} holds no attempt (dlx-launch writes it when "
                            "the trial starts on a node) and {}; --follow waits for it",
                            request.trial, request.logs_dir().string(), why_not));
  }
  return std::nullopt;
}

}  // namespace

int run_logs(const Arguments& arguments) {
  const Request request = request_from(arguments);
  LogOutput out(request.escape);
  const auto all = all_attempts(request);
  const auto attempts = selected(request, all);
  if (all.empty()) {
    if (const auto status = without_attempts(request, out)) return *status;
  } else if (attempts.empty() && !request.follow) {
    throw Error(fmt::format("trial {} has no {}{}{} in {} (its attempts: {})", request.trial,
                            request.attempt ? fmt::format("attempt {}", *request.attempt) : "",
                            request.attempt && request.rank ? " " : "",
                            request.rank ? fmt::format("output of rank {}", *request.rank) : "",
                            request.logs_dir().string(), numbers(all)));
  }
  if (request.json) {
    print_json(request, "dlx-launch", attempts_json(attempts));
    return 0;
  }
  if (request.follow) return follow(request, out);
  for (const auto& attempt : attempts) {
    for (const auto& log : attempt.ranks) {
      out.header(header_of(request, attempt, log));
      copy_log(log.path, 0, out);
      out.end_source();
    }
  }
  return 0;
}

}  // namespace dlx::cli
