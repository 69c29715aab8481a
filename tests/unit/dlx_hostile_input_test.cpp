// SPDX-License-Identifier: Apache-2.0
// The real `dlx` binary on hostile input, as a user would meet it (issue 17, findings 4, 10-13):
//   - 100,000-character resource values and a 200 KB hyperparameter name: a message, no SIGSEGV;
//   - a million-point grid and a 1,000-hyperparameter file: planned in linear time (each run is
//     under `timeout`: a hang guard, far above the seconds they take; the old code took hours);
//   - values holding newlines, OSC/CSI sequences and C1 controls: escaped in every table and '#'
//     line (same row count), exact in --json;
//   - crafted journals (bad JSON, wrong types, missing fields, huge numbers, 8 MiB of headers):
//     `dlx replay` and `dlx status` name the file, the record's offset and what is wrong, and never
//     show a library's text; out of memory is a dlx message too.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dlx/record/trial_record.hpp"
#include "crafted_metrics_logs.hpp"
#include "dlx/common/crc32c.hpp"
#include "dlx/searcher/journal.hpp"
#include "run_program.hpp"
#include "searcher_temp_dir.hpp"

namespace fs = std::filesystem;
using dlx::testing::slurp;
using dlx::testing::spit;
using dlx::testing::TempDir;

