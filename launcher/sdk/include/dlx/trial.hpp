// SPDX-License-Identifier: Apache-2.0
#pragma once
// libdlx: what a C++ trainer links. One Trial per process, created after nothing else touched MPI
// (or after the program's own MPI_Init: then the program also finalises). docs/sdk.md has the
// whole API with an example; in short:
//
//   dlx::Trial trial;                                    // MPI bring-up, start-up check
//   auto lr = trial.hparam<double>("learning_rate");
//   trial.broadcast_parameters(params);                  // rank 0's initial weights everywhere
//   for (step...) {
//     trial.allreduce(grads);                            // fused (bucketed) sum of the list
//     if (trial.should_checkpoint_and_exit()) {          // a checkpoint signal reached a rank
//       /* save a checkpoint */ return dlx::kRequeueExitCode;
//     }
//   }
//   trial.report_validation(step, {{"accuracy", acc}});  // every rank, same values
//   trial.finish();                                      // state "completed"
//
// Inside a dlx trial (DLX_EXPERIMENT_DIR set) rank 0 keeps trials/<id>/trial.h5: created (or, on
// a requeue, loaded with its history) by the constructor, marked completed by finish(). A report
// costs an append to a buffer: a background thread makes it durable in the trial's metrics log
// within a second and folds the log into trial.h5 now and then (dlx/record/metrics_log.hpp).
// Outside a trial nothing is written and hyperparameters come from DLX_HPARAMS,
// DLX_HPARAMS_FILE or TrialOptions::hparams_file (else none: use defaults).
//
// The constructor, report_*(), finish(), allreduce(), broadcast_parameters() and
// should_checkpoint_and_exit() are collective: every rank calls them, in the same order. Rank 0
// alone writes, then tells the others whether it worked, so a failed write throws TrialError on
// every rank instead of leaving the other ranks waiting; a report is not a write (a metrics log
// that cannot be written shows at the next finish(), resume or checkpoint exit).
//
// Without a communicator (TrialOptions::communicator = false: a PyTorch or JAX program through
// the C API and the `dlx` Python package, python/dlx/) there is no MPI: rank and world size come from the environment
// dlx-launch sets, only rank 0 writes, and nothing is collective: the program's framework does
// its own communication and agrees on should_checkpoint_and_exit() itself.
//
// Checkpoints (the "Checkpoints" section below, dlx/checkpointing.hpp): resume() loads the latest
// valid checkpoint, save_checkpoint() saves through the experiment's checkpoint policy, and
// checkpoint_and_exit() is the exit path after should_checkpoint_and_exit().
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "dlx/checkpointing.hpp"
#include "dlx/comm/communicator.hpp"
#include "dlx/comm/fused_allreduce.hpp"
#include "dlx/comm/tensor.hpp"
#include "dlx/common/error.hpp"
#include "dlx/env/trial_context.hpp"
#include "dlx/env/trial_environment.hpp"
#include "dlx/hparams.hpp"

namespace dlx::comm {
class MpiRuntime;
}
namespace dlx::searcher {
class Coordinator;
}

namespace dlx {

namespace detail {
class TrialRecorder;
class PreemptionSignals;
class Checkpointer;
}

class TrialError : public Error {
 public:
  using Error::Error;
};

// dlx's own error about the trial's code or configuration: a validation report at the target
// length without the searcher's metric, a metric name or tensor a record or checkpoint cannot
// hold. Running the trial again would fail the same way, so a trainer that dies of it (or of an
// HparamError) should exit with kConfigErrorExitCode: dlx-launch then fails the trial at once,
// with its last error line, instead of restarting it (exit_status_for() picks the status; an
// uncaught one exits with it by itself, see Trial).
class TrialConfigError : public TrialError {
 public:
  using TrialError::TrialError;
};

using Metrics = std::map<std::string, double>;

class Trial;

// Metric names registered once (Trial::metric_names), in the order their values will come: a
// report with them passes only an array of values, with no name compared, looked up or copied
// (the C API's names-once calls and Python's reports use it). Valid for the Trial that made it.
class MetricNames {
 public:
  const std::vector<std::string>& names() const noexcept { return names_; }
  std::size_t size() const noexcept { return names_.size(); }
  // The values as a Metrics map (for the few paths that need one: a line printed outside a
  // trial, the searcher's question at the target length).
  Metrics with_values(std::span<const double> values) const;

