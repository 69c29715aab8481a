// SPDX-License-Identifier: Apache-2.0
#pragma once
// One trial process's context, built once when the process starts and handed to every part that
// needs it, so that none reads the environment or the frozen experiment.yaml again:
//   env         the process environment (environment.hpp)
//   trial       the trial contract, DLX_* (trial_environment.hpp)
//   placement   where this task sits (task_placement.hpp; read by launcher/slurm)
//   experiment  the frozen experiment.yaml, read through the trusted path (trusted_snapshot.hpp:
//               every directory from / checked) the first time a part asks for it, then kept: one
//               read per process at most, and none when no part needs it
// libdlx's Trial builds one and hands it to its trial record, its checkpoint settings and the
// searcher's coordinator; dlx-launch builds one and its phases share it (launch.hpp). The node-local
// root (the data cache's and the code copy's) is dlx-launch's alone: its launch state keeps it.
// Used by one thread (the training thread; dlx-launch's only thread).
#include <memory>
#include <string>

#include "dlx/env/environment.hpp"
#include "dlx/env/task_placement.hpp"
#include "dlx/env/trial_environment.hpp"

namespace dlx::env {

class TrialContext {
 public:
  // Reads the trial contract from `env` (throws EnvError as read_trial_environment does); reads
  // nothing on disk.
  TrialContext(EnvMap env, TaskPlacement placement);

  const EnvMap& env() const noexcept { return env_; }
  TrialEnvironment& trial() noexcept { return trial_; }
  const TrialEnvironment& trial() const noexcept { return trial_; }
  const TaskPlacement& placement() const noexcept { return placement_; }
  bool in_trial() const noexcept { return trial_.in_trial(); }

  // The frozen experiment of a trial whose directory holds experiment.yaml; null outside a trial
  // and for a directory without one (a scratch directory used by hand). When it is read, its
  // hyperparameter names decide trial().flat_hparams (use_experiment_names). Throws as
  // load_trusted_snapshot does (UntrustedPathError, SystemError, config::ConfigError).
  const config::Experiment* experiment();
  // The frozen experiment, which a trial must have: a missing experiment.yaml throws as any
  // unreadable one does (SystemError naming it). Requires in_trial().
  const config::Experiment& frozen_experiment();
  // The experiment's name for records: the snapshot's `name` when there is one, else the
  // directory's own name. Requires in_trial().
  std::string experiment_name();

 private:
  const config::Experiment& keep(config::Experiment experiment);

  EnvMap env_;
  TrialEnvironment trial_;
  TaskPlacement placement_;
  std::shared_ptr<const config::Experiment> experiment_;  // read once, at the first question
};

}  // namespace dlx::env
