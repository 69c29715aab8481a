// SPDX-License-Identifier: Apache-2.0
// `dlx status` and `dlx ckpt ls` start from journal.snapshot and replay only the journal's tail
// (searcher::catch_up), as read-only users: the real `dlx` binary on a real experiment directory
// (experiment.yaml, a journal of a simulated ASHA run, a snapshot of its first 60%). Shown here:
// they read the snapshot (damage in the journal prefix it covers, where a full replay stops, does
// not change their output); their output is byte for byte the same with the snapshot, without it,
// and with a corrupt one (then a warning on stderr says it was ignored); and, when the test runs
// as root, they run as `nobody` on a directory nobody can write (so no exclusive lock, no snapshot
// written) and leave every file as it was. A journal this dlx's searcher no longer reproduces (an
// older dlx's) is still shown whole by dlx status and dlx replay, with the record that differs
// named, and dlx ckpt gc refuses it.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "dlx/record/trial_record.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/searcher/journal_snapshot.hpp"
#include "dlx/searcher/search_state.hpp"
#include "recording_method.hpp"
#include "run_program.hpp"
#include "searcher_temp_dir.hpp"
#include "simulated_runner.hpp"

using namespace dlx;
namespace fs = std::filesystem;
using dlx::testing::slurp;
using dlx::testing::spit;
using dlx::testing::TempDir;

namespace {

const std::string kExperiment =
    "name: status-snapshot\nentrypoint: [unused]\nseed: 7\n"
    "hyperparameters:\n  x: {type: double, minval: 0, maxval: 1}\n  y: {type: double, minval: 0, maxval: 1}\n"
    "searcher: {name: async_halving, metric: loss, max_trials: 40, divisor: 2, max_rungs: 3,\n"
    "           max_length: {batches: 32}, stop_once: false}\n";

using Output = dlx::testing::ProgramOutput;

// The dlx binary as nobody may run it: a copy in a directory of its own, since the build tree may
// sit where nobody cannot reach it (a checkout under /root, mode 0700). dlx's RUNPATH names only
// system directories, so the copy runs as the original does.
const std::string& dlx_for_nobody() {
  static TempDir bin;
  static const std::string path = [] {
    const auto copy = bin.path / "dlx";
    fs::copy_file(DLX_CLI_PATH, copy, fs::copy_options::overwrite_existing);
    fs::permissions(copy, fs::perms(0755));
    fs::permissions(bin.path, fs::perms(0755));
    return copy.string();
  }();
  return path;
}

// Runs the dlx binary with `args`; as the user nobody when `as_nobody` (setpriv, root only).
Output run_dlx(const std::vector<std::string>& args, bool as_nobody) {
  TempDir capture;
  std::vector<std::string> argv;
  if (as_nobody) argv = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                         dlx_for_nobody()};
  else argv = {DLX_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return dlx::testing::run_program(argv, capture.path);
}

// Every file in `dir` with its bytes; experiment.h5 left out unless `all` (dlx status run by the
// directory's owner refreshes it: the test can check that only as root, running it as nobody).
std::map<std::string, std::string> contents(const fs::path& dir, bool all) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (all || entry.path().filename() != "experiment.h5") out[entry.path().filename().string()] = slurp(entry.path());
  }
  return out;
}

constexpr const char* kIgnored = "warning: ignoring the journal snapshot";

// An experiment directory: experiment.yaml, the journal of a simulated run, journal.snapshot of
// its first 60% (as a trial's coordinator would have left it).
void make_experiment(const fs::path& dir) {
  spit(dir / "experiment.yaml", kExperiment);
  const auto experiment = config::load_snapshot(dir);
  dlx::testing::RecordingMethod method(searcher::make_method(experiment));
  simulation::SimulationOptions options;
  options.workers = 5;
  options.tickets = searcher::ticket_count(experiment);
  options.curve = simulation::synthetic_curve(5, 0.1, 64);
  REQUIRE(simulation::simulate(method, options).violations.empty());
  std::string bytes;
  searcher::SearchState state(experiment);
  std::optional<searcher::SnapshotCoverage> coverage;
  for (std::size_t i = 0; i < method.events.size(); ++i) {
    const auto record = searcher::encode_journal_record(method.events[i]);
    const auto stamp = *searcher::stamp_journal_record(record, 0, bytes.size());
    state.apply({bytes.size(), method.events[i]});
    bytes += record;
    if (i + 1 == method.events.size() * 6 / 10) coverage = searcher::SnapshotCoverage{stamp.end(), i + 1, stamp};
  }
  spit(dir / searcher::kJournalFileName, bytes);
  REQUIRE(coverage);
  // The state as of the coverage: replayed again up to it.
  searcher::SearchState partial(experiment);
  for (const auto& record : searcher::Journal(dir / searcher::kJournalFileName).read().records) {
    if (record.offset < coverage->journal_end) partial.apply(record);
  }
  searcher::write_journal_snapshot(searcher::journal_snapshot_path(dir / searcher::kJournalFileName), partial,
                                   *coverage);
}

}  // namespace