 private:
  friend class Trial;
  const Trial* owner_ = nullptr;
  std::vector<std::string> names_;
  std::vector<std::uint32_t> ids_;  // the metrics pipeline's (rank 0 inside a trial), else empty
};

// What the searcher says after a validation report at the target length.
enum class Next { train, stop, pause, complete };
const char* to_string(Next next);

// "Checkpointed on request, requeue me" (the site's RequeueExit=85).
inline constexpr int kRequeueExitCode = env::kRequeueExitCode;
// "The trial's code or configuration is wrong: do not retry" (78, sysexits' EX_CONFIG).
inline constexpr int kConfigErrorExitCode = env::kConfigErrorExitCode;

// The exit status for a trainer ending on `error`: kConfigErrorExitCode for a TrialConfigError or
// an HparamError, else 1. `catch (const std::exception& e) { ...; return dlx::exit_status_for(e); }`
int exit_status_for(const std::exception& error) noexcept;
// Whether `error` is one of those (what the C API reports as DLX_ERROR_CONFIG or DLX_ERROR_HPARAM).
bool is_config_error(const std::exception& error) noexcept;

struct TrialOptions {
  std::optional<std::filesystem::path> hparams_file;  // used when DLX_HPARAMS is not set
  bool announce_backend = true;  // rank 0 says when it falls back to the MPI backend
  // false: no MPI and no communicator (a framework program; see above).
  bool communicator = true;
  // Fusion bucket size for allreduce(); unset: DLX_BUCKET_BYTES, else 64 MiB. 0: no fusion.
  std::optional<std::size_t> bucket_bytes;
  // Signals that request a checkpoint-and-exit; empty: none are caught.
  std::vector<int> checkpoint_signals{SIGTERM, SIGUSR1, SIGUSR2};
};

// Inside a trial, the constructor installs a std::terminate handler: a TrialConfigError or an
// HparamError that nothing caught ends the process with its message on stderr and
// kConfigErrorExitCode (other uncaught exceptions go to the previous handler, as before).
class Trial {
 public:
  explicit Trial(TrialOptions options = {});
  ~Trial();
  Trial(const Trial&) = delete;
  Trial& operator=(const Trial&) = delete;

  template <HparamType T>
  T hparam(std::string_view name) const { return hparams_.get<T>(name); }
  template <HparamType T>
  T hparam(std::string_view name, T fallback) const { return hparams_.get<T>(name, fallback); }
  const Hparams& hparams() const noexcept { return hparams_; }
  // Keeps a hyperparameter name warning of the trainer's own (a binding that checks its reads
  // itself: the Python package) in trial.h5 (rank 0 inside a trial; elsewhere nothing), where
  // `dlx status` and `dlx report` show it. `kind`: "default" or "unread" (Hparams::NameWarning).
  // Best effort: a record that cannot be written is a warning on stderr. Each (kind, name) once.
  void record_hparam_warning(const std::string& kind, const std::string& name, const std::string& message);

  // Throws TrialError without a communicator (TrialOptions::communicator = false).
  comm::Communicator& communicator();
  bool has_communicator() const noexcept { return communicator_ != nullptr; }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  int local_rank() const noexcept { return local_rank_; }

