// SPDX-License-Identifier: Apache-2.0
#include "bench_searcher_journal.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dlx/searcher/coordinator.hpp"
#include "dlx/summary/experiment_summary.hpp"
#include "dlx/searcher/journal_snapshot.hpp"
#include "dlx/searcher/search_state.hpp"
#include "recording_method.hpp"
#include "simulated_runner.hpp"

namespace dlx::bench {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

LatencySummary summarize(std::vector<double> samples) {
  LatencySummary out;
  out.samples = static_cast<long>(samples.size());
  if (samples.empty()) return out;
  std::sort(samples.begin(), samples.end());
  out.p50_ms = samples[samples.size() / 2];
  out.p99_ms = samples[samples.size() * 99 / 100];
  out.max_ms = samples.back();
  out.mean_ms = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  return out;
}

// A trial's validation loss at a length: a fixed function of the trial, so that rankings vary.
double loss_of(int trial, std::int64_t length) {
  const double quality = std::fmod(static_cast<double>(trial) * 0.6180339887, 1.0);
  return 0.1 + quality + 1.0 / static_cast<double>(length + 1);
}

// One writer process: its tickets are w, w + writers, ...; every question is timed as its asker
// waits for it (the lock wait behind other writers included).
std::vector<double> run_writer(const config::Experiment& experiment, const std::filesystem::path& dir, int w,
                               int writers, int quota, bool summary) {
  searcher::Coordinator coordinator(experiment, dir / searcher::kJournalFileName);
  if (summary) summary::write_summary_on_commit(coordinator, dir, fmt::format("bench writer {}", w));
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(quota));
  for (int ticket = w; static_cast<int>(ms.size()) < quota; ticket += writers) {
    auto start = Clock::now();
    const auto work = coordinator.request_work(ticket);
    ms.push_back(ms_since(start));
    if (work.kind != searcher::Work::Kind::train) continue;
    std::int64_t target = work.target_length;
    while (static_cast<int>(ms.size()) < quota) {
      start = Clock::now();
      const auto decision = coordinator.report_validation(work.trial, target, loss_of(work.trial, target));
      ms.push_back(ms_since(start));
      if (decision.kind != searcher::Decision::Kind::continue_training) break;
      target = decision.target_length;
    }
  }
  return ms;
}

std::filesystem::path fresh_dir(const std::filesystem::path& parent, const std::string& name) {
  auto dir = parent / fmt::format("{}-{}", name, ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

using dlx::testing::RecordingMethod;

// The milliseconds a new process (a fork) takes to catch up with the journal in `dir`, as the
// coordinator's first question does (journal_snapshot.hpp), the median of `repeats`.
double new_process_catch_up_ms(const config::Experiment& experiment, const std::filesystem::path& dir, int repeats) {
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) throw std::runtime_error("pipe failed");
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      ::close(pipe_fds[0]);
      double took = -1;
      try {
        const auto start = Clock::now();
        searcher::SearchState state(experiment);
        const auto result = searcher::catch_up(state, searcher::Journal(dir / searcher::kJournalFileName),
                                               dir / searcher::kJournalSnapshotFileName);
        took = result.ignored.empty() ? ms_since(start) : -1;
      } catch (const std::exception& e) {
        fmt::print(stderr, "bench_searcher: catch-up: {}\n", e.what());
      }
      const bool sent = ::write(pipe_fds[1], &took, sizeof took) == static_cast<ssize_t>(sizeof took);
      ::_exit(sent && took >= 0 ? 0 : 1);
    }
    ::close(pipe_fds[1]);
    double took = -1;
    const bool got = ::read(pipe_fds[0], &took, sizeof took) == static_cast<ssize_t>(sizeof took);
    ::close(pipe_fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("a catch-up process failed");
    ms.push_back(took);
  }
  return summarize(ms).p50_ms;
}


