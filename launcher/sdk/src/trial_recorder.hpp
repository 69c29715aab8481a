// SPDX-License-Identifier: Apache-2.0
#pragma once
// Rank 0's keeper of trials/<id>/trial.h5 (record::TrialRecord). Reports go through the
// MetricsPipeline (buffered, durable in the metrics log within a second, compacted into trial.h5
// now and then); every other change (start, resume, finish, requeue exit) is written to trial.h5
// at once, with every report before it.
#include <cstdint>
#include <filesystem>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "dlx/record/trial_record.hpp"
#include "dlx/env/trial_environment.hpp"
#include "dlx/trial.hpp"
#include "metrics_pipeline.hpp"

namespace dlx::detail {

enum class MetricKind { training, validation };
const char* to_string(MetricKind kind);

class TrialRecorder {
 public:
  // Loads the record when it exists (a requeued trial keeps its history), else creates it; then
  // marks it running with this run's world, nodes, job id and restart count, and saves. A run of
  // a trial whose record is still "running" (the previous run did not end its work: a requeue, a
  // crash, a kill) with a SLURM_RESTART_COUNT above the record's appends a RestartEvent whose
  // cause comes from the previous run's stop_reason (see restart_cause). A paused trial resumed by
  // the searcher (an ASHA promotion, a PBT member going on, in whichever array task) is new work,
  // not a restart.
  // `nodes`: the ranks' nodes, comma-separated (or the step's node list).
  TrialRecorder(const env::TrialEnvironment& environment, std::string experiment_name,
                int world_size, std::string nodes, MetricsPipelineOptions options);

  // Appends a row (O(1); see MetricsPipeline). A step at or before the last recorded one means
  // the trainer resumed from an earlier checkpoint: the rows it is replaying are dropped first,
  // so the table stays the history of one deterministic run.
  void report(MetricKind kind, std::int64_t step, const Metrics& metrics);
  // Names-once reporting (Trial::metric_names): the pipeline's ids of `names`, then reports of
  // values in their order (O(values), nothing looked up).
  std::vector<std::uint32_t> metric_ids(const std::vector<std::string>& names) { return metrics_.ids_of(names); }
  void report_values(MetricKind kind, std::int64_t step, std::span<const std::uint32_t> ids,
                     std::span<const double> values);
  // A checkpoint was saved: the metrics so far become durable and trial.h5 is rewritten soon.
  void note_checkpoint() { metrics_.flush_soon(); }
  // Marks the trial ended: "completed", or the searcher's "stopped" / "paused" with its reason.
  void finish(const std::string& state = "completed", const std::string& reason = "");

  // The trainer resumed from the checkpoint of `step` (created at `checkpoint_unix`): rows after
  // that step are dropped (the resumed run reports them again) and the restart event, if this run
  // is one, gets the resumed step and the work lost.
  void note_resume(std::int64_t step, std::int64_t checkpoint_unix);
  // The trial began from another trial's checkpoint, the one the searcher named for its start
  // (PBT): recorded once, as trial.h5's started_from ("trial 3 step 400").
  void note_start(const record::StartCheckpoint& start);
  // The trainer checkpointed on request (`signal_number` arrived) and exits for a requeue: the
  // record stays "running" and says why it stopped, and what the notice was as far as this run
  // can tell (stop_cause: notice_cause.hpp).
  void note_requeue_exit(const std::string& reason, int signal_number);
  // A hyperparameter name warning: kept in trial.h5 (written at once) unless it is there already.
  void note_hparam_warning(record::HparamWarning warning);

 private:
  struct Start;  // the record as this run begins it, and the restart bookkeeping
  TrialRecorder(Start start, const std::filesystem::path& path, MetricsPipelineOptions options);

  std::int64_t previous_update_unix_ = 0;  // the run before this one's last sign of life
  std::int64_t previous_last_step_ = 0;    // and the last step it reported
  bool restarted_ = false;                 // this run appended a RestartEvent
  std::set<std::pair<std::string, std::string>> warned_;  // hparam warnings kept: (kind, name)
  MetricsPipeline metrics_;
};

// The restart's cause from the previous run's record: its stop_cause's word when it has one
// ("time_limit: ..." -> "time_limit"), else "notice" for a stop_reason starting with "requeue"
// (exit 85 after a checkpoint), "crash" for one starting with "crash" (dlx-launch recorded a failed
// exit), else "unknown".
std::string restart_cause(const std::string& stop_reason, const std::string& stop_cause = "");
// The highest step in either metric table, 0 when both are empty.
std::int64_t last_reported_step(const record::TrialRecord& record);

}  // namespace dlx::detail