  // The element-wise sum over all ranks of every tensor in the list, in place, through fusion
  // buckets (comm/fused_allreduce.hpp). Bit-for-bit the same as one allreduce per tensor.
  // Tensors in GPU memory (Tensor::on_cuda_device) are summed on the device, ordered against
  // communicator().set_cuda_stream(...) (comm/communicator.hpp, "Memory").
  void allreduce(std::span<const comm::Tensor> tensors);
  // The same, overlapped with the backward pass: fused_allreduce().add(t) as each gradient is
  // ready, fused_allreduce().synchronize() before the update.
  comm::FusedAllreduce& fused_allreduce();
  // Every rank ends with rank `root`'s values (initial parameters, so all replicas start equal).
  // Host tensors only: a tensor in GPU memory is refused (TrialError) before anything is sent.
  void broadcast_parameters(std::span<const comm::Tensor> tensors, int root = 0);

  // True on every rank when any rank received a checkpoint signal since start-up: then save a
  // checkpoint and exit with kRequeueExitCode. Collective (a one-integer allreduce; call it at
  // the same step on every rank, e.g. every step or every N steps). Without a communicator it
  // reports this process's signal only.
  bool should_checkpoint_and_exit();
  // The checkpoint signal this process received (SIGTERM, SIGUSR1 or SIGUSR2; 0: none). Local.
  int checkpoint_signal() const noexcept;
  // Without a communicator the framework agrees on the notice (dlx.torch: an all_reduce of MAX
  // of every rank's checkpoint_signal()) and passes the agreed signal here, so that rank 0
  // records the signal that stopped the trial even when it reached another rank first (a
  // container runtime's signal proxy can deliver it to the ranks milliseconds apart).
  // checkpoint_and_exit() records the larger of this and this process's own. 0 < signal < 65.
  void note_checkpoint_signal(int signal_number);

  bool in_trial() const noexcept { return context_.trial().in_trial(); }
  std::int64_t id() const noexcept { return context_.trial().trial_id; }
  const env::TrialEnvironment& environment() const noexcept { return context_.trial(); }
  // Where the trainer keeps data shared by trials: <experiment dir>, or "." outside a trial.
  std::filesystem::path experiment_dir() const;
  const std::optional<std::filesystem::path>& checkpoint_dir() const noexcept {
    return context_.trial().checkpoint_dir;
  }
  // The checkpoint to resume from; nullopt on a fresh start.
  const std::optional<std::filesystem::path>& latest_checkpoint() const noexcept {
    return context_.trial().latest_checkpoint;
  }

  void report_training(std::int64_t step, const Metrics& metrics) { report(false, step, metrics); }
  // Records the metrics and, when `step` reaches target_length(), asks the searcher what next
  // (see "Searcher" below). Collective.
  Next report_validation(std::int64_t step, const Metrics& metrics);
  // Names-once reporting: the names checked (every rank, as a report checks them) and registered
  // once; each report then passes `values` in their order (values.size() == names.size()).
  // Throws TrialError for a name a report would refuse, or a name given twice.
  MetricNames metric_names(std::vector<std::string> names);
  void report_training(std::int64_t step, const MetricNames& names, std::span<const double> values) {
    report(false, step, names, values);
  }
  Next report_validation(std::int64_t step, const MetricNames& names, std::span<const double> values);
  // Marks the trial ended in trial.h5: completed, or stopped / paused by the searcher with its
  // reason. Waits for a checkpoint save in flight first.
  void finish();

  // ---- Searcher (src/searcher_ops.cpp; docs/sdk.md "Searcher") ----
  // The searcher gives each trial a length to train to (in its unit: the trainer's steps) and,
  // when the trial reports validation there, decides: train on to a new target_length(), stop
  // (ASHA's stopping variant: not promising), pause (ASHA's promotion variant: checkpoint this
  // step and end; a later array task resumes it when it is promoted) or complete. The loop:
  //   for (step = resumed ? resumed->step : trial.start_length(); ; ) {
  //     train one step; ++step;
  //     if (step == trial.target_length()) {              // 0: no searcher length
  //       trial.save_checkpoint(state);                   // before the report: a pause or a PBT
  //       if (trial.report_validation(step, m) != dlx::Next::train) break;   // exploit loads it
  //     }
  //   }
  //   trial.finish();
  // Where the work starts (a promotion or a PBT exploit starts past 0) and where to report next.
  std::int64_t start_length() const noexcept { return context_.trial().start_length; }
  std::int64_t target_length() const noexcept { return context_.trial().target_length; }
  // The searcher's last word, for logs: "rung 1 (length 27): accuracy 0.91 ranks 1 of 4; ...".
  const std::string& searcher_reason() const noexcept { return searcher_reason_; }

