// SPDX-License-Identifier: Apache-2.0
// The Trial's checkpoints: resume, periodic saves and the checkpoint-and-exit path.
//
// The preemption protocol (docs/fault-tolerance.md has the Slurm side and the verified facts):
//
//   1. Notice. Slurm signals the step's tasks: SIGTERM at preemption (then SIGKILL after the
//      partition's GraceTime), at `scontrol requeue` and at the time limit (then SIGKILL after
//      KillWait), and the --signal the plugin adds (USR2 a lead time before the time limit, and
//      at once on preemption with SlurmctldParameters=preempt_send_user_signal). dlx-launch
//      forwards them to the trainer; libdlx's handlers (preemption.cpp) only set a flag.
//   2. Agreement. The trainer calls should_checkpoint_and_exit() at the same point of every step
//      on every rank: a one-integer allreduce of the flags. A signal that reaches any rank before
//      that call makes every rank see true at the same step; one that arrives after it is seen at
//      the next step. So all ranks stop after the same step, with no extra message.
//   3. Save. checkpoint_and_exit(state): unless a periodic save already wrote this step, every
//      rank gathers its per-rank state (RNG streams, shard order) to rank 0, which snapshots the
//      tensors and hands them to its CheckpointWriter (async: a background thread writes the
//      temporary file, fsyncs, renames, fsyncs the directory, then applies retention).
//   4. Deadline. Rank 0 waits for that save (and any earlier one still in flight) up to the
//      deadline (DLX_EXIT_DEADLINE_S, else 30 s; set it below the partition's GraceTime). A late
//      or failed save is reported and left behind: a temporary file never counts as a checkpoint,
//      so the previous checkpoint stays the newest valid one.
//   5. Exit 85. Rank 0 writes stop_reason "requeue: ..." into trial.h5 (state stays "running")
//      and every rank returns kRequeueExitCode; dlx-launch passes it through, srun and the batch
//      script exit 85, and Slurm's RequeueExit=85 requeues the array task (SLURM_RESTART_COUNT+1).
//   6. Resume. The requeued run's resume(): dlx-launch has set DLX_LATEST_CHECKPOINT from
//      latest-valid discovery (or a searcher decision named one: another trial's file is taken
//      only when it is this trial's start checkpoint in the journal, resume_choice.cpp); without
//      it rank 0 runs the discovery itself. Rank 0 loads and verifies the file (format, trial,
//      metadata checksum, every tensor CRC), broadcasts its path, and every other rank loads and
//      verifies it too.
//      Rank 0 drops metrics recorded after its step (the resumed run reports them again) and
//      completes the restart event (cause from the previous stop_reason, steps and seconds lost).
//
// Crashes (any other exit, a killed rank) are dlx-launch's side: trial_outcome.cpp counts them
// against max_restarts.
#include <signal.h>
#include <string.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>

#include <fmt/format.h>

#include "checkpointer.hpp"
#include "dlx/common/directories.hpp"
#include "dlx/common/signal_name.hpp"
#include "dlx/comm/mpi_check.hpp"
#include "dlx/comm/mpi_runtime.hpp"
#include "dlx/env/environment.hpp"
#include "dlx/trial.hpp"
#include "preemption.hpp"
#include "rank_state.hpp"
#include "resume_choice.hpp"
#include "resume_rendezvous.hpp"
#include "trial_recorder.hpp"

namespace dlx {

namespace {

constexpr auto kDefaultExitDeadline = std::chrono::seconds(30);

void log(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(stderr);
}

// Every rank learns whether any rank failed; the failing rank's message, else a pointer to it.
void agree(bool with_mpi, const std::string& failure, const std::string& what) {
  int failed = failure.empty() ? 0 : 1;
  if (with_mpi) {
    DLX_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  }
  if (failed == 0) return;
  throw CheckpointingError(failure.empty()
                               ? fmt::format("dlx: another rank could not {} (see its error)", what)
                               : failure);
}

std::string broadcast_text(bool with_mpi, std::string text) {
  if (!with_mpi) return text;
  auto length = static_cast<unsigned long long>(text.size());
  DLX_MPI_CHECK(MPI_Bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD));
  text.resize(static_cast<std::size_t>(length));
  DLX_MPI_CHECK(MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, 0, MPI_COMM_WORLD));
  return text;
}

