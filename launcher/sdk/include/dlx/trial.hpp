#pragma once
// libdlx: what a C++ trainer links. One Trial per process, created after nothing else touched MPI
// (or after the program's own MPI_Init: then the program also finalises).
//
//   dlx::Trial trial;                                    // MPI bring-up, DLX_* environment
//   auto lr = trial.hparam<double>("learning_rate");
//   auto& comm = trial.communicator();                  // NCCL on GPUs, else MPI
//   comm.allreduce_sum(gradients);
//   trial.report_validation(step, {{"accuracy", acc}});  // every rank, same values
//   trial.finish();                                      // state "completed"
//
// Inside a dlx trial (DLX_EXPERIMENT_DIR set) rank 0 keeps trials/<id>/trial.h5: created (or, on
// a requeue, loaded with its history) by the constructor, appended to by every report, marked
// completed by finish(). Outside a trial nothing is written and hyperparameters come from
// DLX_HPARAMS, DLX_HPARAMS_FILE or TrialOptions::hparams_file (else none: use defaults).
//
// The constructor, report_*() and finish() are collective: every rank calls them, in the same
// order. Rank 0 alone writes, then tells the others whether it worked, so a failed write throws
// TrialError on every rank instead of leaving the other ranks waiting.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dlx/comm/communicator.hpp"
#include "dlx/common/error.hpp"
#include "dlx/env/trial_environment.hpp"
#include "dlx/hparams.hpp"

namespace dlx::comm {
class MpiRuntime;
}

namespace dlx {

namespace detail {
class TrialRecorder;
}

class TrialError : public Error {
 public:
  using Error::Error;
};

using Metrics = std::map<std::string, double>;

struct TrialOptions {
  std::optional<std::filesystem::path> hparams_file;  // used when DLX_HPARAMS is not set
  bool announce_backend = true;  // rank 0 says when it falls back to the MPI backend
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

  comm::Communicator& communicator() noexcept { return *communicator_; }
  int rank() const noexcept;
  int size() const noexcept;
  int local_rank() const noexcept { return local_rank_; }

  bool in_trial() const noexcept { return environment_.in_trial(); }
  std::int64_t id() const noexcept { return environment_.trial_id; }
  const env::TrialEnvironment& environment() const noexcept { return environment_; }
  // Where the trainer keeps data shared by trials: <experiment dir>, or "." outside a trial.
  std::filesystem::path experiment_dir() const;

  void report_training(std::int64_t step, const Metrics& metrics) { report(false, step, metrics); }
  void report_validation(std::int64_t step, const Metrics& metrics) { report(true, step, metrics); }
  void finish();

 private:
  void report(bool validation, std::int64_t step, const Metrics& metrics);
  // Runs `action` on rank 0, then agrees on the outcome with every rank (see above).
  void on_rank0(const char* what, const std::function<void()>& action);

  env::TrialEnvironment environment_;
  Hparams hparams_;
  int local_rank_ = 0;
  std::unique_ptr<comm::MpiRuntime> mpi_;            // declared first: destroyed last
  std::unique_ptr<comm::Communicator> communicator_;
  std::unique_ptr<detail::TrialRecorder> recorder_;  // rank 0 inside a trial only
};

}  // namespace dlx