  // ---- Checkpoints (src/checkpointing.cpp; dlx/checkpointing.hpp) ----
  // Collective. The checkpoint to resume from, verified: DLX_LATEST_CHECKPOINT when dlx-launch
  // (or a searcher decision) named one, else the newest valid step-<N>.h5 in checkpoint_dir();
  // nullopt on a fresh start or without DLX_CHECKPOINT_DIR. Drops metrics recorded after its
  // step and records the restart in trial.h5. Throws CheckpointingError on every rank when the
  // checkpoint does not fit this run (per-rank state from another world size), unless `ranks`
  // says the caller checks that itself (dlx.torch restores replicated state on any world size).
  // Tensors `defer` names are verified but not held: ResumedState::restore reads each straight
  // into the caller's memory (dlx.torch reads a model's parameters into the model this way).
  // Without a communicator the ranks agree through the trial's directory
  // (src/resume_rendezvous.hpp): every rank resumes from the checkpoint rank 0 chose.
  enum class RankStateRule { refuse_other_world_size, caller_checks };
  std::optional<ResumedState> resume(RankStateRule ranks = RankStateRule::refuse_other_world_size,
                                     const checkpoint::Deferral& defer = {});
  // Not collective: this run resumes from `resumed`, one of this trial's checkpoints that the
  // trainer opened itself (Determined's Core API reads the checkpoint it was told of, on the
  // ranks it chooses). Rank 0 says so and records the resume in trial.h5 as resume() does
  // (metrics after its step dropped, the restart's resumed step and what was lost); the other
  // ranks do nothing.
  void note_resumed_from(const ResumedState& resumed);
  // Does the experiment's checkpoint period (checkpoint.period_batches, else period_minutes) say
  // to save after `step`? Collective only with period_minutes (rank 0's clock decides). False
  // without DLX_CHECKPOINT_DIR.
  bool checkpoint_due(std::int64_t step);
  // Collective: saves step-<state.step>.h5 through the experiment's policy (async unless the
  // experiment says async: false; retention after each save). Throws CheckpointingError on every
  // rank when this save, or the previous async one, failed; the older checkpoints are intact.
  void save_checkpoint(const TrainingState& state);
  // Collective, after should_checkpoint_and_exit(): saves `state` unless this step is saved
  // already, waits for the save up to `deadline` (default: DLX_EXIT_DEADLINE_S, else 30 s),
  // records why the trial stops and returns kRequeueExitCode. A failed or late save is reported
  // and the previous checkpoint is the one the requeued run resumes from.
  int checkpoint_and_exit(const TrainingState& state,
                          std::optional<std::chrono::seconds> deadline = std::nullopt);
  // checkpoint_and_exit for a trainer that saved the checkpoint of `saved_step` itself (the C
  // API, dlx.torch): waits for that save, records why the trial stops, returns kRequeueExitCode.
  // Throws CheckpointingError when the last save was not of `saved_step`.
  int exit_for_requeue(std::int64_t saved_step,
                       std::optional<std::chrono::seconds> deadline = std::nullopt);
  // Not collective, never throws: returns once the last save's tensors marked
  // snapshot_in_background are copied (at once on ranks other than 0, and when none are in
  // flight). A trainer calls it before it next changes them: just before its optimizer's update.
  // A failed copy is the next save's or wait's error.
  void wait_for_snapshot() noexcept;
  // Not collective (rank 0's; false elsewhere): waits for the save in flight and deletes
  // step-<step>.h5 when that save published it, for a trainer that found the tensors it marked
  // snapshot_in_background changed before wait_for_snapshot(): the file may mix their bytes from
  // before and after. That save's error, if any, is dropped (it published nothing). Throws
  // CheckpointingError when the file cannot be deleted.
  bool withdraw_checkpoint(std::int64_t step);
  // Collective: waits for an async save in flight; false when `deadline` passed first.
  bool wait_for_checkpoint(std::chrono::steady_clock::duration deadline);
  bool checkpointing_enabled() const noexcept { return checkpoint_dir().has_value(); }

