// SPDX-License-Identifier: Apache-2.0
// The journal snapshot (journal_snapshot.hpp): for every method, the state loaded from a snapshot
// plus the journal's tail equals the state of a full replay (the whole state, byte for byte, and
// the method's next answers), at several snapshot points; snapshots that are corrupt, stale, of
// another journal or of another experiment are ignored with a warning and the state is still
// right; a writer killed while writing one never breaks a reader; the coordinator writes one when
// its policy says so and a failure to write it never fails the event; it writes it with the
// journal unlocked (another process appends meanwhile) under the snapshot lock; a snapshot never
// replaces one that covers more, and concurrent writers leave a valid snapshot that only moves
// forward. Real files in a temp dir, real processes (fork).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "dlx/common/crc32c.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/searcher/journal_snapshot.hpp"
#include "dlx/searcher/search_state.hpp"
#include "searcher_temp_dir.hpp"
#include "recording_method.hpp"
#include "simulated_runner.hpp"

using namespace dlx;
using searcher::SearchState;
using searcher::SnapshotCoverage;
namespace fs = std::filesystem;

namespace {

using dlx::testing::TempDir;
using dlx::testing::slurp;
using dlx::testing::spit;

config::Experiment experiment_of(const std::string& searcher, std::uint64_t seed = 7) {
  // x and y in [0, 1], as the simulated learning curve wants them, in the form each searcher takes.
  std::string space = "  x: {type: double, minval: 0, maxval: 1}\n  y: {type: double, minval: 0, maxval: 1}\n";
  if (searcher.starts_with("name: single")) space = "  x: 0.3\n  y: 0.6\n";
  if (searcher.starts_with("name: grid")) {
    space = "  x: {type: double, minval: 0, maxval: 1, count: 3}\n  y: {type: double, minval: 0, maxval: 1, count: 2}\n";
  }
  return config::parse_experiment(
      fmt::format("name: s\nentrypoint: x\nseed: {}\nsearcher: {{{}}}\nhyperparameters:\n{}", seed, searcher, space),
      "s.yaml");
}

// Every method the issue names, each with a run long enough to have a tail worth the name.
const std::map<std::string, std::string> kMethods = {
    {"single", "name: single, metric: loss, max_length: {batches: 16}"},
    {"grid", "name: grid, metric: loss, max_length: {batches: 16}"},
    {"random", "name: random, metric: loss, max_trials: 24, max_length: {batches: 16}"},
    {"asha stopping", "name: async_halving, metric: loss, max_trials: 40, divisor: 2, max_rungs: 3, "
                      "max_length: {batches: 32}, stop_once: true"},
    {"asha promotion", "name: async_halving, metric: loss, max_trials: 40, divisor: 2, max_rungs: 3, "
                       "max_length: {batches: 32}, stop_once: false"},
    {"adaptive_asha", "name: adaptive_asha, metric: loss, max_trials: 40, divisor: 2, max_rungs: 3, "
                      "max_length: {batches: 32}, mode: standard, stop_once: false"},
    {"pbt", "name: pbt, metric: loss, population_size: 6, num_rounds: 4, length_per_round: {batches: 10}, "
            "replace_function: {truncate_fraction: 0.34}"},
    {"tpe inside asha", "name: async_halving, metric: loss, max_trials: 40, divisor: 2, max_rungs: 3, "
                        "max_length: {batches: 32}, sampler: tpe, tpe: {startup_trials: 6}"},
};

using dlx::testing::RecordingMethod;

// A run of `experiment` as journal events, with a failure, a duplicate of an early event and an
// event of a type the searcher skips, so that the tail after a snapshot has those too.
std::vector<nlohmann::json> journal_events(const config::Experiment& experiment, std::uint64_t curve_seed = 5) {
  RecordingMethod method(searcher::make_method(experiment));
  simulation::SimulationOptions options;
  options.workers = 5;
  options.tickets = searcher::ticket_count(experiment);
  options.curve = simulation::synthetic_curve(curve_seed, 0.1, 64);
  options.fails = [](int trial, std::int64_t) { return trial == 3; };
  const auto result = simulation::simulate(method, options);
  REQUIRE(result.violations.empty());
  auto events = method.events;
  REQUIRE(events.size() >= 3);
  events.insert(events.begin() + static_cast<long>(events.size() / 2),
                nlohmann::json{{"id", "note/1"}, {"type", "note"}, {"text", "a tool's record"}});
  events.push_back(events.front());  // posted twice (a writer killed before its acknowledgement)
  return events;
}

// Writes `events` as the journal at `path`; returns each record's stamp.
std::vector<searcher::RecordStamp> write_journal(const fs::path& path, const std::vector<nlohmann::json>& events) {
  std::string bytes;
  std::vector<searcher::RecordStamp> stamps;
  for (const auto& event : events) {
    const auto record = searcher::encode_journal_record(event);
    stamps.push_back(*searcher::stamp_journal_record(record, 0, bytes.size()));
    bytes += record;
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  return stamps;
}

// The state after the first `count` records, and what a snapshot of it covers.
std::pair<SearchState, SnapshotCoverage> state_after(const config::Experiment& experiment, const fs::path& journal,
                                                     const std::vector<searcher::RecordStamp>& stamps,
                                                     std::size_t count) {
  const auto scan = searcher::Journal(journal).read();
  SearchState state(experiment);
  for (const auto& record : scan.records) {
    if (record.offset < stamps[count - 1].end()) state.apply(record);
  }
  return {std::move(state), SnapshotCoverage{stamps[count - 1].end(), count, stamps[count - 1]}};
}

SearchState full_replay(const config::Experiment& experiment, const fs::path& journal) {
  return searcher::replay_journal(experiment, searcher::Journal(journal).read());
}

// Equal states: the same bytes (every table and the method's snapshot), the same JSON, and the
// same next answer from the method.
void check_same_state(SearchState& got, SearchState& want) {
  CHECK(got.to_json() == want.to_json());
  CHECK(got.encode() == want.encode());
  const int next = searcher::ticket_count(want.experiment());
  CHECK(searcher::to_json(got.method().on_work_requested(next)) ==
        searcher::to_json(want.method().on_work_requested(next)));
}

// A coordinator's catch-up, with its warnings.
struct Loaded {
  std::vector<std::string> warnings;
  std::unique_ptr<searcher::Coordinator> coordinator;
};

Loaded load_with_coordinator(const config::Experiment& experiment, const fs::path& journal) {
  Loaded out;
  out.coordinator = std::make_unique<searcher::Coordinator>(experiment, journal);
  out.coordinator->on_warning([&warnings = out.warnings](const std::string& m) { warnings.push_back(m); });
  out.coordinator->refresh();
  return out;
}

}  // namespace

TEST_CASE("journal snapshot: snapshot + tail equals a full replay for every method, at several points",
          "[journal][snapshot]") {
  for (const auto& [name, searcher_yaml] : kMethods) {
    SECTION(name) {
      TempDir dir;
      const auto experiment = experiment_of(searcher_yaml);
      const auto events = journal_events(experiment);
      const auto stamps = write_journal(dir.journal(), events);
      auto full = full_replay(experiment, dir.journal());
      REQUIRE(full.decisions().size() + 2 == events.size());  // less the note and the duplicate
      const auto snapshot = searcher::journal_snapshot_path(dir.journal());
      for (const std::size_t count : {std::size_t{1}, events.size() / 3, events.size() / 2 + 1,
                                      events.size() - 1, events.size()}) {
        INFO(name << ": a snapshot after " << count << " of " << events.size() << " records");
        auto [partial, coverage] = state_after(experiment, dir.journal(), stamps, count);
        searcher::write_journal_snapshot(snapshot, partial, coverage);
        REQUIRE(searcher::peek_journal_snapshot(snapshot) == coverage);

        SearchState loaded(experiment);
        const auto result = searcher::catch_up(loaded, searcher::Journal(dir.journal()), snapshot);
        CHECK(result.ignored.empty());
        REQUIRE(result.snapshot == coverage);
        CHECK(result.journal_end == fs::file_size(dir.journal()));
        CHECK(result.records == events.size());
        CHECK(result.last == stamps.back());
        check_same_state(loaded, full);
        full = full_replay(experiment, dir.journal());  // check_same_state asked its method

        auto through_coordinator = load_with_coordinator(experiment, dir.journal());
        CHECK(through_coordinator.warnings.empty());
        CHECK(through_coordinator.coordinator->state().to_json() == full.to_json());
        CHECK(through_coordinator.coordinator->state().encode() == full.encode());
      }
    }
  }
}

TEST_CASE("journal snapshot: corrupt, truncated, stale, foreign or unknown-version snapshots are ignored with a "
          "warning, and the state is still right", "[journal][snapshot]") {
  TempDir dir;
  const auto experiment = experiment_of(kMethods.at("asha promotion"));
  const auto events = journal_events(experiment);
  const auto stamps = write_journal(dir.journal(), events);
  const auto snapshot = searcher::journal_snapshot_path(dir.journal());
  const auto good = [&](std::size_t count) {
    auto [state, coverage] = state_after(experiment, dir.journal(), stamps, count);
    return searcher::encode_journal_snapshot(state, coverage);
  };
  const std::string valid = good(events.size() / 2);

  // Loads through a fresh coordinator; the state must equal a full replay of the journal as it is.
  const auto expect_ignored = [&](const std::string& why) {
    auto loaded = load_with_coordinator(experiment, dir.journal());
    REQUIRE(loaded.warnings.size() == 1);
    CHECK_THAT(loaded.warnings[0], Catch::Contains("ignoring the journal snapshot " + snapshot.string()) &&
                                       Catch::Contains(why) && Catch::Contains("replaying the whole journal"));
    CHECK(loaded.coordinator->state().encode() == full_replay(experiment, dir.journal()).encode());
  };

  SECTION("a bit flipped in the body") {
    auto bytes = valid;
    bytes[bytes.size() - 100] = static_cast<char>(bytes[bytes.size() - 100] ^ 0x10);
    spit(snapshot, bytes);
    expect_ignored("body checksum mismatch (corrupt)");
  }
  SECTION("a bit flipped in the header") {
    auto bytes = valid;
    bytes[17] = static_cast<char>(bytes[17] ^ 0x01);  // the record count
    spit(snapshot, bytes);
    expect_ignored("header checksum mismatch (corrupt)");
    CHECK_FALSE(searcher::peek_journal_snapshot(snapshot));
  }
  SECTION("truncated in the body") {
    spit(snapshot, valid.substr(0, valid.size() - 1));
    expect_ignored(fmt::format("truncated: a {}-byte body, the header says {}", valid.size() - 57, valid.size() - 56));
  }
  SECTION("truncated in the header") {
    spit(snapshot, valid.substr(0, 20));
    expect_ignored("truncated: 20 bytes, shorter than its 56-byte header");
  }
  SECTION("empty") {
    spit(snapshot, "");
    expect_ignored("truncated: 0 bytes");
  }
  SECTION("not a snapshot at all") {
    spit(snapshot, std::string(100, 'x'));
    expect_ignored("not a journal snapshot (bad magic)");
  }
  SECTION("a format version this dlx does not read (version 1: before Determined's PBT numbering)") {
    auto bytes = valid;
    bytes[4] = 1;
    spit(snapshot, bytes);
    expect_ignored("format version 1, this dlx reads version 2");
  }
  SECTION("stale: torn-tail recovery cut the journal below the snapshot's end") {
    spit(snapshot, good(events.size()));
    // The last two records are damaged on disk: the next writer's torn-tail recovery cuts them.
    auto bytes = slurp(dir.journal());
    const auto damaged = stamps[events.size() - 2].offset + 14;
    bytes[damaged] = static_cast<char>(bytes[damaged] ^ 0x40);
    bytes[stamps.back().offset + 14] = static_cast<char>(bytes[stamps.back().offset + 14] ^ 0x40);
    spit(dir.journal(), bytes);
    searcher::Journal(dir.journal()).transact(0, [](const searcher::JournalScan& scan) {
      CHECK(scan.torn_tail);
      return std::vector<nlohmann::json>{};
    });
    REQUIRE(fs::file_size(dir.journal()) == stamps[events.size() - 2].offset);
    expect_ignored(fmt::format("stale: the journal is {} bytes, shorter than the {} it covers",
                               stamps[events.size() - 2].offset, stamps.back().end()));
  }
  SECTION("cut below it and appended to again: the record it names is no longer there") {
    spit(snapshot, good(events.size() / 2));
    auto bytes = slurp(dir.journal());
    bytes.resize(stamps[events.size() / 2 - 2].end());
    spit(dir.journal(), bytes);
    for (int i = 0; i < 30; ++i) searcher::Journal(dir.journal()).append({{"id", fmt::format("note/x{}", i)}});
    REQUIRE(fs::file_size(dir.journal()) > stamps[events.size() / 2 - 1].end());
    expect_ignored(fmt::format("does not match the journal: the record at offset {} is not the one it was taken "
                               "after", stamps[events.size() / 2 - 1].offset));
  }
  SECTION("another journal's snapshot (same experiment.yaml, other events)") {
    TempDir other;
    const auto other_events = journal_events(experiment, 99);  // other metrics, other decisions
    const auto other_stamps = write_journal(other.journal(), other_events);
    auto [state, coverage] = state_after(experiment, other.journal(), other_stamps, other_events.size() / 2);
    REQUIRE(coverage.journal_end <= fs::file_size(dir.journal()));
    REQUIRE(searcher::encode_journal_snapshot(state, coverage) != valid);
    searcher::write_journal_snapshot(snapshot, state, coverage);
    expect_ignored("does not match the journal");
  }
  SECTION("another experiment's snapshot") {
    const auto other = experiment_of(kMethods.at("asha promotion"), 8);  // another seed
    // The same journal prefix, but the header says the state is of another experiment.yaml.
    auto bytes = valid;
    const auto other_crc = searcher::experiment_checksum(other);
    REQUIRE(other_crc != searcher::experiment_checksum(experiment));
    for (int k = 0; k < 4; ++k) bytes[36 + static_cast<std::size_t>(k)] = static_cast<char>((other_crc >> (8 * k)) & 0xFF);
    const auto header_crc = dlx::crc32c(std::string_view(bytes.data(), 52));
    for (int k = 0; k < 4; ++k) bytes[52 + static_cast<std::size_t>(k)] = static_cast<char>((header_crc >> (8 * k)) & 0xFF);
    spit(snapshot, bytes);
    expect_ignored("written for a different experiment.yaml");
  }
  SECTION("a directory where the file should be") {
    fs::create_directory(snapshot);
    expect_ignored("cannot read");
  }
}

TEST_CASE("journal snapshot: writers killed while writing it never break a reader, and the next writer removes "
          "their temporary files", "[journal][snapshot][crash]") {
  TempDir dir;
  const auto experiment = experiment_of(kMethods.at("asha stopping"));
  const auto events = journal_events(experiment);
  const auto stamps = write_journal(dir.journal(), events);
  const auto snapshot = searcher::journal_snapshot_path(dir.journal());
  const auto full = full_replay(experiment, dir.journal()).encode();
  // A temporary a killed writer left, half written.
  const auto leftover = dir.path / ".tmp.journal.snapshot.12345.0.deadbeef";
  spit(leftover, "DLXS half a snapshot");
  std::mt19937 random(7);
  for (int round = 0; round < 6; ++round) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // Writes snapshots at alternating points, as fast as it can, until killed.
      try {
        for (std::size_t i = 0;; ++i) {
          auto [state, coverage] =
              state_after(experiment, dir.journal(), stamps, i % 2 ? events.size() / 3 : events.size() - 2);
          searcher::write_journal_snapshot(snapshot, state, coverage);
        }
      } catch (...) {
        ::_exit(1);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + random() % 60));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    REQUIRE(WIFSIGNALED(status));
    SearchState loaded(experiment);
    const auto result = searcher::catch_up(loaded, searcher::Journal(dir.journal()), snapshot);
    CHECK(result.ignored.empty());
    CHECK(loaded.encode() == full);
  }
  CHECK(fs::exists(leftover) == false);  // the children's first write removed it
  // Whatever the last kill left behind, one more write cleans it up.
  auto [state, coverage] = state_after(experiment, dir.journal(), stamps, events.size());
  spit(leftover, "again");
  searcher::write_journal_snapshot(snapshot, state, coverage);
  for (const auto& entry : fs::directory_iterator(dir.path)) {
    CHECK_FALSE(entry.path().filename().string().starts_with(".tmp."));
  }
}

