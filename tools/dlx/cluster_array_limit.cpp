// SPDX-License-Identifier: Apache-2.0
#include "cluster_array_limit.hpp"

#include <charconv>
#include <chrono>

#include "dlx/common/bounded_command.hpp"
#include "dlx/searcher/trial_plan.hpp"
#include "slurm_facts.hpp"

namespace dlx::cli {

std::optional<unsigned> max_array_size_of(const std::string& scontrol_config_report) {
  const auto config = doctor::parse_scontrol_config(scontrol_config_report);
  const auto found = config.find("MaxArraySize");
  if (found == config.end()) return std::nullopt;
  unsigned value = 0;
  const auto& text = found->second;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<unsigned> ClusterArrayLimit::max_array_size() {
  if (option_ >= 0) return option_ == 0 ? std::nullopt : std::optional<unsigned>(static_cast<unsigned>(option_));
  if (!asked_) {
    asked_ = true;
    try {
      // Bounded: a configured but unreachable slurmctld must not hold up a file check.
      const auto result = run_bounded({"scontrol", "show", "config"}, {std::chrono::seconds(5), 1 << 20});
      if (result.exit_code == 0) answer_ = max_array_size_of(result.out);
    } catch (const CommandError&) {
      // No Slurm client here, or no answer in time: the limit stays unknown.
    }
  }
  return answer_;
}

bool ClusterArrayLimit::fit(config::Experiment& experiment) {
  if (searcher::array_task_count(experiment) <= 1) return false;
  const auto limit = max_array_size();
  return limit && searcher::fit_array_to_cluster(experiment, *limit);
}

}  // namespace dlx::cli