TEST_CASE("dlx status and dlx ckpt ls: from journal.snapshot and the tail, read-only, the same output with and "
          "without it", "[journal][snapshot][cli]") {
  TempDir dir;
  make_experiment(dir.path);
  const auto snapshot = dir.path / searcher::kJournalSnapshotFileName;
  const auto good_snapshot = slurp(snapshot);
  // As root: everything is read as nobody, from a directory and files nobody may write.
  const bool as_nobody = ::geteuid() == 0;
  const auto read_only = [&] {
    if (!as_nobody) return;
    for (const auto& entry : fs::directory_iterator(dir.path)) fs::permissions(entry.path(), fs::perms(0444));
    fs::permissions(dir.path, fs::perms(0555));
  };
  const auto writable = [&] {
    fs::permissions(dir.path, fs::perms(0755));
    for (const auto& entry : fs::directory_iterator(dir.path)) fs::permissions(entry.path(), fs::perms(0644));
  };
  if (!as_nobody) WARN("not root: the commands run as this user, not as an unprivileged one");

  const std::vector<std::vector<std::string>> commands = {{"status", dir.path.string()},
                                                          {"status", "--json", dir.path.string()},
                                                          {"ckpt", "ls", dir.path.string()}};
  const auto run_all = [&] {
    read_only();
    const auto before = contents(dir.path, as_nobody);
    std::vector<Output> outputs;
    for (const auto& args : commands) {
      outputs.push_back(run_dlx(args, as_nobody));
      INFO(fmt::format("dlx {}: {}", fmt::join(args, " "), outputs.back().err));
      REQUIRE(outputs.back().status == 0);
    }
    CHECK(contents(dir.path, as_nobody) == before);  // nothing written, nothing created (no lock file either)
    writable();
    return outputs;
  };

  const auto with_snapshot = run_all();
  for (const auto& output : with_snapshot) CHECK(output.err.find(kIgnored) == std::string::npos);
  CHECK_THAT(with_snapshot[0].out, Catch::Contains("# 40 trials:") && Catch::Contains("searcher"));
  CHECK_THAT(with_snapshot[0].out, Catch::Contains("paused at"));

  SECTION("without the snapshot: the same output") {
    fs::remove(snapshot);
    const auto without = run_all();
    for (std::size_t i = 0; i < commands.size(); ++i) {
      CHECK(without[i].out == with_snapshot[i].out);
      CHECK(without[i].err.find(kIgnored) == std::string::npos);
    }
  }
  SECTION("with a corrupt snapshot: the same output, and a warning that it was ignored") {
    auto bytes = good_snapshot;
    bytes[bytes.size() - 10] = static_cast<char>(bytes[bytes.size() - 10] ^ 0x20);
    spit(snapshot, bytes);
    const auto corrupt = run_all();
    for (std::size_t i = 0; i < commands.size(); ++i) {
      CHECK(corrupt[i].out == with_snapshot[i].out);
      const auto tool = commands[i][0] == "status" ? "dlx status" : "dlx ckpt";
      CHECK_THAT(corrupt[i].err,
                 Catch::Contains(fmt::format("{}: warning: ignoring the journal snapshot {}", tool, snapshot.string())) &&
                     Catch::Contains("body checksum mismatch (corrupt)") &&
                     Catch::Contains("replaying the whole journal"));
    }
  }
  SECTION("they read the snapshot: damage in the prefix it covers, where a full replay stops, changes nothing") {
    // A flipped byte in the second record's payload: a full replay keeps only the first record.
    auto journal = slurp(dir.journal());
    const auto second = searcher::scan_journal(journal).records.at(1).offset;
    journal[second + 20] = static_cast<char>(journal[second + 20] ^ 0x01);
    spit(dir.journal(), journal);
    const auto damaged = run_all();
    CHECK(damaged[0].out == with_snapshot[0].out);
    CHECK(damaged[1].out == with_snapshot[1].out);
    // Without the snapshot the damage shows: the test would notice a tool replaying everything.
    fs::remove(snapshot);
    read_only();
    const auto full = run_dlx(commands[0], as_nobody);
    writable();
    CHECK(full.out != with_snapshot[0].out);
  }
}

