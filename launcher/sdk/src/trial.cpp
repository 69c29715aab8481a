// SPDX-License-Identifier: Apache-2.0
#include "dlx/trial.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dlx/common/host_name.hpp"
#include "dlx/record/metrics_log.hpp"
#include "dlx/comm/backends.hpp"
#include "dlx/comm/mpi_check.hpp"
#include "dlx/comm/mpi_runtime.hpp"
#include "dlx/comm/preflight.hpp"
#include "dlx/config/display_text.hpp"
#include "dlx/env/environment.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/slurm/task_placement.hpp"
#include "checkpointer.hpp"
#include "metric_log.hpp"
#include "preemption.hpp"
#include "trial_recorder.hpp"

namespace dlx {

namespace {

std::chrono::seconds comm_timeout(const env::EnvMap& env) {
  auto seconds = env::lookup_int(env, "DLX_COMM_TIMEOUT_S");
  return std::chrono::seconds(seconds && *seconds > 0 ? *seconds : 300);
}

std::size_t bucket_bytes(const TrialOptions& options, const env::EnvMap& env) {
  if (options.bucket_bytes) return *options.bucket_bytes;
  if (auto value = env::lookup(env, "DLX_BUCKET_BYTES"); value && !value->empty()) {
    return static_cast<std::size_t>(env::parse_non_negative("DLX_BUCKET_BYTES", *value));
  }
  return comm::kDefaultBucketBytes;
}

// Tensors from this size on skip the fusion buffer: DLX_FUSION_ALONE_BYTES, else the default.
std::size_t alone_bytes(const env::EnvMap& env) {
  if (auto value = env::lookup(env, "DLX_FUSION_ALONE_BYTES"); value && !value->empty()) {
    return static_cast<std::size_t>(env::parse_non_negative("DLX_FUSION_ALONE_BYTES", *value));
  }
  return comm::kDefaultAloneBytes;
}

// This process's context: its environment (TrialOptions::hparams_file standing in for an unset
// DLX_HPARAMS) and its placement.
env::TrialContext read_context(const TrialOptions& options) {
  env::EnvMap env = env::current_environment();
  if (options.hparams_file && !env::lookup(env, "DLX_HPARAMS")) {
    env["DLX_HPARAMS_FILE"] = options.hparams_file->string();
  }
  auto placement = slurm::read_task_placement(env, host_name());
  return env::TrialContext(std::move(env), std::move(placement));
}

// The nodes of a framework program's step, for the record (no MPI to gather them).
std::string step_nodes(const env::EnvMap& env, const std::string& own) {
  return env::lookup_first(env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"}).value_or(own);
}

// A trial opened in a Slurm job but not under dlx-launch, which always sets DLX_TARGET_LENGTH in
// a trial: a job script that runs the trainer itself (`python3 train.py`, with dlx installed where
// Python finds it) instead of `srun dlx-launch`. It trains, and the plugin's variables make it the
// right trial for single, grid and random; but nothing runs the experiment's code snapshot, hands
// it the searcher's lengths, restarts it after a crash or keeps its log for `dlx logs`. Said on
// rank 0's stderr, since only the job's output can show it.
void warn_outside_launch(const env::TrialContext& context) {
  const auto& trial = context.trial();
  if (!trial.in_trial() || trial.slurm_job_id.empty() || env::lookup(context.env(), "DLX_TARGET_LENGTH")) return;
  fmt::print(stderr,
             "dlx: warning: trial {} was not started by dlx-launch (does the job script run the trainer "
             "itself?): it runs, but not the experiment's code snapshot, not to the searcher's lengths, "
             "without restarts after a crash and without its log for `dlx logs`. Run the trainer as "
             "`srun dlx-launch` in the job script (examples/job.sh)\n",
             trial.trial_id);
}

}  // namespace

Trial::Trial(TrialOptions options) : context_(read_context(options)), hparams_(context_.trial().hparams) {
  const env::EnvMap& env = context_.env();
  const env::TaskPlacement& placement = context_.placement();
  const std::string host = host_name();
  local_rank_ = placement.local_rank;

  std::string nodes;
  if (options.communicator) {
    mpi_ = std::make_unique<comm::MpiRuntime>();
    const auto timeout = comm_timeout(env);
    // Messages name the host and, where Slurm's node name differs from it, the node too.
    const std::string where = placement.node_name.empty() || placement.node_name == host
                                  ? host
                                  : host + " (Slurm node " + placement.node_name + ")";
    comm::check_connectivity(MPI_COMM_WORLD, timeout, where);  // no hang on an unreachable rank
    comm::BackendOptions backend;
    backend.local_rank = local_rank_;
    backend.forced = env::lookup(env, "DLX_COMM_BACKEND").value_or("");
    backend.timeout = timeout;
    backend.announce = options.announce_backend;
    communicator_ = comm::make_communicator(MPI_COMM_WORLD, backend);
    fused_ = std::make_unique<comm::FusedAllreduce>(*communicator_, bucket_bytes(options, env), alone_bytes(env));
    rank_ = communicator_->rank();
    size_ = communicator_->size();
    const auto all = comm::allgather_strings(placement.node_name, MPI_COMM_WORLD);
    nodes = fmt::format("{}", fmt::join(all, ","));
  } else {
    // dlx-launch's torchrun variables first (what the framework itself uses), then Slurm/mpirun.
    rank_ = env::lookup_int(env, "RANK").value_or(placement.rank);
    size_ = env::lookup_int(env, "WORLD_SIZE").value_or(placement.world_size);
    local_rank_ = env::lookup_int(env, "LOCAL_RANK").value_or(placement.local_rank);
    if (rank_ >= size_) {
      throw TrialError(fmt::format("dlx: RANK={} is not below WORLD_SIZE={}", rank_, size_));
    }
    nodes = step_nodes(env, placement.node_name);
  }
  // A name read with a default the experiment does not define is a warning in the trial's log
  // (rank 0's stderr), when there are hyperparameters to check the name against.
  if (rank_ == 0 && (context_.trial().in_trial() || !hparams_.values().empty())) hparams_.warn_on(stderr);
  if (rank_ == 0) warn_outside_launch(context_);
  // After MPI's own start-up, so these handlers are the ones in place.
  if (!options.checkpoint_signals.empty()) {
    signals_ = std::make_unique<detail::PreemptionSignals>(options.checkpoint_signals);
  }
  if (context_.trial().in_trial()) {
    on_rank0("create the trial record", [&] {
      auto metrics = detail::MetricsPipelineOptions::from_environment();
      metrics.print_as_trial = context_.trial().trial_id;
      // Records keep the experiment's flat names (rank 0 alone writes records and checkpoints):
      // the context names them by the snapshot's name list as it reads it.
      auto name = context_.experiment_name();
      recorder_ = std::make_unique<detail::TrialRecorder>(context_.trial(), std::move(name), size_,
                                                          nodes, metrics);
    });
    // Each hyperparameter warning goes into trial.h5 as it is said.
    hparams_.on_warning([this](const Hparams::NameWarning& warning) {
      record_hparam_warning(warning.kind, warning.name, warning.message);
    });
    install_config_error_exit();
  }
}

Trial::~Trial() = default;

void Trial::record_hparam_warning(const std::string& kind, const std::string& name, const std::string& message) {
  if (kind != "default" && kind != "unread") {
    throw TrialError(fmt::format("dlx: hyperparameter warning kind '{}' is not default or unread",
                                 config::abbreviated(kind)));
  }
  if (!recorder_) return;
  try {
    recorder_->note_hparam_warning({kind, name, message});
  } catch (const std::exception& error) {
    fmt::print(stderr, "dlx: warning: cannot keep a hyperparameter warning in trial.h5: {}\n", error.what());
  }
}

comm::Communicator& Trial::communicator() {
  if (!communicator_) {
    throw TrialError("dlx: this trial was created without a communicator "
                     "(TrialOptions::communicator = false): use the framework's own collectives");
  }
  return *communicator_;
}

comm::FusedAllreduce& Trial::fused_allreduce() {
  communicator();  // throws without one
  return *fused_;
}

void Trial::allreduce(std::span<const comm::Tensor> tensors) {
  fused_allreduce().allreduce_sum(tensors);
}

void Trial::broadcast_parameters(std::span<const comm::Tensor> tensors, int root) {
  auto& comm = communicator();
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].on_device()) {  // refused on every rank alike, before any broadcast starts
      throw TrialError(fmt::format(
          "dlx: broadcast_parameters takes host tensors, but tensor {} of {} is in GPU memory: "
          "broadcast the initial weights before moving them to the GPU, or copy them to the host "
          "first", i, tensors.size()));
    }
  }
  for (const auto& tensor : tensors) {
    comm.broadcast(std::span<std::byte>(static_cast<std::byte*>(tensor.data), tensor.bytes()),
                   root);
  }
}