TEST_CASE("coordinator: writes journal.snapshot when its policy says so, and new processes load it",
          "[journal][snapshot]") {
  TempDir dir;
  const auto experiment = experiment_of("name: random, metric: loss, max_trials: 40, max_length: {batches: 4}");
  const auto snapshot = searcher::journal_snapshot_path(dir.journal());
  std::vector<std::string> warnings;
  searcher::Coordinator writer(experiment, dir.journal());
  writer.on_warning([&](const std::string& m) { warnings.push_back(m); });
  writer.snapshot_policy({.min_records = 10, .fraction = 2});
  for (int ticket = 0; ticket < 9; ++ticket) writer.request_work(ticket);
  CHECK_FALSE(fs::exists(snapshot));  // 9 records: not due
  writer.request_work(9);
  auto on_disk = searcher::peek_journal_snapshot(snapshot);
  REQUIRE(on_disk);
  CHECK(on_disk->records == 10);
  CHECK(on_disk->journal_end == fs::file_size(dir.journal()));
  // Another process's writes count: this one sees the snapshot on disk and does not write one
  // for the same stretch.
  searcher::Coordinator other(experiment, dir.journal());
  other.snapshot_policy({.min_records = 10, .fraction = 2});
  for (int ticket = 10; ticket < 19; ++ticket) other.request_work(ticket);
  CHECK(searcher::peek_journal_snapshot(snapshot)->records == 10);
  writer.request_work(19);  // 20 records: 10 since the one on disk, and 10 >= 10 / 2
  CHECK(searcher::peek_journal_snapshot(snapshot)->records == 20);
  for (int ticket = 20; ticket < 25; ++ticket) writer.report_validation(ticket - 20, 4, 0.5);
  CHECK(warnings.empty());

  auto loaded = load_with_coordinator(experiment, dir.journal());
  CHECK(loaded.warnings.empty());
  CHECK(loaded.coordinator->state().encode() == full_replay(experiment, dir.journal()).encode());
  SearchState fresh(experiment);
  const auto result = searcher::catch_up(fresh, searcher::Journal(dir.journal()), snapshot);
  REQUIRE(result.snapshot);
  CHECK(result.snapshot->records == 20);
  CHECK(result.records == 25);
}

