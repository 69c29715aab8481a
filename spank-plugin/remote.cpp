// SPDX-License-Identifier: Apache-2.0
// The remote context: slurmstepd, in user_init, which runs with the job user's effective uid, so
// every path opened here (all of them under the user's experiment directory) is opened as the
// user, never as root. The trial's hyperparameters are recomputed from the frozen snapshot and the
// array index: a pure function, so every step of every node agrees without coordination.
//
// slurmstepd must never trust or block on what another user controls: the experiment directory
// is checked to be the job user's own (every directory from / down, trusted_path.hpp) before the
// snapshot is read, the snapshot is opened without following a link or waiting on a FIFO, and
// at most 1 MiB of it is read. A directory that fails the check gets no trial environment: the
// reason goes to the job's output and, as DLX_REFUSED, to dlx-launch, which refuses to start.
#include "remote.hpp"

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "dlx/config/hparam_tree.hpp"
#include "dlx/config/names.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/trial_plan.hpp"
#include "dlx/store/create_experiment_dir.hpp"
#include "dlx/store/experiment_layout.hpp"
#include "dlx/store/trusted_experiment.hpp"
#include "plugin_state.hpp"

namespace dlx::spank {

namespace {

constexpr std::uint32_t kNoValue = 0xfffffffe;          // NO_VAL
constexpr std::uint32_t kBatchScriptStep = 0xfffffffb;  // SLURM_BATCH_SCRIPT
constexpr std::size_t kMaxSnapshotBytes = 1 << 20;     // the experiment file's own limit

std::string getenv_or_empty(spank_t sp, const char* name) {
  char buffer[4096];
  if (spank_getenv(sp, name, buffer, sizeof buffer) != ESPANK_SUCCESS) return "";
  return buffer;
}

bool set(spank_t sp, const std::string& name, const std::string& value) {
  if (spank_setenv(sp, name.c_str(), value.c_str(), 1) == ESPANK_SUCCESS) return true;
  report_error(fmt::format("dlx: cannot set {} in the job environment", name));
  return false;
}

// The trial a step belongs to, as the job says it.
struct StepTrial {
  std::string experiment_dir;
  std::uint32_t array_job = 0;
  int trial_id = 0;  // the array task: the ticket
  std::uint32_t step = 0;
  uid_t job_user = 0;
};

// Fills `trial` from the job's environment and items; returns why the step cannot run a trial, or
// "" when it can.
std::string identify_trial(spank_t sp, StepTrial& trial) {
  // Exported from sbatch's environment; under --export=NONE only the job-control copy survives,
  // which Slurm puts into the job as SLURM_SPANK_<name>.
  trial.experiment_dir = getenv_or_empty(sp, "DLX_EXPERIMENT_DIR");
  if (trial.experiment_dir.empty()) {
    trial.experiment_dir = getenv_or_empty(sp, "SLURM_SPANK_DLX_EXPERIMENT_DIR");
    if (!trial.experiment_dir.empty() && !set(sp, "DLX_EXPERIMENT_DIR", trial.experiment_dir)) {
      return "dlx: cannot set DLX_EXPERIMENT_DIR in the job environment";
    }
  }
  if (trial.experiment_dir.empty()) {
    return "dlx: DLX_EXPERIMENT_DIR is missing from the job environment (was it unset in the job script? "
           "submit again with --dl-experiment)";
  }
  std::uint32_t array_task = kNoValue;
  spank_get_item(sp, S_JOB_ARRAY_ID, &trial.array_job);
  spank_get_item(sp, S_JOB_ARRAY_TASK_ID, &array_task);
  spank_get_item(sp, S_JOB_STEPID, &trial.step);
  if (trial.array_job == 0 || array_task == kNoValue) {
    return fmt::format("dlx: the job for experiment {} is not an array job: the plugin or job_submit.lua did "
                       "not set --array (check plugstack.conf array_via)",
                       trial.experiment_dir);
  }
  trial.trial_id = static_cast<int>(array_task);
  if (spank_get_item(sp, S_JOB_UID, &trial.job_user) != ESPANK_SUCCESS || trial.job_user != ::geteuid()) {
    return fmt::format("dlx: trial {} of {}: user_init is not running as the job's user (uid {}, effective uid "
                       "{}): refusing to read the experiment (report this to your administrator)",
                       trial.trial_id, trial.experiment_dir, trial.job_user, ::geteuid());
  }
  return "";
}

// The site's node-local choices for dlx-launch: the data cache's base from plugstack.conf
// (local_dir=, %n and %u still in it: dlx-launch expands them with the node and user it runs as,
// trial_data.hpp) and Slurm's TmpFS, from sbatch (allocator.cpp; under --export=NONE only its
// job-control copy).
bool set_site_variables(spank_t sp) {
  bool ok = true;
  const auto& local_dir = state().options.local_dir;
  if (!local_dir.empty()) ok = set(sp, kSiteLocalDirVariable, local_dir);
  if (getenv_or_empty(sp, kSlurmTmpFsVariable).empty()) {
    const std::string tmp_fs = getenv_or_empty(sp, "SLURM_SPANK_DLX_SLURM_TMPFS");
    if (!tmp_fs.empty()) ok = ok && set(sp, kSlurmTmpFsVariable, tmp_fs);
  }
  return ok;
}

// The trial's environment from the frozen experiment (read as the job's user, through the
// trusted path); the batch script's step also makes the checkpoint directory and the job link.
// Returns why it cannot, or "". Throws for an unreadable or untrusted snapshot.
std::string export_trial_variables(spank_t sp, const StepTrial& trial) {
  const auto& experiment_dir = trial.experiment_dir;
  const int trial_id = trial.trial_id;
  const std::string snapshot_path = (std::filesystem::path(experiment_dir) / config::kSnapshotFileName).string();
  const auto experiment = config::parse_experiment(
      store::read_trusted_experiment_file(experiment_dir, config::kSnapshotFileName, trial.job_user, kMaxSnapshotBytes),
      snapshot_path);
  // Array task = ticket. The first trial_count tickets start trial <ticket> (the searcher may
  // still hand them other work: dlx-launch asks it and rewrites these variables); later tickets
  // exist for ASHA promotions and get their trial from the searcher alone.
  const bool planned = trial_id < searcher::trial_count(experiment);
  const auto hparams = planned ? searcher::plan_trial(experiment, trial_id).hparams
                               : nlohmann::ordered_json::object();
  const auto checkpoints = store::checkpoint_dir(experiment_dir, trial_id);
  if (trial.step == kBatchScriptStep) {
    if (planned) store::make_checkpoint_dir(experiment_dir, trial_id, trial.job_user);
    store::link_job(experiment_dir, std::to_string(trial.array_job), trial.job_user);
  }
  // DLX_LATEST_CHECKPOINT is exported empty: this code runs inside slurmstepd and must not
  // open files in the user's checkpoint directory. dlx-launch (as the user) sets it from
  // latest-valid discovery, and libdlx's resume() runs the discovery itself.
  bool ok = set(sp, "DLX_TRIAL_ID", std::to_string(trial_id)) &&
            set(sp, "DLX_TICKET", std::to_string(trial_id)) &&
            set(sp, "DLX_HPARAMS", config::nest_hyperparameters(hparams).dump()) &&
            set(sp, "DLX_CHECKPOINT_DIR", planned ? checkpoints.string() : "") &&
            set(sp, "DLX_LATEST_CHECKPOINT", "");
  ok = ok && set_site_variables(sp);
  for (const auto& [name, value] : experiment.environment) ok = ok && set(sp, name, value);
  for (const auto& [name, value] : hparams.items()) {
    ok = ok && set(sp, config::hyperparameter_variable(name), config::hyperparameter_variable_value(value));
  }
  return ok ? "" : fmt::format("dlx: trial {} of {}: cannot set the trial's environment", trial_id, experiment_dir);
}

// Exports the trial's environment; returns why it cannot (the step must then not run the trial),
// or "" when it did.
std::string export_or_explain(spank_t sp) {
  StepTrial trial;
  if (auto refusal = identify_trial(sp, trial); !refusal.empty()) return refusal;
  try {
    return export_trial_variables(sp, trial);
  } catch (const std::exception& e) {
    return fmt::format("dlx: trial {} of {}: {}", trial.trial_id, trial.experiment_dir, e.what());
  }
}

}  // namespace

int export_trial_environment(spank_t sp) {
  const std::string refusal = export_or_explain(sp);
  if (refusal.empty()) {
    spank_unsetenv(sp, kRefusalVariable);  // a refusal in the batch step does not outlive its cause
    return 0;
  }
  // Said in the job's output (slurmstepd copies errors there) and handed to dlx-launch, which
  // exits with it before reading anything. The step itself is not failed: a user_init error in
  // the batch step makes slurmd drain the node ("batch job complete failure") and slurmctld
  // requeue the job elsewhere, so one user's bad experiment directory would take nodes from all.
  report_error(refusal);
  spank_setenv(sp, kRefusalVariable, refusal.c_str(), 1);
  return 0;
}


}  // namespace dlx::spank
