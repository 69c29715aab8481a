#include "dlx/launch/trial_outcome.hpp"

#include <filesystem>

#include "dlx/common/clock.hpp"

namespace dlx::launch {

namespace {

// A record for a trainer that died before libdlx created one (or that does not use libdlx).
checkpoint::TrialRecord new_record(const env::TrialEnvironment& trial,
                                   const slurm::TaskPlacement& placement) {
  checkpoint::TrialRecord record;
  record.experiment = env::experiment_name(*trial.experiment_dir);
  record.trial_id = trial.trial_id;
  record.restarts = trial.restarts;
  record.world_size = placement.world_size;
  record.nodes = placement.node_name;  // only rank 0's node is known here
  record.slurm_job_id = trial.slurm_job_id;
  record.hparams = trial.hparams;
  record.created_unix = unix_seconds_now();
  return record;
}

}  // namespace

bool should_mark_failed(int exit_status, const std::optional<checkpoint::TrialRecord>& record) {
  if (exit_status == 0 || exit_status == env::kRequeueExitCode) return false;
  return !record || record->state == "running";
}

bool record_trainer_exit(const env::TrialEnvironment& trial,
                         const slurm::TaskPlacement& placement, int exit_status) {
  if (!trial.in_trial()) return false;
  const auto path = trial.record_path();
  auto record = checkpoint::load_trial_record_if_exists(path);
  if (!should_mark_failed(exit_status, record)) return false;
  if (!record) {
    std::filesystem::create_directories(path.parent_path());
    record = new_record(trial, placement);
  }
  record->state = "failed";
  record->exit_code = exit_status;
  record->updated_unix = unix_seconds_now();
  checkpoint::save_trial_record(*record, path);
  return true;
}

}  // namespace dlx::launch