TEST_CASE("coordinator: a snapshot that cannot be written is a warning, and the event is committed",
          "[journal][snapshot]") {
  TempDir dir;
  const auto experiment = experiment_of("name: random, metric: loss, max_trials: 40, max_length: {batches: 4}");
  const auto snapshot = searcher::journal_snapshot_path(dir.journal());
  fs::create_directories(snapshot / "in-the-way");  // rename() cannot replace a non-empty directory
  std::vector<std::string> warnings;
  searcher::Coordinator writer(experiment, dir.journal());
  writer.on_warning([&](const std::string& m) { warnings.push_back(m); });
  writer.snapshot_policy({.min_records = 2, .fraction = 1});
  for (int ticket = 0; ticket < 4; ++ticket) CHECK(writer.request_work(ticket).kind == searcher::Work::Kind::train);
  CHECK(searcher::Journal(dir.journal()).read().records.size() == 4);
  // One warning for the unreadable snapshot at the first question, one per failed write (at 2
  // and 4 records: not at every event).
  REQUIRE(warnings.size() == 3);
  CHECK_THAT(warnings[0], Catch::Contains("ignoring the journal snapshot"));
  CHECK_THAT(warnings[1], Catch::Contains("cannot write the journal snapshot " + snapshot.string()) &&
                              Catch::Contains("the event is committed"));
  CHECK_THAT(warnings[2], Catch::Contains("cannot write the journal snapshot"));
}

