#pragma once
// Rank 0's keeper of trials/<id>/trial.h5 (checkpoint::TrialRecord). Every change is saved at
// once through save_trial_record (temp + fsync + rename), so the file on disk is always a
// complete record of what was reported so far.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "dlx/checkpoint/trial_record.hpp"
#include "dlx/env/trial_environment.hpp"
#include "dlx/trial.hpp"

namespace dlx::detail {

enum class MetricKind { training, validation };
const char* to_string(MetricKind kind);

class TrialRecorder {
 public:
  // Loads the record when it exists (a requeued trial keeps its history), else creates it; then
  // marks it running with this run's world, nodes, job id and restart count, and saves. A run
  // whose SLURM_RESTART_COUNT is above the record's appends a RestartEvent whose cause comes from
  // the previous run's stop_reason (see restart_cause).
  // `nodes`: the ranks' nodes, comma-separated (or the step's node list).
  TrialRecorder(const env::TrialEnvironment& environment, std::string experiment_name,
                int world_size, std::string nodes);

  // Appends a row. A step at or before the last recorded one means the trainer resumed from an
  // earlier checkpoint: the rows it is replaying are dropped first, so the table stays the
  // history of one deterministic run.
  void report(MetricKind kind, std::int64_t step, const Metrics& metrics);
  // Marks the trial ended: "completed", or the searcher's "stopped" / "paused" with its reason.
  void finish(const std::string& state = "completed", const std::string& reason = "");

  // The trainer resumed from the checkpoint of `step` (created at `checkpoint_unix`): rows after
  // that step are dropped (the resumed run reports them again) and the restart event, if this run
  // is one, gets the resumed step and the work lost.
  void note_resume(std::int64_t step, std::int64_t checkpoint_unix);
  // The trial began from another trial's checkpoint, the one the searcher named for its start
  // (PBT): recorded once, as trial.h5's started_from ("trial 3 step 400").
  void note_start(const checkpoint::StartCheckpoint& start);
  // The trainer checkpointed on request and exits for a requeue: the record stays "running" and
  // says why it stopped.
  void note_requeue_exit(const std::string& reason);

  const checkpoint::TrialRecord& record() const noexcept { return record_; }

 private:
  void save();

  std::filesystem::path path_;
  checkpoint::TrialRecord record_;
  std::int64_t previous_update_unix_ = 0;  // of the run before this one (restart bookkeeping)
  bool restarted_ = false;                 // this run appended a RestartEvent
};

// "notice" for a stop_reason starting with "requeue" (exit 85 after a checkpoint), "crash" for
// one starting with "crash" (dlx-launch recorded a failed exit), else "unknown".
std::string restart_cause(const std::string& stop_reason);
// The highest step in either metric table, 0 when both are empty.
std::int64_t last_reported_step(const checkpoint::TrialRecord& record);

// Drops the rows of `table` whose step is >= `step`.
void drop_rows_from(checkpoint::MetricTable& table, std::int64_t step);

}  // namespace dlx::detail
