// SPDX-License-Identifier: Apache-2.0
// What a run that stops on a checkpoint signal records as its cause (launcher/sdk/src/notice_cause.hpp)
// and what the next run's restart event makes of the record (trial_recorder.hpp, restart_cause).
#include <signal.h>

#include <catch2/catch.hpp>

#include "notice_cause.hpp"
#include "trial_recorder.hpp"

using dlx::detail::classify_notice;
using dlx::slurm::parse_time_left;
using dlx::detail::TimeLeft;
using Catch::Matchers::Contains;

TEST_CASE("squeue's time left is read in each of its forms", "[unit][restarts]") {
  const auto [text, kind, seconds] = GENERATE(table<const char*, TimeLeft::Kind, std::int64_t>({
      {"0:41", TimeLeft::Kind::seconds, 41},
      {"12:03\n", TimeLeft::Kind::seconds, 723},
      {"1:00:05", TimeLeft::Kind::seconds, 3605},
      {"2-03:04:05", TimeLeft::Kind::seconds, 2 * 86400 + 3 * 3600 + 4 * 60 + 5},
      {"UNLIMITED", TimeLeft::Kind::unlimited, 0},
      {"NOT_SET", TimeLeft::Kind::unknown, 0},
      {"", TimeLeft::Kind::unknown, 0},
      {"5", TimeLeft::Kind::unknown, 0},
      {"1:2:3:4", TimeLeft::Kind::unknown, 0},
      {"-1:00", TimeLeft::Kind::unknown, 0},
  }));
  CAPTURE(text);
  const auto left = parse_time_left(text);
  CHECK(left.kind == kind);
  CHECK(left.seconds == seconds);
}

TEST_CASE("a notice's cause: the time limit near, else the signal says which", "[unit][restarts]") {
  using Kind = TimeLeft::Kind;
  const auto [signal_number, left, cause, detail] = GENERATE(table<int, TimeLeft, const char*, const char*>({
      {SIGUSR2, {Kind::seconds, 41}, "time_limit", "SIGUSR2 with 41 s left before the job's time limit"},
      {SIGTERM, {Kind::seconds, 0}, "time_limit", "SIGTERM with 0 s left"},
      {SIGUSR2, {Kind::seconds, 3600}, "preemption", "SIGUSR2 with 3600 s left"},
      {SIGTERM, {Kind::seconds, 3600}, "requeue", "scontrol requeue, scancel, or a preemption without"},
      {SIGUSR2, {Kind::unlimited, 0}, "preemption", "SIGUSR2, no time limit"},
      {SIGTERM, {Kind::unlimited, 0}, "requeue", "SIGTERM, no time limit"},
      {SIGUSR2, {Kind::unknown, 0}, "notice", "the job's time left is unknown"},
      // Rank 0 did not get the signal and was not told which it was: not taken for a preemption.
      {0, {Kind::seconds, 3600}, "notice", "no signal reached rank 0"},
      {0, {Kind::unlimited, 0}, "notice", "note_checkpoint_signal"},
      {0, {Kind::seconds, 41}, "time_limit", "no signal with 41 s left before the job's time limit"},
  }));
  CAPTURE(signal_number, cause);
  const auto found = classify_notice(signal_number, left);
  CHECK(found.cause == cause);
  CHECK_THAT(found.detail, Contains(detail));
}

TEST_CASE("an end time carried in a variable gives the time left at the notice", "[unit][restarts]") {
  using dlx::slurm::end_time_value;
  using dlx::slurm::time_left_from_end;
  using Kind = TimeLeft::Kind;
  const std::time_t start = 1'700'000'000;
  CHECK(end_time_value({Kind::seconds, 3600}, start) == "1700003600");
  CHECK(end_time_value({Kind::unlimited, 0}, start) == "UNLIMITED");
  CHECK(end_time_value({}, start).empty());  // unknown: the variable is not set

  const auto later = time_left_from_end("1700003600", start + 3500);
  CHECK(later.kind == Kind::seconds);
  CHECK(later.seconds == 100);
  CHECK(time_left_from_end("1700003600", start + 4000).seconds == 0);  // past the end: none left
  CHECK(time_left_from_end("UNLIMITED", start).kind == Kind::unlimited);
  CHECK(time_left_from_end("", start).kind == Kind::unknown);
  CHECK(time_left_from_end("soon", start).kind == Kind::unknown);
}

TEST_CASE("a cause told from the trial's start says so", "[unit][restarts]") {
  using Kind = TimeLeft::Kind;
  const auto from_start = classify_notice(SIGTERM, dlx::detail::JobTimeLeft{{Kind::seconds, 3600}, true});
  CHECK(from_start.cause == "requeue");
  CHECK_THAT(from_start.detail, Contains("squeue did not answer at the notice"));
  const auto at_notice = classify_notice(SIGTERM, dlx::detail::JobTimeLeft{{Kind::seconds, 3600}, false});
  CHECK_THAT(at_notice.detail, !Contains("squeue did not answer"));
  const auto unknown = classify_notice(SIGTERM, dlx::detail::JobTimeLeft{{}, true});
  CHECK(unknown.cause == "notice");
}

TEST_CASE("a restart's cause comes from the previous run's stop cause, else its stop reason", "[unit][restarts]") {
  using dlx::detail::restart_cause;
  CHECK(restart_cause("requeue: checkpoint at step 4 after SIGUSR2",
                      "time_limit: SIGUSR2 with 41 s left before the job's time limit") == "time_limit");
  CHECK(restart_cause("requeue: checkpoint at step 4 after SIGUSR2") == "notice");  // an older record
  CHECK(restart_cause("crash: exit 3; restart 1 of max_restarts 2") == "crash");
  CHECK(restart_cause("") == "unknown");
}
