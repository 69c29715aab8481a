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
  // marks it running with this run's world, nodes, job id and restart count, and saves.
  // `nodes`: the ranks' nodes, comma-separated (or the step's node list).
  TrialRecorder(const env::TrialEnvironment& environment, std::string experiment_name,
                int world_size, std::string nodes);

  // Appends a row. A step at or before the last recorded one means the trainer resumed from an
  // earlier checkpoint: the rows it is replaying are dropped first, so the table stays the
  // history of one deterministic run.
  void report(MetricKind kind, std::int64_t step, const Metrics& metrics);
  void finish();

  const checkpoint::TrialRecord& record() const noexcept { return record_; }

 private:
  void save();

  std::filesystem::path path_;
  checkpoint::TrialRecord record_;
};

// Drops the rows of `table` whose step is >= `step`.
void drop_rows_from(checkpoint::MetricTable& table, std::int64_t step);

}  // namespace dlx::detail
