// SPDX-License-Identifier: Apache-2.0
#include "dlx/env/trial_context.hpp"

#include <filesystem>
#include <utility>

#include "dlx/config/experiment.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/env/trusted_snapshot.hpp"

namespace dlx::env {

TrialContext::TrialContext(EnvMap env, TaskPlacement placement)
    : env_(std::move(env)), trial_(read_trial_environment(env_)), placement_(std::move(placement)) {}

const config::Experiment* TrialContext::experiment() {
  if (experiment_ || !in_trial()) return experiment_.get();
  if (!std::filesystem::exists(*trial_.experiment_dir / config::kSnapshotFileName)) return nullptr;
  return &keep(load_trusted_snapshot(*trial_.experiment_dir));
}

const config::Experiment& TrialContext::frozen_experiment() {
  if (experiment_) return *experiment_;
  return keep(load_trusted_snapshot(*trial_.experiment_dir));
}

std::string TrialContext::experiment_name() {
  if (const auto* frozen = experiment()) return frozen->name;
  return trial_.experiment_dir->filename().string();
}

const config::Experiment& TrialContext::keep(config::Experiment experiment) {
  use_experiment_names(trial_, experiment);  // records hold the experiment's names
  experiment_ = std::make_shared<const config::Experiment>(std::move(experiment));
  return *experiment_;
}

}  // namespace dlx::env
