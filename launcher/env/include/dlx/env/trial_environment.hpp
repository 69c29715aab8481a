// SPDX-License-Identifier: Apache-2.0
#pragma once
// The trial contract (docs/config-reference.md, "What a trial sees"): the variables the SPANK
// plugin exports into every task of a trial, read once into a struct. Both libdlx (the trainer
// side) and dlx-launch (the wrapper side) use this one reader, so the two never disagree.
//   DLX_EXPERIMENT_DIR     the experiment directory on shared storage (unset: not a dlx trial)
//   DLX_TRIAL_ID           integer id; trials/<id>/trial.h5 is the trial's record
//   DLX_HPARAMS            JSON object of the hyperparameters, groups nested the way Determined
//                          passes them ({"lr":0.1,"optim":{"momentum":0.9}}); values are any JSON
//                          (config/hparam_tree.hpp). The flat form of earlier versions
//                          ({"optim.momentum":0.9}) is still read: lookups find dotted keys too
//   DLX_CHECKPOINT_DIR     where the trainer writes checkpoints
//   DLX_LATEST_CHECKPOINT  the checkpoint to resume from; empty on a fresh start. The plugin
//                          exports it empty (it runs as root and never looks into the user's
//                          directory); dlx-launch sets it from latest-valid discovery, as the user
//   DLX_REFUSED            set instead of the above when the plugin refused the trial (e.g. its
//                          experiment directory is not the user's own): the reason; dlx-launch
//                          exits with it before touching the directory
// dlx-launch, having asked the searcher for this array task's work (launcher/launch), rewrites
// the trial variables above for the trial it was given and adds:
//   DLX_TICKET             the array task (ticket) the trial runs in; unset: ticket = trial id
//   DLX_START_LENGTH       the length the work starts at (0: from scratch)
//   DLX_TARGET_LENGTH      the length to report validation at; 0 or unset: the trainer's own
// Outside a trial (local testing) DLX_HPARAMS may still be given, or DLX_HPARAMS_FILE naming a
// JSON file with the same object.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "dlx/env/environment.hpp"

// Declared, not included: this header is installed with the SDK (dlx::sdk), the config headers are not.
namespace dlx::config {
struct Experiment;
}  // namespace dlx::config

namespace dlx::env {

// "Checkpointed on request, requeue me": the site config sets RequeueExit=85. dlx-launch passes
// it through unchanged and leaves the trial record's state alone.
inline constexpr int kRequeueExitCode = 85;

// "The trial's code or configuration is wrong; do not retry" (sysexits' EX_CONFIG): dlx's own
// error about the trial (a metric the searcher needs missing, an object a checkpoint cannot hold,
// a hyperparameter of the wrong type) ends the trainer with it, and dlx-launch then marks the
// trial failed at once with the trainer's last error line, without restarts
// (docs/fault-tolerance.md, "Errors that fail at once"). Any trainer may exit with it.
inline constexpr int kConfigErrorExitCode = 78;

struct TrialEnvironment {
  std::optional<std::filesystem::path> experiment_dir;  // nullopt outside a dlx trial
  std::int64_t trial_id = 0;
  // As the trainer sees them: nested (DLX_HPARAMS).
  nlohmann::ordered_json hparams = nlohmann::ordered_json::object();
  // name -> value with dotted names, for trial records and the searcher: the experiment's names
  // where known (use_experiment_names, or the searcher's work), else every mapping of `hparams`
  // taken as a group.
  nlohmann::ordered_json flat_hparams = nlohmann::ordered_json::object();
  std::optional<std::filesystem::path> checkpoint_dir;
  std::optional<std::filesystem::path> latest_checkpoint;  // nullopt on a fresh start
  std::string slurm_job_id;  // "<array job>_<task>" for array tasks, else SLURM_JOB_ID, else ""
  int restarts = 0;          // SLURM_RESTART_COUNT (unset on the first run)
  std::optional<std::int64_t> ticket;  // DLX_TICKET
  std::int64_t start_length = 0;       // DLX_START_LENGTH
  std::int64_t target_length = 0;      // DLX_TARGET_LENGTH

  bool in_trial() const noexcept { return experiment_dir.has_value(); }
  // <experiment_dir>/trials/<id>/trial.h5; requires in_trial().
  std::filesystem::path record_path() const;
};

// Throws EnvError naming the variable for a malformed DLX_TRIAL_ID or DLX_HPARAMS (not a JSON
// object, or nested past kMaxHparamsDepth), or an unreadable DLX_HPARAMS_FILE.
TrialEnvironment read_trial_environment(const EnvMap& env);

// The Slurm job this task is: "<array job>_<task>" for an array task (the array's own job id,
// which one of its tasks also has as SLURM_JOB_ID, names them all), else SLURM_JOB_ID, else "".
std::string slurm_job_id(const EnvMap& env);

// Parses a hyperparameter object (any JSON values); `origin` names the source in errors.
inline constexpr int kMaxHparamsDepth = 64;
nlohmann::ordered_json parse_hparams_json(std::string_view text, std::string_view origin);

// Sets trial.flat_hparams from trial.hparams by the experiment's hyperparameter names: a mapping
// that is a value stays one (the name list, not the shape, says what is a group).
void use_experiment_names(TrialEnvironment& trial, const config::Experiment& experiment);

}  // namespace dlx::env
