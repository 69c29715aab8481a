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

// Messages: "dlx: <text>". Fatal ones go to slurm_error, progress to slurm_info.
void report_error(const std::string& message);
void report_info(const std::string& message);

}  // namespace dlx::spank