std::string signal_or_request_name(int signal_number) {
  if (signal_number == 0) return "a checkpoint request";
  return signal_name(signal_number);
}

std::chrono::seconds exit_deadline(std::optional<std::chrono::seconds> given, const env::EnvMap& env) {
  if (given) return *given;
  if (auto seconds = env::lookup_int(env, "DLX_EXIT_DEADLINE_S")) {
    return std::chrono::seconds(*seconds);
  }
  return kDefaultExitDeadline;
}

bool has_rank_state(const checkpoint::Checkpoint& checkpoint) {
  const auto per_rank = [](const std::string& name) {
    return name.starts_with("ranks/") || name.starts_with("rng/rank-");
  };
  for (const auto& tensor : checkpoint.tensors) {
    if (per_rank(tensor.name)) return true;
  }
  for (const auto& tensor : checkpoint.deferred) {
    if (per_rank(tensor.name)) return true;
  }
  return false;
}

// How the ranks of one resume() learn rank 0's choice: through MPI, or without a communicator
// through the trial's directory (resume_rendezvous.hpp), or not at all (a single rank).
struct ResumeRanks {
  int rank = 0;
  bool with_mpi = false;
  std::optional<detail::ResumeRendezvous> rendezvous;
};

// Rank 0 chooses the checkpoint (`choose`: its path, loaded, or an empty path for a fresh start)
// and every rank learns its path; the others have not loaded it yet.
detail::Chosen agree_on_checkpoint(const ResumeRanks& ranks, const std::function<detail::Chosen()>& choose,
                                   const std::filesystem::path& directory, const env::EnvMap& env) {
  detail::Chosen chosen;
  std::string failure;
  if (ranks.rank == 0) {
    try {
      chosen = choose();
    } catch (const std::exception& error) {
      failure = fmt::format("dlx: cannot look for a checkpoint to resume from in {}: {}", directory.string(),
                            error.what());
    }
    if (ranks.rendezvous) {
      try {
        ranks.rendezvous->publish({chosen.path, failure});
      } catch (const std::exception& error) {
        // The other ranks wait for nothing: they end at their limit, or with this rank's exit.
        throw CheckpointingError(fmt::format(
            "dlx: cannot tell the other ranks which checkpoint to resume from ({}): {}",
            ranks.rendezvous->path().string(), error.what()));
      }
    }
  } else if (ranks.rendezvous) {
    const auto told = ranks.rendezvous->wait(detail::ResumeRendezvous::wait_limit(env));
    if (!told.error.empty()) {
      throw CheckpointingError(fmt::format("dlx: rank 0 could not choose a checkpoint: {}", told.error));
    }
    chosen.path = told.checkpoint;
  }
  agree(ranks.with_mpi, failure, "look for a checkpoint to resume from");
  chosen.path = broadcast_text(ranks.with_mpi, chosen.path.string());
  return chosen;
}

// The other ranks load the checkpoint rank 0 chose (rank 0 loaded it as it chose).
void load_chosen_elsewhere(const ResumeRanks& ranks, detail::Chosen& chosen, const detail::CheckpointSettings& settings,
                           const checkpoint::Deferral& defer) {
  std::string failure;
  if (ranks.rank != 0 && (ranks.with_mpi || ranks.rendezvous)) {
    try {
      chosen.checkpoint =
          checkpoint::load_checkpoint(chosen.path, detail::expectation_for(chosen.path, settings), defer);
    } catch (const std::exception& error) {
      failure = fmt::format("dlx: rank {} cannot load checkpoint {}: {}", ranks.rank, chosen.path.string(),
                            error.what());
      if (!ranks.with_mpi) throw CheckpointingError(failure);
    }
  }
  agree(ranks.with_mpi, failure, "load checkpoint " + chosen.path.string());
}

}  // namespace

// ---------------------------------------------------------------- names and ResumedState

std::string rank_tensor_name(int rank, std::string_view name) {
  return fmt::format("ranks/{}/{}", rank, name);
}

