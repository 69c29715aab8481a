// SPDX-License-Identifier: Apache-2.0
#include "dlx/env/trial_environment.hpp"

#include <fmt/format.h>

#include "dlx/common/durable_file.hpp"
#include "dlx/common/bounded_json.hpp"
#include "dlx/config/hparam_tree.hpp"
#include "dlx/config/experiment.hpp"
#include "dlx/env/environment.hpp"

namespace dlx::env {

namespace {

constexpr std::size_t kMaxHparamsFileBytes = 1 << 20;

std::optional<std::filesystem::path> non_empty_path(const EnvMap& env, std::string_view name) {
  auto value = lookup(env, name);
  if (!value || value->empty()) return std::nullopt;
  return std::filesystem::path(*value);
}

}  // namespace

std::string slurm_job_id(const EnvMap& env) {
  auto array_job = lookup(env, "SLURM_ARRAY_JOB_ID");
  auto array_task = lookup(env, "SLURM_ARRAY_TASK_ID");
  if (array_job && array_task && !array_job->empty() && !array_task->empty()) {
    return fmt::format("{}_{}", *array_job, *array_task);
  }
  return lookup(env, "SLURM_JOB_ID").value_or("");
}

std::filesystem::path TrialEnvironment::record_path() const {
  if (!experiment_dir) throw EnvError("not inside a dlx trial: DLX_EXPERIMENT_DIR is not set");
  return *experiment_dir / "trials" / std::to_string(trial_id) / "trial.h5";
}

nlohmann::ordered_json parse_hparams_json(std::string_view text, std::string_view origin) {
  // The installed header states the bound without dlx/common (which is not installed).
  static_assert(kMaxHparamsDepth == dlx::kMaxHparamsDepth);
  auto [parsed, too_deep] = parse_bounded_json(text, kMaxHparamsDepth);
  if (too_deep) {
    throw EnvError(fmt::format("{} nests objects or lists more than {} levels deep (write the "
                               "hyperparameters as a JSON object of groups and values)",
                               origin, kMaxHparamsDepth));
  }
  if (parsed.is_discarded() || !parsed.is_object()) {
    throw EnvError(fmt::format("{} is not a JSON object of hyperparameters (write it as "
                               "{{\"name\": value, \"group\": {{\"name\": value}}}}): {}",
                               origin, text.substr(0, 200)));
  }
  return parsed;
}

void use_experiment_names(TrialEnvironment& trial, const config::Experiment& experiment) {
  std::vector<std::string> names;
  names.reserve(experiment.hyperparameters.size());
  for (const auto& hp : experiment.hyperparameters) names.push_back(hp.name);
  trial.flat_hparams = config::flatten_hyperparameters(trial.hparams, names);
}

TrialEnvironment read_trial_environment(const EnvMap& env) {
  TrialEnvironment out;
  out.experiment_dir = non_empty_path(env, "DLX_EXPERIMENT_DIR");
  if (auto id = lookup(env, "DLX_TRIAL_ID"); id && !id->empty()) {
    out.trial_id = parse_non_negative("DLX_TRIAL_ID", *id);
  }
  if (auto text = lookup(env, "DLX_HPARAMS"); text && !text->empty()) {
    out.hparams = parse_hparams_json(*text, "DLX_HPARAMS");
  } else if (auto file = non_empty_path(env, "DLX_HPARAMS_FILE")) {
    std::string contents;
    try {
      contents = read_small_file(*file, kMaxHparamsFileBytes);
    } catch (const SystemError& error) {
      throw EnvError(fmt::format("DLX_HPARAMS_FILE: {}", error.what()));
    }
    out.hparams = parse_hparams_json(contents, fmt::format("DLX_HPARAMS_FILE={}", file->string()));
  }
  out.flat_hparams = config::flatten_hyperparameters(out.hparams);
  out.checkpoint_dir = non_empty_path(env, "DLX_CHECKPOINT_DIR");
  out.latest_checkpoint = non_empty_path(env, "DLX_LATEST_CHECKPOINT");
  out.slurm_job_id = slurm_job_id(env);
  if (auto restarts = lookup(env, "SLURM_RESTART_COUNT"); restarts && !restarts->empty()) {
    out.restarts = parse_non_negative_int("SLURM_RESTART_COUNT", *restarts);
  }
  for (auto [name, field] : {std::pair{"DLX_START_LENGTH", &out.start_length},
                             std::pair{"DLX_TARGET_LENGTH", &out.target_length}}) {
    if (auto value = lookup(env, name); value && !value->empty()) *field = parse_non_negative(name, *value);
  }
  if (auto ticket = lookup(env, "DLX_TICKET"); ticket && !ticket->empty()) {
    out.ticket = parse_non_negative("DLX_TICKET", *ticket);
  }
  return out;
}

}  // namespace dlx::env
