// `dlx status` and `dlx ckpt ls` start from journal.snapshot and replay only the journal's tail
// (searcher::catch_up), as read-only users: the real `dlx` binary on a real experiment directory
// (experiment.yaml, a journal of a simulated ASHA run, a snapshot of its first 60%). Shown here:
// they read the snapshot (damage in the journal prefix it covers, where a full replay stops, does
// not change their output); their output is byte for byte the same with the snapshot, without it,
// and with a corrupt one (then a warning on stderr says it was ignored); and, when the test runs
// as root, they run as `nobody` on a directory nobody can write (so no exclusive lock, no snapshot
// written) and leave every file as it was.
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

#include "dlx/config/parse.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/searcher/journal_snapshot.hpp"
#include "dlx/searcher/search_state.hpp"
#include "recording_method.hpp"
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

struct Output {
  int status = -1;
  std::string out, err;
};

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
  const auto out_path = capture.path / "stdout", err_path = capture.path / "stderr";
  std::vector<std::string> argv;
  if (as_nobody) argv = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                         dlx_for_nobody()};
  else argv = {DLX_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  const pid_t child = ::fork();
  if (child == 0) {
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || err < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0) ::_exit(126);
    std::vector<char*> raw;
    for (auto& arg : argv) raw.push_back(arg.data());
    raw.push_back(nullptr);
    ::execv(raw[0], raw.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out_path), slurp(err_path)};
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