std::string rng_tensor_name(int rank, std::string_view name) {
  return fmt::format("rng/rank-{}/{}", rank, name);
}

ResumedState::ResumedState(checkpoint::Checkpoint checkpoint, std::filesystem::path path, int rank)
    : checkpoint_(std::move(checkpoint)), path_(std::move(path)), rank_(rank) {}

std::int64_t ResumedState::data_cursor() const {
  const auto& value = state("data_cursor");
  if (const auto* cursor = std::get_if<std::int64_t>(&value)) return *cursor;
  throw CheckpointingError(fmt::format("dlx: {}: state 'data_cursor' is not an integer",
                                       path_.string()));
}

const checkpoint::Tensor& ResumedState::tensor(std::string_view name) const {
  if (const auto* found = checkpoint_.find(name)) return *found;
  if (checkpoint_.find_deferred(name)) {
    throw CheckpointingError(fmt::format("dlx: {}: tensor '{}' was deferred by the resume (its bytes "
                                         "stay in the file): read it with restore()", path_.string(),
                                         name));
  }
  throw CheckpointingError(fmt::format("dlx: {} has no tensor '{}' (saved with a different "
                                       "trainer version?)", path_.string(), name));
}

const checkpoint::Tensor& ResumedState::rank_tensor(std::string_view name) const {
  return tensor(rank_tensor_name(rank_, name));
}

std::string ResumedState::rng_stream(std::string_view name) const {
  const auto& stream = tensor(rng_tensor_name(rank_, name));
  return {reinterpret_cast<const char*>(stream.bytes.data()), stream.bytes.size()};
}

const checkpoint::StateValue& ResumedState::state(std::string_view name) const {
  auto found = checkpoint_.state.find(std::string(name));
  if (found == checkpoint_.state.end()) {
    throw CheckpointingError(fmt::format("dlx: {} has no state value '{}'", path_.string(), name));
  }
  return found->second;
}

void ResumedState::copy_out(std::string_view name, std::span<std::byte> out, std::size_t element,
                            bool floating) const {
  const auto* held = checkpoint_.find(name);
  const auto* deferred = held ? nullptr : checkpoint_.find_deferred(name);
  if (!held && !deferred) static_cast<void>(tensor(name));  // throws: no such tensor
  const auto dtype = held ? held->dtype : deferred->dtype;
  const auto bytes = held ? held->bytes.size() : deferred->bytes;
  const bool stored_floating = dtype == checkpoint::DType::float32 ||
                               dtype == checkpoint::DType::float64 ||
                               dtype == checkpoint::DType::float16 ||
                               dtype == checkpoint::DType::bfloat16;
  if (checkpoint::dtype_size(dtype) != element || stored_floating != floating) {
    throw CheckpointingError(fmt::format(
        "dlx: {}: tensor '{}' is {}, which does not match the {}-byte {} buffer to restore it "
        "into", path_.string(), name, checkpoint::dtype_name(dtype), element,
        floating ? "floating-point" : "integer"));
  }
  if (bytes != out.size()) {
    throw CheckpointingError(fmt::format(
        "dlx: {}: tensor '{}' has {} elements but the buffer to restore it into has {} (is the "
        "model configured as when it was saved?)", path_.string(), name, bytes / element,
        out.size() / element));
  }
  if (held) {
    std::memcpy(out.data(), held->bytes.data(), out.size());
    return;
  }
  try {
    checkpoint_.read_into(name, out);
  } catch (const checkpoint::CheckpointError& error) {
    throw CheckpointingError(fmt::format("dlx: tensor '{}' could not be read into place (the buffer "
                                         "holds part of it): {}", name, error.what()));
  }
}

// ---------------------------------------------------------------- settings and Checkpointer

