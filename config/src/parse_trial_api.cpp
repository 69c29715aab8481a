// SPDX-License-Identifier: Apache-2.0
// Determined's Trial API in an experiment file: `entrypoint: model_def:MNistTrial` (or the older
// `python3 -m determined.launch.torch_distributed --trial model_def:MNistTrial`) names a class,
// which dlx's harness runs (python/dlx/compat/determined/exec/harness.py). The keys that steer
// Determined's training loop become the harness's arguments in the frozen entrypoint:
//   min_validation_period: {batches: 100}        -> --min-validation-period=batches:100
//   optimizations: {aggregation_frequency: 4}     -> --aggregation-frequency=4
// Elsewhere (a script's own loop) they mean nothing and are named as ignored.
#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "dlx/config/trial_api.hpp"
#include "parse_sections.hpp"

namespace dlx::config::detail {

bool is_trial_class(const std::string& entrypoint) {
  // module.path:ClassName with nothing else: no space, no slash, one colon.
  const auto colon = entrypoint.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == entrypoint.size()) return false;
  if (entrypoint.find(':', colon + 1) != std::string::npos) return false;
  const auto identifier = [](std::string_view text, bool dots) {
    if (text.empty() || (text.front() >= '0' && text.front() <= '9')) return false;
    return std::all_of(text.begin(), text.end(), [&](char c) {
      return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
             (dots && c == '.');
    });
  };
  return identifier(std::string_view(entrypoint).substr(0, colon), true) &&
         identifier(std::string_view(entrypoint).substr(colon + 1), false);
}

std::optional<std::string> trial_class_of(const std::string& entrypoint) {
  if (is_trial_class(entrypoint)) return entrypoint;
  // python3 -m determined.launch.torch_distributed [--trust] --trial module:Class: Determined
  // started one process per slot; dlx-launch starts each rank, so the harness runs directly.
  std::istringstream words(entrypoint);
  std::vector<std::string> argv;
  for (std::string word; words >> word;) argv.push_back(word);
  if (argv.size() < 5 || (argv[0] != "python3" && argv[0] != "python") || argv[1] != "-m" ||
      argv[2] != "determined.launch.torch_distributed") {
    return std::nullopt;
  }
  std::size_t next = 3;
  if (argv[next] == "--trust") ++next;
  if (argv.size() != next + 2 || argv[next] != "--trial" || !is_trial_class(argv[next + 1])) return std::nullopt;
  return argv[next + 1];
}

bool runs_trial_harness(const Experiment& experiment) {
  const auto& argv = experiment.entrypoint;
  return !experiment.entrypoint_is_shell && argv.size() >= 4 && argv[0] == "python3" && argv[1] == "-m" &&
         argv[2] == kTrialHarness;
}

namespace {

void map_min_validation_period(const MappingReader& root, Experiment& experiment) {
  if (root.raw("min_validation_period").IsNull()) return;
  const auto period = read_determined_period(root, "min_validation_period");
  if (!period) return;
  const auto& [unit, amount] = *period;
  experiment.entrypoint.push_back(fmt::format("--min-validation-period={}:{}", unit, amount));
  experiment.determined.mapped.push_back(
      fmt::format("min_validation_period: {{{}: {}}} -> the trial validates every {} {}", unit, amount, amount, unit));
}

void map_optimizations(const MappingReader& root, Experiment& experiment) {
  if (root.raw("optimizations").IsNull()) return;
  auto section = root.mapping("optimizations");
  for (const auto& entry : section.node()) {
    const std::string key = entry.first.Scalar();
    if (key == "aggregation_frequency") continue;
    experiment.determined.ignored.push_back(
        fmt::format("optimizations.{} (Determined's Trial API option; dlx's harness aggregates gradients only)", key));
  }
  const auto frequency = section.optional_integer_in("aggregation_frequency", 1, 1 << 20,
                                                     "batches whose gradients one optimizer step averages, e.g. 4");
  if (!frequency || *frequency == 1) return;
  experiment.entrypoint.push_back(fmt::format("--aggregation-frequency={}", *frequency));
  experiment.determined.mapped.push_back(fmt::format(
      "optimizations.aggregation_frequency: {} -> the optimizers step every {} batches", *frequency, *frequency));
}

}  // namespace

bool map_trial_option(const MappingReader& root, Experiment& experiment, std::string_view key) {
  if (!runs_trial_harness(experiment)) return false;
  if (key == "min_validation_period") {
    map_min_validation_period(root, experiment);
    return true;
  }
  if (key == "optimizations") {
    map_optimizations(root, experiment);
    return true;
  }
  return false;
}

}  // namespace dlx::config::detail

namespace dlx::config {

std::optional<std::string> trial_class_of(const Experiment& experiment) {
  if (!detail::runs_trial_harness(experiment)) return std::nullopt;
  return experiment.entrypoint[3];
}

}  // namespace dlx::config
