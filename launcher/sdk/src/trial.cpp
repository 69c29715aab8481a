#include "dlx/trial.hpp"

#include <unistd.h>

#include <array>
#include <cstdio>

#include <fmt/format.h>

#include "dlx/comm/backends.hpp"
#include "dlx/comm/mpi_check.hpp"
#include "dlx/comm/mpi_runtime.hpp"
#include "dlx/env/environment.hpp"
#include "dlx/slurm/task_placement.hpp"
#include "metric_log.hpp"
#include "trial_recorder.hpp"

namespace dlx {

namespace {

std::string host_name() {
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) return "unknown-host";
  return host.data();
}

std::chrono::seconds comm_timeout(const env::EnvMap& env) {
  auto seconds = env::lookup_int(env, "DLX_COMM_TIMEOUT_S");
  return std::chrono::seconds(seconds && *seconds > 0 ? *seconds : 300);
}

}  // namespace

Trial::Trial(TrialOptions options) {
  mpi_ = std::make_unique<comm::MpiRuntime>();
  const env::EnvMap env = env::current_environment();
  environment_ = env::read_trial_environment(env);
  if (options.hparams_file && !env::lookup(env, "DLX_HPARAMS")) {
    env::EnvMap with_file = env;
    with_file["DLX_HPARAMS_FILE"] = options.hparams_file->string();
    environment_.hparams = env::read_trial_environment(with_file).hparams;
  }
  hparams_ = Hparams(environment_.hparams);
  const auto placement = slurm::read_task_placement(env, host_name());
  local_rank_ = placement.local_rank;

  comm::BackendOptions backend;
  backend.local_rank = local_rank_;
  backend.forced = env::lookup(env, "DLX_COMM_BACKEND").value_or("");
  backend.timeout = comm_timeout(env);
  backend.announce = options.announce_backend;
  communicator_ = comm::make_communicator(MPI_COMM_WORLD, backend);

  const auto nodes = comm::allgather_strings(placement.node_name, MPI_COMM_WORLD);
  if (environment_.in_trial()) {
    on_rank0("create the trial record", [&] {
      recorder_ = std::make_unique<detail::TrialRecorder>(
          environment_, env::experiment_name(*environment_.experiment_dir), nodes);
    });
  }
}

Trial::~Trial() = default;

int Trial::rank() const noexcept { return communicator_->rank(); }
int Trial::size() const noexcept { return communicator_->size(); }

std::filesystem::path Trial::experiment_dir() const {
  return environment_.experiment_dir.value_or(std::filesystem::path("."));
}

void Trial::on_rank0(const char* what, const std::function<void()>& action) {
  std::string failure;
  if (rank() == 0) {
    try {
      action();
    } catch (const std::exception& error) {
      failure = error.what();
    }
  }
  int failed = failure.empty() ? 0 : 1;
  DLX_MPI_CHECK(MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD));
  if (failed != 0) {
    throw TrialError(rank() == 0 ? fmt::format("dlx: cannot {}: {}", what, failure)
                                 : fmt::format("dlx: rank 0 could not {} (see its error)", what));
  }
}

void Trial::report(bool validation, std::int64_t step, const Metrics& metrics) {
  const char* kind = validation ? "validation" : "training";
  if (rank() == 0) {
    const auto trial_id = in_trial() ? std::optional(id()) : std::nullopt;
    std::printf("%s\n", detail::format_metric_line(trial_id, step, kind, metrics).c_str());
    std::fflush(stdout);
  }
  if (!in_trial()) return;
  on_rank0(validation ? "record validation metrics" : "record training metrics", [&] {
    recorder_->report(validation ? detail::MetricKind::validation : detail::MetricKind::training,
                      step, metrics);
  });
}

void Trial::finish() {
  if (!in_trial()) return;
  on_rank0("mark the trial completed", [&] { recorder_->finish(); });
}

}  // namespace dlx