namespace {

// Whether this process could take the fcntl lock `type` on `path` right now, without waiting (a
// lock held by another process makes it fail). Takes it and releases it at once.
bool could_lock(const fs::path& path, short type) {
  const int fd = ::open(path.c_str(), type == F_WRLCK ? O_RDWR : O_RDONLY);
  if (fd < 0) return false;
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  const bool got = ::fcntl(fd, F_SETLK, &lock) == 0;
  ::close(fd);  // releases it
  return got;
}

// Runs `body` in a forked child and returns its exit status (0: body returned true).
int in_child(const std::function<bool()>& body) {
  const pid_t child = ::fork();
  if (child == 0) {
    bool ok = false;
    try {
      ok = body();
    } catch (...) {
    }
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST_CASE("coordinator: journal.snapshot is written with the journal unlocked, under the snapshot lock, and "
          "other processes append meanwhile", "[journal][snapshot]") {
  TempDir dir;
  const auto experiment = experiment_of("name: random, metric: loss, max_trials: 40, max_length: {batches: 4}");
  const auto snapshot = searcher::journal_snapshot_path(dir.journal());
  const auto lock_file = searcher::journal_snapshot_lock_path(snapshot);
  CHECK(lock_file == dir.path / "journal.snapshot.lock");
  std::vector<std::string> warnings;
  searcher::Coordinator writer(experiment, dir.journal());
  writer.on_warning([&](const std::string& m) { warnings.push_back(m); });
  writer.snapshot_policy({.min_records = 10, .fraction = 2});
  int writes = 0;
  writer.while_writing_snapshot([&] {
    ++writes;
    // Another process, meanwhile: the journal is not locked (it takes the exclusive lock and
    // appends an event), the snapshot lock is (held by this process).
    const int status = in_child([&] {
      if (!could_lock(dir.journal(), F_WRLCK) || could_lock(lock_file, F_WRLCK)) return false;
      searcher::Journal(dir.journal()).append({{"id", fmt::format("note/during-write-{}", writes)}, {"type", "note"}});
      return true;
    });
    CHECK(status == 0);
  });
  for (int ticket = 0; ticket < 10; ++ticket) writer.request_work(ticket);
  REQUIRE(writes == 1);
  // The snapshot is of the writer's state: its 10 records, not the note appended meanwhile.
  const auto on_disk = searcher::peek_journal_snapshot(snapshot);
  REQUIRE(on_disk);
  CHECK(on_disk->records == 10);
  const auto scan = searcher::Journal(dir.journal()).read();
  REQUIRE(scan.records.size() == 11);
  CHECK(on_disk->journal_end == scan.records.back().offset);
  // The next question applies the note; the snapshot plus the tail equals a full replay.
  writer.request_work(10);
  CHECK(warnings.empty());
  SearchState loaded(experiment);
  const auto result = searcher::catch_up(loaded, searcher::Journal(dir.journal()), snapshot);
  CHECK(result.ignored.empty());
  REQUIRE(result.snapshot == on_disk);
  CHECK(loaded.encode() == full_replay(experiment, dir.journal()).encode());
  CHECK(loaded.encode() == writer.state().encode());
}

TEST_CASE("journal snapshot: a writer never replaces a snapshot that covers more, replaces a stale or foreign one, "
          "and skips while another writer holds the snapshot lock", "[journal][snapshot]") {
  TempDir dir;
  const auto experiment = experiment_of(kMethods.at("asha promotion"));
  const auto events = journal_events(experiment);
  const auto stamps = write_journal(dir.journal(), events);
  const auto snapshot = searcher::journal_snapshot_path(dir.journal());
  const searcher::Journal journal(dir.journal());
  const auto publish = [&](std::size_t count) {
    auto [state, coverage] = state_after(experiment, dir.journal(), stamps, count);
    return searcher::publish_journal_snapshot(journal, snapshot, state, coverage);
  };
  using searcher::SnapshotPublish;
  REQUIRE(publish(events.size() - 2) == SnapshotPublish::written);
  const auto newer = slurp(snapshot);
  CHECK(publish(events.size() / 2) == SnapshotPublish::superseded);  // fewer records: not written
  CHECK(publish(events.size() - 2) == SnapshotPublish::superseded);  // the same: not rewritten
  CHECK(slurp(snapshot) == newer);
  CHECK(publish(events.size()) == SnapshotPublish::written);          // more: replaces it
  CHECK(searcher::peek_journal_snapshot(snapshot)->records == events.size());

  SECTION("one that claims more but is of another journal is replaced") {
    TempDir other;
    auto other_events = journal_events(experiment, 99);
    for (int i = 0; i < 40; ++i) other_events.push_back({{"id", fmt::format("note/pad{}", i)}, {"type", "note"}});
    const auto other_stamps = write_journal(other.journal(), other_events);
    auto [state, coverage] = state_after(experiment, other.journal(), other_stamps, other_events.size());
    REQUIRE(coverage.journal_end > fs::file_size(dir.journal()));
    searcher::write_journal_snapshot(snapshot, state, coverage);
    CHECK(publish(events.size() / 2) == SnapshotPublish::written);
    CHECK(searcher::peek_journal_snapshot(snapshot)->records == events.size() / 2);
  }
  SECTION("one that claims more but whose journal was cut below it is replaced") {
    auto bytes = slurp(dir.journal());
    bytes.resize(stamps[events.size() - 3].end());
    spit(dir.journal(), bytes);
    CHECK(publish(events.size() / 2) == SnapshotPublish::written);
  }
  SECTION("busy: another process holds the snapshot lock") {
    int ready[2], done[2];
    REQUIRE(::pipe(ready) == 0);
    REQUIRE(::pipe(done) == 0);
    const pid_t holder = ::fork();
    if (holder == 0) {
      const int fd = ::open(searcher::journal_snapshot_lock_path(snapshot).c_str(), O_RDWR | O_CREAT, 0640);
      struct flock lock {};
      lock.l_type = F_WRLCK;
      lock.l_whence = SEEK_SET;
      const char ok = fd >= 0 && ::fcntl(fd, F_SETLK, &lock) == 0 ? 1 : 0;
      char byte = 0;
      if (::write(ready[1], &ok, 1) != 1 || ::read(done[0], &byte, 1) < 0) ::_exit(1);
      ::_exit(0);
    }
    char ok = 0;
    REQUIRE(::read(ready[0], &ok, 1) == 1);
    REQUIRE(ok == 1);
    ::unlink(snapshot.c_str());
    CHECK(publish(events.size()) == SnapshotPublish::busy);
    CHECK_FALSE(fs::exists(snapshot));
    const char go = 1;
    REQUIRE(::write(done[1], &go, 1) == 1);
    int status = 0;
    ::waitpid(holder, &status, 0);
    for (int fd : {ready[0], ready[1], done[0], done[1]}) ::close(fd);
    CHECK(publish(events.size()) == SnapshotPublish::written);  // released: written now
  }
}

TEST_CASE("journal snapshot: concurrent writers leave a valid snapshot that only moves forward",
          "[journal][snapshot][crash]") {
  TempDir dir;
  const auto experiment = experiment_of(kMethods.at("asha stopping"));
  const auto events = journal_events(experiment);
  const auto stamps = write_journal(dir.journal(), events);
  const auto snapshot = searcher::journal_snapshot_path(dir.journal());
  const auto full = full_replay(experiment, dir.journal()).encode();
  // Four processes publish snapshots at interleaved points, each in increasing order; the reader
  // watches the file the whole time.
  constexpr std::size_t kWriters = 4;
  std::vector<pid_t> children;
  for (std::size_t w = 0; w < kWriters; ++w) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      bool ok = true;
      try {
        for (std::size_t count = 1 + w; count <= events.size(); count += kWriters) {
          auto [state, coverage] = state_after(experiment, dir.journal(), stamps, count);
          searcher::publish_journal_snapshot(searcher::Journal(dir.journal()), snapshot, state, coverage);
        }
      } catch (...) {
        ok = false;
      }
      ::_exit(ok ? 0 : 1);
    }
    children.push_back(child);
  }
  std::uint64_t seen = 0;
  int checks = 0, backwards = 0, invalid = 0;
  const auto check = [&] {
    SearchState loaded(experiment);
    const auto result = searcher::catch_up(loaded, searcher::Journal(dir.journal()), snapshot);
    if (result.snapshot) {
      backwards += result.snapshot->records < seen;
      seen = std::max(seen, result.snapshot->records);
    }
    invalid += !result.ignored.empty() || loaded.encode() != full;
    ++checks;
  };
  for (std::size_t running = kWriters; running > 0;) {
    check();
    running = 0;
    for (const pid_t child : children) running += ::waitpid(child, nullptr, WNOHANG) == 0;
  }
  for (const pid_t child : children) ::waitpid(child, nullptr, 0);
  check();
  INFO(checks << " checks while " << kWriters << " writers ran");
  CHECK(backwards == 0);
  CHECK(invalid == 0);
  CHECK(seen > events.size() / 2);
  for (const auto& entry : fs::directory_iterator(dir.path)) {
    CHECK_FALSE(entry.path().filename().string().starts_with(".tmp."));
  }
}

TEST_CASE("coordinator: processes asking at once each write snapshots when due, and a new process loads a valid "
          "one", "[journal][snapshot][crash]") {
  TempDir dir;
  const auto experiment = experiment_of("name: async_halving, metric: loss, max_trials: 200, divisor: 2, "
                                        "max_rungs: 3, max_length: {batches: 8}, stop_once: true");
  const auto snapshot = searcher::journal_snapshot_path(dir.journal());
  constexpr int kProcesses = 4;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      bool ok = true;
      try {
        searcher::Coordinator coordinator(experiment, dir.journal());
        bool warned = false;
        coordinator.on_warning([&](const std::string&) { warned = true; });
        coordinator.snapshot_policy({.min_records = 5, .fraction = 1000});  // due every 5 records
        for (int ticket = p; ticket < 200; ticket += kProcesses) {
          const auto work = coordinator.request_work(ticket);
          if (work.kind != searcher::Work::Kind::train) continue;
          for (auto target = work.target_length;;) {
            const double loss = static_cast<double>((work.trial * 37) % 32) / 32.0 - 0.01 * static_cast<double>(target);
            const auto decision = coordinator.report_validation(work.trial, target, loss);
            if (decision.kind != searcher::Decision::Kind::continue_training) break;
            target = decision.target_length;
          }
        }
        ok = !warned;
      } catch (...) {
        ok = false;
      }
      ::_exit(ok ? 0 : 1);
    }
    children.push_back(child);
  }
  for (const pid_t child : children) {
    int status = 0;
    ::waitpid(child, &status, 0);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }
  const auto scan = searcher::Journal(dir.journal()).read();
  CHECK(scan.duplicates == 0);
  SearchState loaded(experiment);
  const auto result = searcher::catch_up(loaded, searcher::Journal(dir.journal()), snapshot);
  CHECK(result.ignored.empty());
  REQUIRE(result.snapshot);
  // Due every 5 records in each process: however the writers skipped each other, the last
  // snapshot is recent.
  CHECK(result.snapshot->records >= scan.scanned() / 2);
  CHECK(loaded.encode() == full_replay(experiment, dir.journal()).encode());
  for (const auto& entry : fs::directory_iterator(dir.path)) {
    CHECK_FALSE(entry.path().filename().string().starts_with(".tmp."));
  }
}