TEST_CASE("a journal this searcher no longer reproduces (an older dlx's): dlx status and dlx replay show it whole "
          "with a warning naming the record, and dlx ckpt gc refuses", "[journal][cli]") {
  TempDir dir;
  make_experiment(dir.path);
  auto records = searcher::Journal(dir.journal()).read().records;
  // The last validation decision, past the snapshot's 60%, reworded as no version of this
  // searcher words it: every answer before it replays, this one does not.
  std::size_t forged = records.size();
  for (std::size_t i = records.size(); i-- > 0 && forged == records.size();) {
    if (records[i].event.value("type", std::string()) == "validation") forged = i;
  }
  REQUIRE(forged < records.size());
  REQUIRE(forged >= records.size() * 6 / 10);
  records[forged].event["decision"]["reason"] = "an older dlx's reason";
  std::string bytes;
  std::uint64_t forged_offset = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (i == forged) forged_offset = bytes.size();
    bytes += searcher::encode_journal_record(records[i].event);
  }
  spit(dir.journal(), bytes);
  const auto at_record = fmt::format("journal record at offset {}", forged_offset);

  const auto status = run_dlx({"status", dir.path.string()}, false);
  CHECK(status.status == 0);
  CHECK_THAT(status.out, Catch::Contains("# 40 trials:"));
  CHECK_THAT(status.err, Catch::Contains("dlx status: warning: " + at_record) &&
                             Catch::Contains("written by a different searcher") &&
                             Catch::Contains("the table shows the journal's recorded decisions from there on"));
  CHECK(status.err.find(kIgnored) == std::string::npos);  // the snapshot before it still serves

  // Every searcher event is listed, the reworded one as recorded; the exit status says it diverged.
  const auto replay = run_dlx({"replay", "--json", dir.path.string()}, false);
  CHECK(replay.status == 1);
  const auto json = nlohmann::json::parse(replay.out);
  CHECK(json["decisions"].size() == records.size());
  CHECK(json["decisions"][forged]["reason"] == "an older dlx's reason");
  CHECK_THAT(json["mismatch"].get<std::string>(), Catch::Contains(at_record));
  CHECK_THAT(replay.err, Catch::Contains("dlx replay: " + at_record) &&
                             Catch::Contains("The decisions from that record on are the journal's as recorded"));

  // Retention must not act on references from a searcher state it could not rebuild: gc refuses,
  // ls lists with nothing marked as referenced and says why.
  const auto gc = run_dlx({"ckpt", "gc", "--dry-run", dir.path.string()}, false);
  CHECK(gc.status != 0);
  CHECK_THAT(gc.err, Catch::Contains(at_record) && Catch::Contains("written by a different searcher"));
  const auto ls = run_dlx({"ckpt", "ls", dir.path.string()}, false);
  CHECK(ls.status == 0);
  CHECK_THAT(ls.err, Catch::Contains("dlx ckpt ls: warning: " + at_record) &&
                         Catch::Contains("checkpoints the searcher references are not marked"));
}

TEST_CASE("dlx status says why a trial failed, and shows no searcher column without a searcher length",
          "[cli]") {
  TempDir dir;
  spit(dir.path / "experiment.yaml",
       "name: status-failed\nentrypoint: [unused]\nseed: 7\n"
       "hyperparameters:\n  x: {type: int, minval: 1, maxval: 2, count: 2}\n"
       "searcher: {name: grid, metric: loss}\n");
  const auto experiment = config::load_snapshot(dir.path);
  {
    // Both tickets took their work (no max_length: train to the trainer's own length).
    searcher::Coordinator coordinator(experiment, dir.path / searcher::kJournalFileName);
    REQUIRE(coordinator.request_work(0).kind == searcher::Work::Kind::train);
    REQUIRE(coordinator.request_work(1).kind == searcher::Work::Kind::train);
  }
  const auto record = [&](int id, const std::string& state, const std::string& reason) {
    record::TrialRecord trial;
    trial.experiment = "status-failed";
    trial.trial_id = id;
    trial.state = state;
    trial.stop_reason = reason;
    trial.validation.append(10, {{"loss", 0.5}});
    fs::create_directories(dir.path / "trials" / std::to_string(id));
    record::save_trial_record(trial, dir.path / "trials" / std::to_string(id) / "trial.h5");
  };
  record(0, "completed", "");
  record(1, "failed", "failed: crash 3 is past max_restarts 2; last error: exit 127");

  const auto table = run_dlx({"status", dir.path.string()}, false);
  INFO(table.out << table.err);
  REQUIRE(table.status == 0);
  CHECK_THAT(table.out, Catch::Contains("# trial 1 failed: crash 3 is past max_restarts 2; last error: exit 127\n"));
  CHECK_THAT(table.out, !Catch::Contains("to 0"));
  // No searcher column at all: the searcher has nothing to say of any trial.
  CHECK_THAT(table.out, Catch::Contains("# trial  state      x  last loss  best loss\n"
                                        "0        completed  1  0.5        0.5\n"));
  const auto json = nlohmann::json::parse(run_dlx({"status", dir.path.string(), "--json"}, false).out);
  CHECK(json["trials"][1]["stop_reason"] == "failed: crash 3 is past max_restarts 2; last error: exit 127");
  CHECK_FALSE(json["trials"][0].contains("searcher"));
}