namespace detail {

CheckpointSettings read_checkpoint_settings(env::TrialContext& context) {
  CheckpointSettings settings;
  settings.directory = context.trial().checkpoint_dir.value_or(".");
  settings.expect.trial_id = context.trial().trial_id;
  if (context.in_trial()) {
    settings.expect.experiment = context.experiment_name();
    if (const auto* experiment = context.experiment()) {
      settings.policy = experiment->checkpoint;
      settings.retention = checkpoint::RetentionPolicy{
          .keep_latest = experiment->checkpoint.keep_latest,
          .keep_best = experiment->checkpoint.keep_best,
          .keep_experiment_best = experiment->checkpoint.keep_experiment_best,
          .metric = experiment->searcher.metric,
          .smaller_is_better = experiment->searcher.smaller_is_better};
    }
  }
  return settings;
}

Checkpointer::Checkpointer(CheckpointSettings settings, bool writes)
    : settings_(std::move(settings)) {
  if (!writes) return;
  dlx::create_directories_with_mode(settings_.directory);
  writer_ = std::make_unique<checkpoint::CheckpointWriter>(writer_options());
}

checkpoint::WriterOptions Checkpointer::writer_options() const {
  return checkpoint::WriterOptions{
      .directory = settings_.directory,
      .async = settings_.policy.async,
      .retention = settings_.retention,
      .referenced_steps = {},
      .searcher_references = [shared = references_]() {
        std::lock_guard lock(shared->mutex);
        return shared->steps;
      }};
}

void Checkpointer::set_searcher_references(std::optional<checkpoint::ReferencedSteps> references) {
  std::lock_guard lock(references_->mutex);
  references_->steps = std::move(references);
}

Checkpointer::~Checkpointer() = default;

void Checkpointer::abandon_writer() {
  // Deliberately leaked: its destructor would wait for the late save without a deadline. The
  // background thread finishes or dies with the process; its temporary file is never mistaken
  // for a checkpoint.
  static_cast<void>(writer_.release());
  writer_ = std::make_unique<checkpoint::CheckpointWriter>(writer_options());
}

}  // namespace detail

// ---------------------------------------------------------------- Trial

detail::Checkpointer& Trial::checkpointer() {
  if (!checkpointer_) {
    if (!checkpointing_enabled()) {
      throw CheckpointingError(
          "dlx: checkpoints need DLX_CHECKPOINT_DIR, which is not set (inside a dlx trial the "
          "plugin sets it; outside one, export DLX_CHECKPOINT_DIR=DIR)");
    }
    checkpointer_ = std::make_unique<detail::Checkpointer>(
        detail::read_checkpoint_settings(context_), rank_ == 0);
  }
  return *checkpointer_;
}

std::optional<ResumedState> Trial::resume(RankStateRule rule, const checkpoint::Deferral& defer) {
  if (!checkpointing_enabled()) return std::nullopt;
  auto& checkpoints = checkpointer();
  ResumeRanks ranks{.rank = rank_, .with_mpi = mpi_ != nullptr, .rendezvous = std::nullopt};
  // Without a communicator the ranks meet in the trial's directory (resume_rendezvous.hpp).
  if (!ranks.with_mpi && size_ > 1) {
    if (!in_trial()) {
      throw CheckpointingError(
          "dlx: resume() on several ranks without a communicator needs a dlx trial (the ranks "
          "agree on the checkpoint through the trial's directory): run under srun dlx-launch");
    }
    ranks.rendezvous = detail::ResumeRendezvous::for_run(context_.trial().record_path().parent_path(),
                                                         context_.env(), resume_calls_);
  }
  ++resume_calls_;
  auto chosen = agree_on_checkpoint(
      ranks,
      [&] {
        return detail::choose_checkpoint(context_.trial(), checkpoints.settings(),
                                         [this] { return searcher_start_checkpoint(); }, defer);
      },
      checkpoints.settings().directory, context_.env());
  if (chosen.path.empty()) return std::nullopt;  // a fresh start
  load_chosen_elsewhere(ranks, chosen, checkpoints.settings(), defer);
  const auto& path = chosen.path;
  const auto& metadata = chosen.checkpoint->metadata;
  if (rule == RankStateRule::refuse_other_world_size && metadata.world_size != size_ &&
      has_rank_state(*chosen.checkpoint)) {
    throw CheckpointingError(fmt::format(
        "dlx: checkpoint {} holds per-rank state of {} ranks but this run has {}: resume it on "
        "{} ranks (the experiment's resources), or start the trial afresh",
        path.string(), metadata.world_size, size_, metadata.world_size));
  }
  if (rank_ == 0) {
    log(fmt::format("dlx: {} {} (step {}, epoch {}{})",
                    chosen.started_from ? "starting from" : "resuming from", path.string(),
                    metadata.step, metadata.epoch,
                    chosen.started_from ? fmt::format(", trial {}: the searcher's start checkpoint",
                                                      chosen.started_from->trial_id)
                                        : std::string()));
  }
  if (in_trial()) {
    on_rank0("record the resume in the trial record", [&] {
      if (chosen.started_from) recorder_->note_start(*chosen.started_from);
      recorder_->note_resume(metadata.step, metadata.created_unix);
    });
  }
  checkpoints.last_saved_step = metadata.step;
  return ResumedState(std::move(*chosen.checkpoint), path, rank_);
}