bool Trial::should_checkpoint_and_exit() {
  std::int32_t requested = detail::PreemptionSignals::received() != 0 ? 1 : 0;
  if (communicator_) communicator_->allreduce_sum(std::span<std::int32_t>(&requested, 1));
  return requested > 0;
}

int Trial::checkpoint_signal() const noexcept { return detail::PreemptionSignals::received(); }

void Trial::note_checkpoint_signal(int signal_number) {
  if (signal_number <= 0 || signal_number > 64) {
    throw TrialError(fmt::format("dlx: note_checkpoint_signal({}): not a signal number; pass the "
                                 "largest checkpoint_signal() of the ranks (when it is not 0)",
                                 signal_number));
  }
  agreed_signal_ = std::max(agreed_signal_, signal_number);
}

std::filesystem::path Trial::experiment_dir() const {
  return context_.trial().experiment_dir.value_or(std::filesystem::path("."));
}

void Trial::on_rank0(const char* what, const std::function<void()>& action) {
  std::string failure;
  int failed = 0;  // 1: failed, 2: a configuration error (every rank throws it as one)
  if (rank() == 0) {
    try {
      action();
    } catch (const std::exception& error) {
      failure = error.what();
      failed = is_config_error(error) ? 2 : 1;
    }
  }
  if (mpi_) DLX_MPI_CHECK(MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD));
  if (failed == 0) return;
  auto message = rank() == 0 ? fmt::format("dlx: cannot {}: {}", what, failure)
                             : fmt::format("dlx: rank 0 could not {} (see its error)", what);
  if (failed == 2) throw TrialConfigError(message);
  throw TrialError(message);
}

