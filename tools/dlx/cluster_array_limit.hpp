// SPDX-License-Identifier: Apache-2.0
#pragma once
// The cluster's MaxArraySize as `dlx validate` and `dlx plan` know it, so that they show the array
// sbatch will submit (a search larger than MaxArraySize runs several trials per array task):
//   --max-array-size N  given: N (0: do not ask, apply no limit);
//   otherwise           asked of slurmctld once, lazily (`scontrol show config`, at most 5 s),
//                       when the Slurm client is installed and answers; else unknown.
#include <optional>
#include <string>

#include "dlx/config/experiment.hpp"

namespace dlx::cli {

class ClusterArrayLimit {
 public:
  // `option`: the value of --max-array-size; negative when not given (ask Slurm).
  explicit ClusterArrayLimit(long long option) : option_(option) {}

  // MaxArraySize, asking Slurm on the first call; nullopt when unknown or not wanted.
  std::optional<unsigned> max_array_size();
  // Whether --max-array-size was given (0 included).
  bool given() const { return option_ >= 0; }
  // Where the limit came from, for messages: "this cluster's MaxArraySize" or "--max-array-size".
  const char* source() const { return option_ >= 0 ? "--max-array-size" : "this cluster's MaxArraySize"; }

  // Caps the experiment's array at the limit as sbatch would (searcher::fit_array_to_cluster).
  // Asks Slurm only when the array has more than one task. Returns whether it capped.
  bool fit(config::Experiment& experiment);

 private:
  long long option_;
  bool asked_ = false;
  std::optional<unsigned> answer_;
};

// MaxArraySize from `scontrol show config`'s report; nullopt when the report has none.
std::optional<unsigned> max_array_size_of(const std::string& scontrol_config_report);

}  // namespace dlx::cli