// Runs `event` in this process while a forked prober polls the journal at `journal` with F_GETLK
// (which reports a lock held by another process, without taking one) and measures, with
// steady_clock at each change it sees, the stretches during which a lock is held on it. Returns
// the longest stretch in ms: how long any other writer would have waited at worst. The prober
// spins (one core) for the event's length only; its resolution is one F_GETLK call (microseconds).
double longest_journal_lock_hold_ms(const std::filesystem::path& journal, const std::function<void()>& event) {
  int stop[2], result[2];
  if (::pipe(stop) != 0 || ::pipe(result) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::close(stop[1]);
    ::close(result[0]);
    double longest = -1;
    const int fd = ::open(journal.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      longest = 0;
      char ready = 1;
      if (::write(result[1], &ready, 1) != 1) ::_exit(1);
      std::optional<Clock::time_point> held_since;
      for (;;) {
        struct flock lock {};
        lock.l_type = F_WRLCK;
        lock.l_whence = SEEK_SET;
        if (::fcntl(fd, F_GETLK, &lock) != 0) {
          longest = -1;
          break;
        }
        const auto now = Clock::now();
        if (lock.l_type != F_UNLCK && !held_since) held_since = now;
        if (lock.l_type == F_UNLCK && held_since) {
          longest = std::max(longest, std::chrono::duration<double, std::milli>(now - *held_since).count());
          held_since.reset();
        }
        struct pollfd ask {stop[0], POLLIN, 0};
        if (::poll(&ask, 1, 0) > 0 && !held_since) break;
      }
    }
    const bool sent = ::write(result[1], &longest, sizeof longest) == static_cast<ssize_t>(sizeof longest);
    ::_exit(sent && longest >= 0 ? 0 : 1);
  }
  ::close(stop[0]);
  ::close(result[1]);
  char ready = 0;
  const bool started = ::read(result[0], &ready, 1) == 1;
  if (started) event();
  ::close(stop[1]);  // the prober stops once it has seen the lock free
  double longest = -1;
  const bool got = ::read(result[0], &longest, sizeof longest) == static_cast<ssize_t>(sizeof longest);
  ::close(result[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!started || !got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("the lock prober failed");
  }
  return longest;
}

// One event appended by a fresh coordinator caught up with the journal in `dir`: with no
// journal.snapshot there, the append makes one due (SnapshotPolicy, over 1000 records), so this
// event writes it; the next event writes none. The events: a paused trial's task reports it
// failed (always recorded, whatever the method would answer a new ticket). Returns {longest
// journal lock hold of the first event, its latency as its asker waits, longest hold of the
// second}, in ms.
struct SnapshotEventTimes {
  double snapshot_hold_ms = 0, snapshot_event_ms = 0, ordinary_hold_ms = 0;
};
SnapshotEventTimes time_snapshot_event(const config::Experiment& experiment, const std::filesystem::path& dir) {
  const auto journal = dir / searcher::kJournalFileName;
  const auto snapshot = dir / searcher::kJournalSnapshotFileName;
  std::filesystem::remove(snapshot);
  searcher::Coordinator coordinator(experiment, journal);
  coordinator.refresh();  // the whole journal replayed; nothing appended, so no snapshot yet
  std::vector<int> paused;
  for (const auto& [id, trial] : coordinator.state().trials()) {
    if (trial.status == "paused") paused.push_back(id);
  }
  if (paused.size() < 2) throw std::runtime_error("fewer than 2 paused trials to report failed");
  const auto appended_by = [&](int trial) {
    const auto before = std::filesystem::file_size(journal);
    coordinator.report_exit(trial, searcher::ExitKind::failed, "bench_searcher: a timed event");
    if (std::filesystem::file_size(journal) == before) throw std::runtime_error("the timed event appended nothing");
  };
  SnapshotEventTimes out;
  out.snapshot_hold_ms = longest_journal_lock_hold_ms(journal, [&] {
    const auto start = Clock::now();
    appended_by(paused[0]);
    out.snapshot_event_ms = ms_since(start);
  });
  if (!std::filesystem::exists(snapshot)) throw std::runtime_error("the timed event wrote no journal.snapshot");
  out.ordinary_hold_ms = longest_journal_lock_hold_ms(journal, [&] { appended_by(paused[1]); });
  return out;
}

}  // namespace