void Trial::report(bool validation, std::int64_t step, const Metrics& metrics) {
  // Every rank checks a name the first time it sees it, so that a bad one throws everywhere
  // (every rank reports the same names) without any communication per report. Most reports
  // repeat the previous one's names: compared in order, they need no lookup.
  if (!detail::has_names(metrics, last_reported_names_)) check_metric_names(validation, step, metrics);
  if (rank() != 0) return;
  if (!recorder_) {  // outside a trial: the line is all there is
    std::printf("%s\n", detail::format_metric_line(std::nullopt, step,
                                                   validation ? "validation" : "training", metrics)
                            .c_str());
    std::fflush(stdout);
    return;
  }
  recorder_->report(validation ? detail::MetricKind::validation : detail::MetricKind::training,
                    step, metrics);
}

std::optional<std::string> Trial::metric_name_refusal(const std::string& name) {
  if (reported_names_.contains(name)) return std::nullopt;
  auto problem = record::metric_name_problem(name);
  if (!problem && reported_names_.size() >= record::kMaxMetricNames)
    problem = fmt::format("'{}' would be metric name {}, over the limit of {} names a trial "
                          "reports (a value in a name, such as a step or a sample id?)",
                          config::abbreviated(name), reported_names_.size() + 1,
                          record::kMaxMetricNames);
  if (!problem) reported_names_.insert(name);
  return problem;
}

void Trial::check_metric_names(bool validation, std::int64_t step, const Metrics& metrics) {
  for (const auto& [name, value] : metrics) {
    if (auto problem = metric_name_refusal(name))
      throw TrialConfigError(fmt::format("dlx: cannot report {} metrics at step {}: {}",
                                         validation ? "validation" : "training", step, *problem));
  }
  last_reported_names_.clear();
  for (const auto& [name, value] : metrics) last_reported_names_.push_back(name);
}

Metrics MetricNames::with_values(std::span<const double> values) const {
  Metrics metrics;
  for (std::size_t i = 0; i < names_.size() && i < values.size(); ++i) metrics[names_[i]] = values[i];
  return metrics;
}

MetricNames Trial::metric_names(std::vector<std::string> names) {
  std::set<std::string_view> seen;
  for (const auto& name : names) {
    if (!seen.insert(name).second)
      throw TrialConfigError(fmt::format("dlx: cannot register metric names: '{}' is given twice",
                                         config::abbreviated(name)));
    if (auto problem = metric_name_refusal(name))
      throw TrialConfigError(fmt::format("dlx: cannot register metric names: {}", *problem));
  }
  MetricNames registered;
  registered.owner_ = this;
  if (rank() == 0 && recorder_) registered.ids_ = recorder_->metric_ids(names);
  registered.names_ = std::move(names);
  return registered;
}

void Trial::report(bool validation, std::int64_t step, const MetricNames& names, std::span<const double> values) {
  if (names.owner_ != this)
    throw TrialError("dlx: these metric names were registered with another dlx::Trial (metric_names)");
  if (values.size() != names.size())
    throw TrialConfigError(fmt::format("dlx: cannot report {} metrics at step {}: {} values for the {} names registered",
                                 validation ? "validation" : "training", step, values.size(), names.size()));
  if (rank() != 0) return;
  if (!recorder_) {  // outside a trial: the line is all there is
    report(validation, step, names.with_values(values));
    return;
  }
  recorder_->report_values(validation ? detail::MetricKind::validation : detail::MetricKind::training, step,
                           names.ids_, values);
}

Next Trial::report_validation(std::int64_t step, const MetricNames& names, std::span<const double> values) {
  report(true, step, names, values);
  // A map for the searcher's question only (it looks the searcher metric up; at most once per
  // target length, when it asks at all).
  return ask_searcher(step, names.with_values(values));
}

void Trial::finish() {
  if (checkpointer_) wait_for_checkpoint(std::chrono::steady_clock::duration::max());
  if (!in_trial()) return;
  hparams_.check_unread();  // the names this trial never read (rank 0: warnings are on there)
  end_before_target();
  const char* state = searcher_next_ == Next::stop    ? "stopped"
                      : searcher_next_ == Next::pause ? "paused"
                                                      : "completed";
  on_rank0("mark the trial ended", [&] { recorder_->finish(state, searcher_reason_); });
  settle_pause();
}

}  // namespace dlx
