// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the plugin keeps between callbacks of one process (sbatch, or one slurmstepd).
#include <optional>
#include <string>

#include "plugin_options.hpp"

namespace dlx::spank {

struct PluginState {
  std::optional<std::string> experiment_file;  // the --dl-experiment value, when given
  PluginOptions options;
};

PluginState& state();

// Messages: "dlx: <text>", one line each. Fatal ones go to slurm_error, progress to slurm_info,
// details to slurm_verbose;
// both show control characters escaped (config::printable), so that no text in a message can act
// on a terminal or start a line of its own.
void report_error(const std::string& message) noexcept;
void report_info(const std::string& message) noexcept;
void report_verbose(const std::string& message) noexcept;  // sbatch -v, slurmd's log

}  // namespace dlx::spank
