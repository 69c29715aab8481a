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
// a requeue, loaded with its history) by the constructor, appended to by every report, marked
// completed by finish(). Outside a trial nothing is written and hyperparameters come from
// DLX_HPARAMS, DLX_HPARAMS_FILE or TrialOptions::hparams_file (else none: use defaults).
//
// The constructor, report_*(), finish(), allreduce(), broadcast_parameters() and
// should_checkpoint_and_exit() are collective: every rank calls them, in the same order. Rank 0
// alone writes, then tells the others whether it worked, so a failed write throws TrialError on
// every rank instead of leaving the other ranks waiting.
//
// Without a communicator (TrialOptions::communicator = false: a PyTorch or JAX program through
// the C API and python/dlx.py) there is no MPI: rank and world size come from the environment
// dlx-launch sets, only rank 0 writes, and nothing is collective: the program's framework does
// its own communication and agrees on should_checkpoint_and_exit() itself.
//
// Checkpoints: DLX_CHECKPOINT_DIR and DLX_LATEST_CHECKPOINT are exposed as checkpoint_dir() and
// latest_checkpoint(); saving and loading tensors is dlx::checkpoint's job (checkpoint/), which
// a trainer calls on rank 0 between should_checkpoint_and_exit() and its exit.
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dlx/comm/communicator.hpp"
#include "dlx/comm/fused_allreduce.hpp"
#include "dlx/comm/tensor.hpp"
#include "dlx/common/error.hpp"
#include "dlx/env/trial_environment.hpp"
#include "dlx/hparams.hpp"

namespace dlx::comm {
class MpiRuntime;
}

namespace dlx {

namespace detail {
class TrialRecorder;
class PreemptionSignals;
}

class TrialError : public Error {
 public:
  using Error::Error;
};

using Metrics = std::map<std::string, double>;

// "Checkpointed on request, requeue me" (the site's RequeueExit=85).
inline constexpr int kRequeueExitCode = env::kRequeueExitCode;

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

  // Throws TrialError without a communicator (TrialOptions::communicator = false).
  comm::Communicator& communicator();
  bool has_communicator() const noexcept { return communicator_ != nullptr; }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  int local_rank() const noexcept { return local_rank_; }

  // The element-wise sum over all ranks of every tensor in the list, in place, through fusion
  // buckets (comm/fused_allreduce.hpp). Bit-for-bit the same as one allreduce per tensor.
  void allreduce(std::span<const comm::Tensor> tensors);
  // The same, overlapped with the backward pass: fused_allreduce().add(t) as each gradient is
  // ready, fused_allreduce().synchronize() before the update.
  comm::FusedAllreduce& fused_allreduce();
  // Every rank ends with rank `root`'s values (initial parameters, so all replicas start equal).
  void broadcast_parameters(std::span<const comm::Tensor> tensors, int root = 0);

  // True on every rank when any rank received a checkpoint signal since start-up: then save a
  // checkpoint and exit with kRequeueExitCode. Collective (a one-integer allreduce; call it at
  // the same step on every rank, e.g. every step or every N steps). Without a communicator it
  // reports this process's signal only.
  bool should_checkpoint_and_exit();

  bool in_trial() const noexcept { return environment_.in_trial(); }
  std::int64_t id() const noexcept { return environment_.trial_id; }
  const env::TrialEnvironment& environment() const noexcept { return environment_; }
  // Where the trainer keeps data shared by trials: <experiment dir>, or "." outside a trial.
  std::filesystem::path experiment_dir() const;
  const std::optional<std::filesystem::path>& checkpoint_dir() const noexcept {
    return environment_.checkpoint_dir;
  }
  // The checkpoint to resume from; nullopt on a fresh start.
  const std::optional<std::filesystem::path>& latest_checkpoint() const noexcept {
    return environment_.latest_checkpoint;
  }

  void report_training(std::int64_t step, const Metrics& metrics) { report(false, step, metrics); }
  void report_validation(std::int64_t step, const Metrics& metrics) { report(true, step, metrics); }
  void finish();

 private:
  void report(bool validation, std::int64_t step, const Metrics& metrics);
  // Runs `action` on rank 0, then agrees on the outcome with every rank (see above).
  void on_rank0(const char* what, const std::function<void()>& action);

  env::TrialEnvironment environment_;
  Hparams hparams_;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  std::unique_ptr<comm::MpiRuntime> mpi_;            // declared first: destroyed last
  std::unique_ptr<comm::Communicator> communicator_;
  std::unique_ptr<comm::FusedAllreduce> fused_;
  std::unique_ptr<detail::PreemptionSignals> signals_;
  std::unique_ptr<detail::TrialRecorder> recorder_;  // rank 0 inside a trial only
};

}  // namespace dlx