void Trial::note_resumed_from(const ResumedState& resumed) {
  if (rank_ != 0) return;
  const auto& metadata = resumed.checkpoint().metadata;
  log(fmt::format("dlx: resuming from {} (step {}, epoch {})", resumed.path().string(), metadata.step,
                  metadata.epoch));
  if (in_trial() && recorder_) recorder_->note_resume(metadata.step, metadata.created_unix);
}

bool Trial::checkpoint_due(std::int64_t step) {
  if (!checkpointing_enabled()) return false;
  auto& checkpoints = checkpointer();
  const auto& policy = checkpoints.settings().policy;
  if (policy.period_batches) {
    return *policy.period_batches > 0 && step > 0 && step % *policy.period_batches == 0;
  }
  if (!policy.period_minutes) return false;
  int due = 0;
  if (rank_ == 0) {
    const std::chrono::duration<double, std::ratio<60>> elapsed =
        std::chrono::steady_clock::now() - checkpoints.last_save_time;
    due = elapsed.count() >= *policy.period_minutes ? 1 : 0;
  }
  if (mpi_) DLX_MPI_CHECK(MPI_Bcast(&due, 1, MPI_INT, 0, MPI_COMM_WORLD));
  return due != 0;
}

void Trial::save_checkpoint(const TrainingState& state) {
  auto& checkpoints = checkpointer();
  const bool with_mpi = mpi_ != nullptr;
  std::string failure, mine;
  try {
    mine = detail::pack_rank_state(state);
  } catch (const std::exception& error) {
    failure = error.what();
  }
  std::vector<std::string> gathered;
  if (with_mpi) {
    gathered = detail::gather_to_root(mine, 0, MPI_COMM_WORLD);
  } else if (rank_ == 0) {
    gathered.push_back(mine);
  }
  if (rank_ == 0 && failure.empty()) {
    try {
      const auto& settings = checkpoints.settings();
      checkpoint::CheckpointContent content;
      content.metadata.experiment = settings.expect.experiment.value_or("");
      content.metadata.trial_id = context_.trial().trial_id;
      content.metadata.step = state.step;
      content.metadata.epoch = state.epoch;
      content.metadata.world_size = size_;
      content.metadata.hparams = context_.trial().flat_hparams;
      if (settings.retention) content.metadata.metric_name = settings.retention->metric;
      content.metadata.metric_value = state.metric;
      content.state = state.state;
      content.state["data_cursor"] = state.data_cursor;
      content.tensors = state.tensors;
      content.cuda_stream = state.cuda_stream;
      for (std::size_t r = 0; r < gathered.size(); ++r) {
        const int owner = with_mpi ? static_cast<int>(r) : rank_;
        for (auto& view : detail::unpack_rank_state(owner, gathered[r])) {
          content.tensors.push_back(std::move(view));
        }
      }
      // Retention after this save keeps what the searcher references (read now, on this thread).
      if (settings.retention) checkpoints.set_searcher_references(searcher_references());
      // Snapshots the tensors before returning, but those marked snapshot_in_background.
      checkpoints.writer()->save(content);
      if (recorder_) recorder_->note_checkpoint();  // the metrics so far, durable with it
    } catch (const std::exception& error) {
      failure = fmt::format("dlx: cannot save the checkpoint of step {}: {}", state.step,
                            error.what());
    }
  }
  agree(with_mpi, failure, fmt::format("save the checkpoint of step {}", state.step));
  checkpoints.last_saved_step = state.step;
  checkpoints.last_save_time = std::chrono::steady_clock::now();
}

