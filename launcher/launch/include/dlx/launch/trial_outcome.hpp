// SPDX-License-Identifier: Apache-2.0
#pragma once
// After the trainer exited, rank 0's dlx-launch makes trials/<id>/trial.h5 tell the truth: a
// trainer that crashed (or was killed) cannot record that itself. The trainer has exited, so
// dlx-launch is the file's only writer (load, modify, save).
//   exit 0                 nothing to do (the trainer's finish() wrote "completed")
//   exit 85 (requeue)      nothing: the record stays "running", the requeued run resumes it
//   any other exit         a crash, when the record is "running" or missing: `failures` + 1,
//                          `last_error` the crash ("exit 1: ValueError: ...": the exit and the
//                          trainer's last error line), `same_failures` how many crashes in a row
//                          looked like it. The record stays "running" and every rank's dlx-launch
//                          exits 85, so Slurm requeues the trial (RequeueExit=85) and it resumes
//                          from its latest checkpoint (stop_reason "crash: ..."), unless the crash
//                          is final: then state "failed" with the crash's text, and the trainer's
//                          status is passed through. Final are
//                            exit 78 (kConfigErrorExitCode)   dlx's own error about the trial's
//                                code or configuration: running again would fail the same way;
//                            the failure past max_restarts (or any failure when crashes are not
//                                restarted: no Slurm job, no frozen snapshot);
//                            the kSameCrashLimit-th crash in a row with the same exit and the
//                                same last error line (a crash loop), while restarts remain.
//   any exit after the trial was finished (completed, stopped, paused) during this run: not a
//                          crash. The trainer's results are durable and final, and running it again
//                          would find no work; a library aborting at exit (a thread left running
//                          in a static, e.g. torch.distributed's process group never destroyed)
//                          is said as a warning and dlx-launch exits 0 (finished_during_run()).
// Every rank decides alike: each reads the record when it starts (before rank 0 can have
// changed it), max_restarts from the same frozen snapshot, and takes the same crash: the first
// one announced (peer_crash.hpp), or its own on a trial of one rank. Preemptions, time limits and
// `scontrol requeue` end with exit 85 (or a signal after the trainer checkpointed) and never count.
#include <optional>
#include <string>
#include <string_view>

#include "dlx/env/trial_context.hpp"
#include "dlx/record/trial_record.hpp"

namespace dlx::launch {

// Crashes in a row that look the same (same exit, same last error line) after which the trial
// is failed instead of restarted again.
inline constexpr int kSameCrashLimit = 3;

// Pure decision: should a record in this state (nullopt: no file) count this exit as a crash?
bool should_mark_failed(int exit_status, const std::optional<record::TrialRecord>& record);

// Pure: did the trainer finish its trial in this run, so that a non-zero exit after it is not a
// crash? `record_now`: the record after the trainer exited. True for completed, stopped and
// paused (the searcher's decisions), when the record did not already say so at the start.
bool finished_during_run(int exit_status, const std::optional<record::TrialRecord>& record_at_start,
                         const std::optional<record::TrialRecord>& record_now);

// The warning for such an exit: what happened, that nothing was lost, and the usual cause.
std::string exit_after_finish_warning(int exit_status, std::string_view state, std::string_view last_line);

// The crash that ends the run, as every rank takes it.
struct TrialCrash {
  int status = 0;     // the crashed trainer's exit status
  std::string where;  // "rank 1 on n2" on a trial of several ranks, else ""
  std::string error;  // crash_error(): "exit 1: ValueError: lr must be positive"
  // dlx-launch on that rank refused the trial before its trainer started and failed it at once
  // (a code copy or data it could not make, a container that would not start): final on every
  // rank, so that no rank exits 85 and gets a failed trial requeued.
  bool refused = false;
  // The crashed rank found the name its trainer could not open missing from the code snapshot
  // (snapshot_gap.hpp): why, and how to fix it. Final on every rank: a restart runs the same snapshot.
  std::string snapshot_gap{};

  std::string described() const { return where.empty() ? error : where + ": " + error; }
};

// The line of a trainer's stderr tail that says what went wrong: the last line that is not
// blank, not dlx-launch's own ("dlx-launch: ...") and not a warning ("...warning: ...", any case),
// with surrounding blanks removed (a C++ "  what():  ..." line included) and PyTorch 2.x's
// "[rank<R>]: " before it (every rank's same error reads the same). "" when none.
std::string last_error_line(std::string_view stderr_tail);

// "exit 3", "killed by SIGKILL (exit 137)".
std::string describe_exit(int exit_status);
// describe_exit(), and ": <last error line>" when there is one; at most
// record::kMaxLastErrorBytes bytes. Not for SIGKILL: what killed the trainer (the kernel's OOM
// killer, Slurm, an administrator) wrote nothing, and its last line says something unrelated.
// `cause`, when known, says what ended it (oom_kills.hpp's "out of memory: ..."): after the exit
// for SIGKILL, after the last error line otherwise ("exit 1: RuntimeError: DataLoader worker ...
// killed by signal: Killed.; out of memory: ...").
std::string crash_error(int exit_status, std::string_view last_line, std::string_view cause = "");

// Whether a trainer's crash_error() is Python failing to compile its code ("exit 1: SyntaxError:
// ...", IndentationError, TabError): a restart runs the same code (the experiment's snapshot, or
// the same files), so it would fail alike, however many restarts are left.
bool is_python_compile_error(int exit_status, std::string_view error);

struct ExitDecision {
  // config_error: exit 78 (dlx.ConfigError and the like); code_error: is_python_compile_error;
  // snapshot_gap: a file or module the code snapshot left out (TrialCrash::snapshot_gap).
  enum class Final { no, config_error, code_error, snapshot_gap, restarts_exhausted, crash_loop };
  int status = 0;        // dlx-launch's own exit status
  bool crash = false;    // counted against max_restarts
  bool requeue = false;  // a crash with restarts left: exit 85 so that Slurm requeues the trial
  Final final = Final::no;  // a crash that fails the trial, and why
  int same_failures = 0;    // crashes in a row like this one, this one included
};

// Pure. `record_at_start`: the record when dlx-launch started; `max_restarts`: nullopt when
// crashes are not restarted (not a Slurm job, or no frozen snapshot); `error`: the crash's
// crash_error() (compared with the record's last_error for a crash loop).
ExitDecision decide_exit(int exit_status, const std::optional<record::TrialRecord>& record_at_start,
                         std::optional<int> max_restarts, std::string_view error = "");
// The decision for `crash`, as every rank of the trial takes it: a refusal fails the trial at once
// (exit 1), a snapshot gap too (its status passed through), anything else as decide_exit decides
// on its status and error.
ExitDecision decide_exit(const TrialCrash& crash, const std::optional<record::TrialRecord>& record_at_start,
                         std::optional<int> max_restarts);

// The record's stop_reason for a crash under `decision` (`failures`: this crash's number); for a
// refusal, "failed: " and where and why (no restart count: nothing was restarted).
std::string crash_stop_reason(const TrialCrash& crash, const ExitDecision& decision, int failures,
                              std::optional<int> max_restarts);

// Applies `decision` to the trial's record (rank 0): failures, last_error, same_failures,
// exit_code, stop_reason and, for a final crash, state "failed". Returns true when it wrote the
// file. Throws RecordError (or ConfigError for a broken snapshot) on failure.
bool record_trainer_exit(env::TrialContext& context, const TrialCrash& crash, const ExitDecision& decision,
                         std::optional<int> max_restarts);

}  // namespace dlx::launch