TEST_CASE("dlx status says why a trial that reported its metric in training only has empty columns", "[cli]") {
  TempDir dir;
  spit(dir.path / "experiment.yaml",
       "name: status-training\nentrypoint: [unused]\nseed: 7\n"
       "hyperparameters:\n  x: {type: int, minval: 1, maxval: 3, count: 3}\n"
       "searcher: {name: grid, metric: loss}\n");
  const auto experiment = config::load_snapshot(dir.path);
  {
    searcher::Coordinator coordinator(experiment, dir.path / searcher::kJournalFileName);
    for (int ticket = 0; ticket < 3; ++ticket) REQUIRE(coordinator.request_work(ticket).kind == searcher::Work::Kind::train);
  }
  const auto record = [&](int id, const std::string& state, bool validated) {
    record::TrialRecord trial;
    trial.experiment = "status-training";
    trial.trial_id = id;
    trial.state = state;
    trial.training.append(10, {{"loss", 0.25}});
    if (validated) trial.validation.append(10, {{"loss", 0.5}});
    fs::create_directories(dir.path / "trials" / std::to_string(id));
    record::save_trial_record(trial, dir.path / "trials" / std::to_string(id) / "trial.h5");
  };
  record(0, "completed", false);
  record(1, "completed", false);
  record(2, "completed", true);
  const auto table = run_dlx({"status", dir.path.string()}, false);
  INFO(table.out << table.err);
  REQUIRE(table.status == 0);
  CHECK_THAT(table.out, Catch::Contains("0        completed  1  -          -\n"));
  CHECK_THAT(table.out, Catch::Contains(
      "# trials 0-1 reported loss in training only: the last and best columns, and the searcher, take validation "
      "values (give dlx.torch.Loop a validate=, or report them with trial.report_validation)\n"));
  CHECK_THAT(table.out, !Catch::Contains("# trials 0-2 reported"));
}

TEST_CASE("dlx status: no argument, a path that is not there and another user's experiment each say what to do",
          "[cli]") {
  const auto missing = run_dlx({"status"}, false);
  CHECK(missing.status == 2);
  CHECK_THAT(missing.err, Catch::StartsWith("dlx: missing argument: job id or experiment directory\n"));
  // Not Boost's "the option '--experiment' is required": an option the user never typed.
  CHECK_THAT(missing.err.substr(0, missing.err.find('\n')), !Catch::Contains("--experiment"));

  TempDir dir;
  const auto absent = (dir.path / "no-such-experiment").string();
  const auto gone = run_dlx({"status", absent}, false);
  CHECK(gone.status == 1);
  CHECK(gone.err == "dlx status: " + absent +
                        ": no such directory (give an experiment directory, <storage_root>/<user>/<name>, "
                        "or a Slurm job id)\n");

  // Another user's experiment: <storage_root>/<user> is 0750, so nobody cannot even stat inside it.
  if (::geteuid() != 0) {
    WARN("not root: the unreadable-directory case needs dlx run as another user");
    return;
  }
  const auto owner = dir.path / "alice";
  const auto experiment = owner / "exp";
  fs::create_directories(experiment);
  fs::permissions(dir.path, fs::perms(0755));
  fs::permissions(owner, fs::perms(0750));
  const auto denied = run_dlx({"status", experiment.string()}, true);
  CHECK(denied.status == 1);
  CHECK_THAT(denied.err, Catch::StartsWith("dlx status: cannot read " + experiment.string() + ": ") &&
                             Catch::Contains("readable by its owner's group only: give one of your own, or ask "
                                             "its owner"));
}