 private:
  void report(bool validation, std::int64_t step, const Metrics& metrics);
  void report(bool validation, std::int64_t step, const MetricNames& names, std::span<const double> values);
  // The reason a report of `name` is refused, or nullopt (then it is remembered as checked).
  std::optional<std::string> metric_name_refusal(const std::string& name);
  // Throws TrialError for a name trial.h5 cannot hold or one past kMaxMetricNames.
  void check_metric_names(bool validation, std::int64_t step, const Metrics& metrics);
  // Runs `action` on rank 0, then agrees on the outcome with every rank (see above): a
  // TrialConfigError (or HparamError) on rank 0 is a TrialConfigError on every rank.
  void on_rank0(const char* what, const std::function<void()>& action);
  // The std::terminate handler described above the class (src/config_error_exit.cpp).
  static void install_config_error_exit();

  // The process's environment, trial contract, placement and frozen experiment, read once and
  // handed to the record, the checkpoint settings and the searcher's coordinator.
  env::TrialContext context_;
  Hparams hparams_;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  std::unique_ptr<comm::MpiRuntime> mpi_;            // declared first: destroyed last
  std::unique_ptr<comm::Communicator> communicator_;
  std::unique_ptr<comm::FusedAllreduce> fused_;
  std::unique_ptr<detail::PreemptionSignals> signals_;
  std::unique_ptr<detail::TrialRecorder> recorder_;  // rank 0 inside a trial only
  std::set<std::string, std::less<>> reported_names_;  // metric names checked (every rank)
  std::vector<std::string> last_reported_names_;       // the previous report's, in order
  int agreed_signal_ = 0;  // note_checkpoint_signal's: the notice as the ranks agreed it

  // Searcher (src/searcher_ops.cpp).
  Next ask_searcher(std::int64_t step, const Metrics& metrics);
  // In finish(), when the searcher still expects a report at target_length(): it is told that
  // the trial completed without one.
  void end_before_target();
  // After finish() wrote trial.h5 for a paused trial: from now on another array task may resume
  // it (search_state.hpp, "settled").
  void settle_pause();
  // Rank 0's coordinator of the experiment's journal, created on first use; used only by the
  // training thread (POSIX record locks do not exclude threads of one process).
  searcher::Coordinator& coordinator();
  // The steps of this trial's checkpoints that searcher decisions still reference, with why
  // (rank 0, before each save; nullopt when the journal cannot be read: delete nothing).
  std::optional<std::map<std::int64_t, std::string>> searcher_references();
  // The checkpoint the searcher named for this trial's start, as (trial, step): a PBT trial's
  // member's previous trial or the parent it exploits. nullopt: none (or no journal).
  std::optional<std::pair<std::int64_t, std::int64_t>> searcher_start_checkpoint();
  std::unique_ptr<searcher::Coordinator> coordinator_;  // rank 0, created at the first question
  Next searcher_next_ = Next::train;
  std::string searcher_reason_;

  // Checkpoints (src/checkpointing.cpp). Destroyed first: waits for a save in flight.
  detail::Checkpointer& checkpointer();
  std::unique_ptr<detail::Checkpointer> checkpointer_;
  int resume_calls_ = 0;  // names this process's resume rendezvous without a communicator
};

}  // namespace dlx