namespace {

using Output = dlx::testing::ProgramOutput;

// `dlx ARGS...` under `timeout 300` (124 when it ran that long), through `bash -c` with `prefix`
// (e.g. a ulimit) when given.
Output run_dlx(const std::vector<std::string>& args, const std::string& prefix = "") {
  TempDir capture;
  std::vector<std::string> argv{"/usr/bin/timeout", "300", DLX_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  if (!prefix.empty()) {
    std::string command = prefix + "; exec";
    for (const auto& arg : argv) command += " '" + arg + "'";
    argv = {"/bin/bash", "-c", command};
  }
  return dlx::testing::run_program(argv, capture.path);
}

// The line of the table row for trial `id`: "" when there is none.
std::string row_of(const std::string& text, int id) {
  const std::string start = std::to_string(id) + " ";
  for (std::size_t at = 0; at < text.size();) {
    const auto end = std::min(text.find('\n', at), text.size());
    if (text.compare(at, start.size(), start) == 0) return text.substr(at, end - at);
    at = end + 1;
  }
  return "";
}

std::size_t count_lines(const std::string& text, const std::string& prefix = "") {
  std::size_t lines = 0;
  for (std::size_t at = 0; at < text.size();) {
    const auto end = text.find('\n', at);
    if (text.compare(at, prefix.size(), prefix) == 0) ++lines;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return lines;
}

// Bytes a terminal acts on: C0 controls but newline, DEL, and C1 controls as UTF-8.
bool has_terminal_controls(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if ((byte < 0x20 && byte != '\n') || byte == 0x7f) return true;
    if (byte == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      return true;
    }
  }
  return false;
}

const std::string kHead = "name: hostile\nentrypoint: x\nseed: 3\n";

std::string u32(std::uint32_t value) {
  std::string out;
  for (int shift = 0; shift < 32; shift += 8) out.push_back(static_cast<char>((value >> shift) & 0xFF));
  return out;
}

// A journal record whose checksum is right, whatever its payload.
std::string record_of(const std::string& payload) {
  return "DLXJ" + u32(static_cast<std::uint32_t>(payload.size())) +
         u32(dlx::crc32c(payload)) + payload;
}

}  // namespace

TEST_CASE("dlx validate: 100,000-character values are a one-line message, not SIGSEGV", "[cli][hostile]") {
  TempDir dir;
  const std::string searcher = "searcher: {name: single, metric: m}\n";
  struct Row {
    std::string file, text, message;
  };
  const std::vector<Row> rows{
      {"partition.yaml", kHead + searcher + "resources: {partition: " + std::string(100'000, 'p') + "}\n",
       "partition.yaml:5:24: resources.partition: is 100000 characters long, more than the limit of 255: 'pppp"},
      {"time.yaml", kHead + searcher + "resources: {time_limit: \"" + std::string(100'000, '1') + "\"}\n",
       "resources.time_limit: is 100000 characters long, more than the limit of 255"},
      {"mem.yaml", kHead + searcher + "resources: {mem_per_node: " + std::string(100'000, '4') + "G}\n",
       "resources.mem_per_node: is 100001 characters long, more than the limit of 255"},
      {"name.yaml", kHead + searcher + "hyperparameters:\n  ? " + std::string(200'000, 'h') + "\n  : 1\n",
       "... (200016 bytes): the name is 200000 characters long, more than the limit of 255 (use a shorter name)"},
  };
  for (const auto& row : rows) {
    INFO(row.file);
    spit(dir.path / row.file, row.text);
    const auto result = run_dlx({"validate", (dir.path / row.file).string()});
    CHECK(result.status == 1);  // not 139 (SIGSEGV)
    CHECK_THAT(result.err, Catch::Contains(row.message));
    CHECK(count_lines(result.err) == 1);
    CHECK(result.err.size() < 600);
  }
}

TEST_CASE("dlx plan: a million-point grid and 1,000 hyperparameters plan in linear time", "[cli][hostile]") {
  TempDir dir;
  spit(dir.path / "million.yaml", kHead + "searcher: {name: grid, metric: m, max_trials: 1000000}\n"
                                          "hyperparameters:\n  x: {type: int, minval: 0, maxval: 999999, count: 1000000}\n");
  auto result = run_dlx({"plan", (dir.path / "million.yaml").string()});
  REQUIRE(result.status == 0);
  CHECK(count_lines(result.out, "999999 ") == 1);  // the last trial
  CHECK_THAT(result.out, Catch::Contains("\n999999   999999\n"));
  CHECK(count_lines(result.out) - count_lines(result.out, "#") == 1'000'000);

  // The 58 KB file that cost 19 s inside sbatch: 1,000 hyperparameters of a million grid points each.
  std::string many = kHead + "searcher: {name: grid, metric: m, max_trials: 1000000}\nhyperparameters:\n";
  for (int i = 0; i < 1000; ++i) many += fmt::format("  h{}: {{type: int, minval: 7, maxval: 7, count: 1000000}}\n", i);
  spit(dir.path / "many.yaml", many);
  result = run_dlx({"validate", (dir.path / "many.yaml").string()});
  CHECK(result.status == 0);
  CHECK_THAT(result.out, Catch::Contains("valid: 1 trial, array 0"));
}

TEST_CASE("dlx plan and validate: 5,000 trials on 1,001 array tasks say how trials map to tasks", "[cli]") {
  TempDir dir;
  spit(dir.path / "big.yaml", kHead + "searcher: {name: random, metric: m, max_trials: 5000}\n"
                                      "hyperparameters: {x: {type: double, minval: 0, maxval: 1}}\n"
                                      "resources: {max_array_tasks: 1001}\n");
  auto result = run_dlx({"plan", (dir.path / "big.yaml").string()});
  REQUIRE(result.status == 0);
  CHECK_THAT(result.out, Catch::Contains("# array 0-1000%16: 1001 tasks, at most 16 at once") &&
                             Catch::Contains("# 5000 tickets on 1001 array tasks (resources.max_array_tasks): task t "
                                             "runs tickets t, t+1001, t+2002, ... in turn, up to 5 each"));
  CHECK(count_lines(result.out) - count_lines(result.out, "#") == 5000);  // every trial planned
  result = run_dlx({"validate", (dir.path / "big.yaml").string()});
  CHECK(result.status == 0);
  CHECK_THAT(result.out, Catch::Contains("valid: 5000 trials, array 0-1000%16 (each task runs up to 5 in turn: "
                                         "resources.max_array_tasks)"));

  // Without max_array_tasks: capped as sbatch caps it at the cluster's MaxArraySize when the limit
  // is known (--max-array-size here; cluster.array_tasks asks a real slurmctld).
  spit(dir.path / "bigger.yaml", kHead + "searcher: {name: random, metric: m, max_trials: 5000}\n"
                                         "hyperparameters: {x: {type: double, minval: 0, maxval: 1}}\n");
  const auto bigger = (dir.path / "bigger.yaml").string();
  result = run_dlx({"validate", "--max-array-size", "1001", bigger});
  CHECK(result.status == 0);
  CHECK_THAT(result.out, Catch::Contains("valid: 5000 trials, array 0-1000%16 (each task runs up to 5 in turn: "
                                         "--max-array-size 1001)"));
  result = run_dlx({"validate", "--json", "--max-array-size", "1001", bigger});
  const auto validated = nlohmann::json::parse(result.out).at(0);
  CHECK(validated.at("array_tasks") == 1001);
  CHECK(validated.at("array_tasks_limited_by") == "--max-array-size 1001");
  result = run_dlx({"plan", "--max-array-size", "1001", bigger});
  REQUIRE(result.status == 0);
  CHECK_THAT(result.out, Catch::Contains("# sbatch --array=0-1000%16") &&
                             Catch::Contains("# 5000 tickets on 1001 array tasks (--max-array-size 1001): task t") &&
                             Catch::Contains("#     max_array_tasks: 1001"));  // as sbatch freezes it
  // With no Slurm to ask (no scontrol on PATH), validate says what Slurm's default would do.
  result = run_dlx({"validate", bigger}, "PATH=/nonexistent");
  CHECK(result.status == 0);
  CHECK_THAT(result.out, Catch::Contains("valid: 5000 trials, array 0-4999%16 (more tasks than Slurm's default "
                                         "MaxArraySize, 1001: sbatch runs several trials per task where the "
                                         "cluster's limit is lower; --max-array-size N shows how)"));
  // 0: no limit, no note.
  result = run_dlx({"validate", "--max-array-size", "0", bigger});
  CHECK_THAT(result.out, Catch::EndsWith("valid: 5000 trials, array 0-4999%16\n"));
}

TEST_CASE("dlx plan and dlx status: control characters in values are escaped, rows unchanged", "[cli][hostile]") {
  TempDir dir;
  // YAML escapes: \n, ESC ] 0;title BEL (OSC), ESC [ 2J (CSI), \x9b (C1 CSI as UTF-8), DEL.
  const std::string experiment = kHead + "searcher: {name: grid, metric: \"lo\\ess\"}\n"
                                         "hyperparameters:\n  v: {type: categorical, vals: [\"a\\nb\", "
                                         "\"\\e]0;owned\\a\", \"\\e[2J\", \"\\x9b31m\", \"x\\x7f\", plain]}\n";
  spit(dir.path / "experiment.yaml", experiment);
  const std::vector<std::string> shown{"a\\nb", "\\x1b]0;owned\\x07", "\\x1b[2J", "\\u009b31m", "x\\x7f", "plain"};

  auto plan = run_dlx({"plan", (dir.path / "experiment.yaml").string()});
  REQUIRE(plan.status == 0);
  CHECK_FALSE(has_terminal_controls(plan.out));
  CHECK(count_lines(plan.out) - count_lines(plan.out, "#") == shown.size());
  for (std::size_t i = 0; i < shown.size(); ++i) CHECK_THAT(row_of(plan.out, static_cast<int>(i)), Catch::EndsWith(shown[i]));
  CHECK_THAT(plan.out, Catch::Contains("metric lo\\x1bss"));

  // --json stays exact JSON: the values as they are.
  auto json = run_dlx({"plan", "--json", (dir.path / "experiment.yaml").string()});
  REQUIRE(json.status == 0);
  const auto trials = nlohmann::json::parse(json.out).at("trials");
  REQUIRE(trials.size() == shown.size());
  CHECK(trials[0]["hparams"]["v"] == "a\nb");
  CHECK(trials[1]["hparams"]["v"] == "\x1b]0;owned\x07");
  CHECK(trials[3]["hparams"]["v"] == "\xc2\x9b" "31m");

  // dlx status on the experiment directory: the planned values, and a failed trial's stop_reason
  // (from trial.h5, where any bytes may be, invalid UTF-8 included), escaped.
  dlx::record::TrialRecord trial;
  trial.experiment = "hostile";
  trial.trial_id = 1;
  trial.state = "failed";
  trial.stop_reason = "failed: \x1b]0;owned\x07\nline 2 \xff\xfe";
  fs::create_directories(dir.path / "trials" / "1");
  dlx::record::save_trial_record(trial, dir.path / "trials" / "1" / "trial.h5");
  auto status = run_dlx({"status", dir.path.string()});
  REQUIRE(status.status == 0);
  CHECK_FALSE(has_terminal_controls(status.out));
  CHECK(count_lines(status.out) - count_lines(status.out, "#") == shown.size());
  CHECK_THAT(status.out, Catch::Contains("# trial 1 failed: \\x1b]0;owned\\x07\\nline 2 \\xff\\xfe\n"));
  for (std::size_t i = 0; i < shown.size(); ++i) CHECK_THAT(row_of(status.out, static_cast<int>(i)), Catch::Contains(shown[i]));
  auto status_json = run_dlx({"status", "--json", dir.path.string()});
  REQUIRE(status_json.status == 0);
  CHECK(nlohmann::json::parse(status_json.out).at("trials")[0]["hparams"]["v"] == "a\nb");
  // Bytes that are not UTF-8 cannot be JSON: U+FFFD stands for each (nlohmann's dump threw).
  CHECK(nlohmann::json::parse(status_json.out).at("trials")[1]["stop_reason"] ==
        "failed: \x1b]0;owned\x07\nline 2 \xef\xbf\xbd\xef\xbf\xbd");
}

TEST_CASE("dlx replay and dlx status on crafted journals: file, offset and what is wrong", "[cli][hostile]") {
  TempDir dir;
  spit(dir.path / "experiment.yaml", kHead + "searcher: {name: grid, metric: loss}\n"
                                             "hyperparameters:\n  x: {type: categorical, vals: [a, b]}\n");
  const auto journal = dir.path / "journal";
  const std::string work = R"({"kind":"train","trial":0,"hparams":[["x","a"]],"start_length":0,)"
                           R"("checkpoint_trial":null,"target_length":0,"reason":"r"})";
  struct Row {
    std::string what, bytes, message;
  };
  const std::vector<Row> rows{
      {"bad JSON", record_of("{\"id\": \"work/0\", \"type\": wor"),
       "record at offset 0 is not a journal event (a JSON object with a string \"id\", nested at most 64 levels)"},
      {"wrong type", record_of(R"({"id":"work/0","type":"work","ticket":"zero","work":)" + work + "}"),
       "journal record at offset 0 (work/0): event: field \"ticket\" must be an integer, found a string"},
      {"missing field", record_of(R"({"id":"work/0","type":"work","ticket":0,"work":{"kind":"train","trial":0}})"),
       "journal record at offset 0 (work/0): work: field \"hparams\" is missing"},
      {"huge number", record_of(R"({"id":"work/0","type":"work","ticket":99999999999999999999,"work":)" + work + "}"),
       "journal record at offset 0 (work/0): event: field \"ticket\": 1e+20 is not an integer from -2147483648 to "
       "2147483647"},
      {"8 MiB of headers", [] {
         std::string bytes;
         for (std::size_t i = 0; i < (8u << 20) / 12; ++i) bytes += "DLXJ" + u32(1u << 20) + u32(0);
         return bytes;
       }(),
       "invalid record at offset 0 (checksum mismatch) followed by more record headers than a torn write leaves "
       "(damaged or crafted bytes)"},
  };
  for (const auto& row : rows) {
    INFO(row.what);
    spit(journal, row.bytes);
    const auto replay = run_dlx({"replay", dir.path.string()});
    CHECK(replay.status == 1);
    CHECK_THAT(replay.err, Catch::StartsWith("dlx replay: " + journal.string() + ": " + row.message));
    CHECK(replay.err.find("json.exception") == std::string::npos);
    const auto status = run_dlx({"status", dir.path.string()});
    CHECK(status.status == 0);  // the table still comes, from the snapshot and trial files
    CHECK_THAT(status.err, Catch::Contains(journal.string()) && Catch::Contains(row.message));
    CHECK(status.err.find("json.exception") == std::string::npos);
  }
}

TEST_CASE("dlx: out of memory is a dlx message, not std::bad_alloc", "[cli][hostile]") {
  TempDir dir;
  std::string many = kHead + "searcher: {name: grid, metric: m, max_trials: 1000000}\nhyperparameters:\n"
                             "  x: {type: double, minval: 0, maxval: 1, count: 1000000}\n";
  for (int i = 0; i < 200; ++i) many += fmt::format("  h{}: \"{}\"\n", i, std::string(100, 'v'));
  spit(dir.path / "big.yaml", many);
  // A million trials of 201 values each, far over 1 GiB of address space.
  const auto result = run_dlx({"plan", (dir.path / "big.yaml").string()}, "ulimit -v 1048576");
  CHECK(result.status == 1);
  CHECK_THAT(result.err, Catch::StartsWith("dlx plan: out of memory (a file it read may be far larger than it "
                                           "should be, or crafted"));
  CHECK(result.err.find("bad_alloc") == std::string::npos);
}

TEST_CASE("dlx status, report and export on a crafted 1 MiB metrics log stay under 512 MiB", "[cli][hostile]") {
  // Issue 31, finding 4: 4,096 names, a row of each, then empty rows (valid records, 26 bytes
  // each). As NaN-padded columns this took ~1.6 GB in each command; under a 512 MiB address
  // space it must work as for any log: the trial's row, a page, the events.
  TempDir dir;
  spit(dir.path / "experiment.yaml", kHead + "searcher: {name: single, metric: metric-7, max_length: 10}\n"
                                             "hyperparameters: {}\n");
  const auto trial = dir.path / "trials" / "0";
  fs::create_directories(trial);
  dlx::record::TrialRecord record;
  record.experiment = "hostile";
  save_trial_record(record, trial / dlx::record::kTrialFileName);  // names metrics.1.log
  const auto log = dlx::record::testing::names_then_empty_rows(4096, std::size_t{1} << 20);
  spit(trial / "metrics.1.log", std::string(reinterpret_cast<const char*>(log.data()), log.size()));
  const std::string cap = "ulimit -v 524288";
  const auto status = run_dlx({"status", "--json", dir.path.string()}, cap);
  INFO(status.err);
  CHECK(status.status == 0);
  CHECK(status.err.find("out of memory") == std::string::npos);
  const auto rows = nlohmann::json::parse(status.out).at("trials");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].at("state") == "running");
  CHECK_FALSE(rows[0].contains("problem"));  // read, not refused
  const auto report = run_dlx({"report", dir.path.string(), "-o", (dir.path / "report.html").string()}, cap);
  INFO(report.err);
  CHECK(report.status == 0);
  CHECK(report.err.find("out of memory") == std::string::npos);
  CHECK(fs::file_size(dir.path / "report.html") > 0);
  TempDir out;
  const auto exported = run_dlx({"export", "tensorboard", dir.path.string(), (out.path / "tb").string()}, cap);
  INFO(exported.err);
  CHECK(exported.status == 0);
  CHECK(exported.err.find("out of memory") == std::string::npos);
  CHECK_THAT(exported.out, Catch::Contains("wrote 1 runs"));
}