void Trial::wait_for_snapshot() noexcept {
  if (!checkpointer_) return;
  if (auto* writer = checkpointer_->writer()) writer->wait_for_snapshot();
}

bool Trial::withdraw_checkpoint(std::int64_t step) {
  if (!checkpointer_) return false;
  auto* writer = checkpointer_->writer();
  if (writer == nullptr) return false;
  const auto path = checkpoint::checkpoint_path(checkpointer_->settings().directory, step);
  try {
    if (!writer->withdraw(path)) return false;
  } catch (const std::exception& error) {
    throw CheckpointingError(fmt::format("dlx: cannot withdraw the checkpoint of step {}: {}", step,
                                         error.what()));
  }
  log(fmt::format("dlx: withdrew the checkpoint of step {} ({}): its tensors changed while the "
                  "library copied them",
                  step, path.string()));
  return true;
}

bool Trial::wait_for_checkpoint(std::chrono::steady_clock::duration deadline) {
  if (!checkpointer_) return true;
  std::string failure;
  int late = 0;
  if (auto* writer = checkpointer_->writer()) {
    try {
      if (deadline == std::chrono::steady_clock::duration::max()) {
        writer->wait();  // wait_for(max) would overflow the clock
      } else {
        late = writer->wait_for(deadline) ? 0 : 1;
      }
    } catch (const std::exception& error) {
      failure = fmt::format("dlx: a checkpoint save failed: {}", error.what());
    }
  }
  agree(mpi_ != nullptr, failure, "finish a checkpoint save");
  if (mpi_) DLX_MPI_CHECK(MPI_Bcast(&late, 1, MPI_INT, 0, MPI_COMM_WORLD));
  return late == 0;
}

int Trial::checkpoint_and_exit(const TrainingState& state,
                               std::optional<std::chrono::seconds> deadline) {
  const auto start = std::chrono::steady_clock::now();
  // Any rank's signal, for the record: the ranks' own through MPI, else as the framework
  // agreed it (note_checkpoint_signal).
  int signal_number = std::max(detail::PreemptionSignals::received(), agreed_signal_);
  if (mpi_) {
    DLX_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &signal_number, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  }
  std::string reason = fmt::format("requeue: checkpoint at step {} after {}", state.step,
                                   signal_or_request_name(signal_number));
  if (checkpointing_enabled()) {
    const auto limit = exit_deadline(deadline, context_.env());
    try {
      auto& checkpoints = checkpointer();
      if (checkpoints.last_saved_step != state.step) save_checkpoint(state);
      if (!wait_for_checkpoint(limit)) {
        if (rank_ == 0) checkpoints.abandon_writer();
        reason += fmt::format(" (save not finished within {} s: resumes from the previous one)",
                              limit.count());
      }
    } catch (const Error& error) {
      reason += " (save failed: resumes from the previous checkpoint)";
      if (rank_ == 0) log(error.what());
    }
  }
  if (in_trial()) {
    try {
      on_rank0("record the requeue exit", [&] { recorder_->note_requeue_exit(reason, signal_number); });
    } catch (const Error& error) {
      if (rank_ == 0) log(error.what());  // Slurm requeues the trial all the same
    }
  }
  if (rank_ == 0) {
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    log(fmt::format("dlx: {}; exiting {} for a requeue after {:.3f} s", reason, kRequeueExitCode,
                    took.count()));
  }
  return kRequeueExitCode;
}

int Trial::exit_for_requeue(std::int64_t saved_step, std::optional<std::chrono::seconds> deadline) {
  if (checkpointing_enabled() && checkpointer().last_saved_step != saved_step) {
    throw CheckpointingError(fmt::format(
        "dlx: checkpoint_and_exit({}): the last checkpoint saved is not of step {}: save the "
        "state of step {} first (it is what the requeued run resumes from)", saved_step,
        saved_step, saved_step));
  }
  TrainingState saved;
  saved.step = saved_step;
  return checkpoint_and_exit(saved, deadline);
}

}  // namespace dlx