JournalRun measure_journaled_events(const config::Experiment& experiment, const std::filesystem::path& parent,
                                    int events, int writers, bool summary) {
  const auto dir = fresh_dir(parent, fmt::format("journal-{}w{}", writers, summary ? "-h5" : ""));
  const int quota = events / writers;
  const auto start = Clock::now();
  std::vector<pid_t> children;
  for (int w = 0; w < writers; ++w) {
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      int status = 0;
      try {
        const auto ms = run_writer(experiment, dir, w, writers, quota, summary);
        std::ofstream out(dir / fmt::format("latency-{}.bin", w), std::ios::binary);
        out.write(reinterpret_cast<const char*>(ms.data()), static_cast<std::streamsize>(ms.size() * sizeof(double)));
        status = out ? 0 : 2;
      } catch (const std::exception& e) {
        fmt::print(stderr, "bench_searcher: writer {}: {}\n", w, e.what());
        status = 1;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  bool failed = false;
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    failed = failed || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  const double wall_s = ms_since(start) / 1000;
  if (failed) throw std::runtime_error("a journal writer process failed");
  std::vector<double> all;
  for (int w = 0; w < writers; ++w) {
    std::ifstream in(dir / fmt::format("latency-{}.bin", w), std::ios::binary);
    std::vector<double> ms(static_cast<std::size_t>(quota));
    in.read(reinterpret_cast<char*>(ms.data()), static_cast<std::streamsize>(ms.size() * sizeof(double)));
    all.insert(all.end(), ms.begin(), ms.end());
  }
  JournalRun run;
  run.event = summarize(all);
  run.events_per_second = static_cast<double>(all.size()) / wall_s;
  const auto records = searcher::Journal(dir / searcher::kJournalFileName).read().records.size();
  run.record_bytes = static_cast<double>(std::filesystem::file_size(dir / searcher::kJournalFileName)) /
                     static_cast<double>(std::max<std::size_t>(records, 1));
  std::filesystem::remove_all(dir);
  return run;
}

LatencySummary measure_bare_fdatasync(const std::filesystem::path& parent, std::size_t bytes, int count) {
  const auto dir = fresh_dir(parent, "fdatasync");
  const auto path = dir / "file";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) throw std::runtime_error("cannot create " + path.string());
  const std::string record(bytes, 'x');
  std::vector<double> ms;
  off_t end = 0;
  for (int i = 0; i < count; ++i) {
    const auto start = Clock::now();
    if (::pwrite(fd, record.data(), record.size(), end) != static_cast<ssize_t>(record.size()) || ::fdatasync(fd) != 0) {
      ::close(fd);
      throw std::runtime_error("cannot write " + path.string());
    }
    ms.push_back(ms_since(start));
    end += static_cast<off_t>(record.size());
  }
  ::close(fd);
  std::filesystem::remove_all(dir);
  return summarize(ms);
}

SummaryRewrite measure_summary_rewrite(const config::Experiment& experiment, const std::filesystem::path& parent,
                                       int repeats) {
  RecordingMethod method(searcher::make_method(experiment));
  simulation::SimulationOptions options;
  options.workers = std::max(64, experiment.searcher.max_trials / 40);
  options.tickets = searcher::ticket_count(experiment);
  options.curve = simulation::synthetic_curve(5, 0.1, experiment.searcher.max_length->value);
  simulation::simulate(method, options);
  std::string journal;
  for (const auto& event : method.events) journal += searcher::encode_journal_record(event);
  const auto scan = searcher::scan_journal(journal);
  const auto state = searcher::replay_journal(experiment, scan);
  const auto dir = fresh_dir(parent, "summary");
  {
    std::ofstream out(dir / searcher::kJournalFileName, std::ios::binary);
    out << journal;
    if (!out) throw std::runtime_error("cannot write the benchmark's journal");
  }
  // Without a snapshot: the whole journal, as every new process read it before snapshots.
  const double full_replay_ms = new_process_catch_up_ms(experiment, dir, repeats);
  // The snapshot the writers' policy leaves at the journal's end: the last record count at
  // which one was due, counting from none.
  const searcher::SnapshotPolicy policy;
  std::uint64_t covered = 0;
  for (std::uint64_t records = 1; records <= scan.records.size(); ++records) {
    if (policy.due(records, covered)) covered = records;
  }
  std::vector<double> snapshot_writes;
  if (covered > 0) {
    searcher::SearchState partial(experiment);
    for (std::size_t i = 0; i < covered; ++i) partial.apply(scan.records[i]);
    const auto& last = scan.records[covered - 1];
    const auto stamp = *searcher::stamp_journal_record(journal, static_cast<std::size_t>(last.offset), 0);
    for (int i = 0; i < repeats; ++i) {
      const auto start = Clock::now();
      searcher::write_journal_snapshot(dir / searcher::kJournalSnapshotFileName, partial,
                                       searcher::SnapshotCoverage{stamp.end(), covered, stamp});
      snapshot_writes.push_back(ms_since(start));
    }
  }
  const double replay_ms = new_process_catch_up_ms(experiment, dir, repeats);
  // Last (it appends to the journal): the journal lock held by an event that writes the snapshot.
  std::vector<double> hold, event_ms, ordinary;
  for (int i = 0; i < repeats && covered > 0; ++i) {  // below 1000 records no snapshot is ever due
    const auto times = time_snapshot_event(experiment, dir);
    hold.push_back(times.snapshot_hold_ms);
    event_ms.push_back(times.snapshot_event_ms);
    ordinary.push_back(times.ordinary_hold_ms);
  }
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    summary::write_experiment_summary(dir, state, 0, "bench");
    ms.push_back(ms_since(start));
  }
  SummaryRewrite out;
  out.median_ms = summarize(ms).p50_ms;
  out.trials = state.trials().size();
  out.decisions = state.decisions().size();
  out.bytes = std::filesystem::file_size(dir / summary::kExperimentSummaryFileName);
  out.replay_ms = replay_ms;
  out.full_replay_ms = full_replay_ms;
  out.journal_bytes = journal.size();
  out.journal_records = scan.records.size();
  out.snapshot_records = covered;
  out.snapshot_write_ms = summarize(snapshot_writes).p50_ms;
  out.snapshot_event_lock_ms = summarize(hold).p50_ms;
  out.snapshot_event_ms = summarize(event_ms).p50_ms;
  out.ordinary_event_lock_ms = summarize(ordinary).p50_ms;
  std::error_code error;
  out.snapshot_bytes = covered > 0 ? std::filesystem::file_size(dir / searcher::kJournalSnapshotFileName, error) : 0;
  std::filesystem::remove_all(dir);
  return out;
}

}  // namespace dlx::bench
