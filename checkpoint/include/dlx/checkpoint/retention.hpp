// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which checkpoints stay on disk. After each successful save the trial applies its policy (from
// the experiment file's `checkpoint:` section) to its own directory; `dlx ckpt gc` applies it to a
// whole experiment. A checkpoint is kept when any rule names it:
//   latest           one of the keep_latest newest valid checkpoints of the trial
//   best             one of the keep_best best by the searcher metric within the trial
//   experiment-best  one of the keep_experiment_best best over every trial of the experiment
//   newest-valid     the trial's newest valid checkpoint (always, whatever the policy says)
//   referenced       a step a searcher decision still needs (ASHA pause, PBT exploit source);
//                    CheckpointStatus::referenced_by says which (searcher/references.hpp)
// Files that do not verify are never deleted by retention (`dlx ckpt gc --remove-invalid` does),
// nor are temporary files. Each trial deletes only its own files (one writer per file).
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dlx/checkpoint/checkpoint.hpp"

namespace dlx::checkpoint {

struct RetentionPolicy {
  int keep_latest = 1;
  int keep_best = 1;
  int keep_experiment_best = 0;
  std::string metric;              // the searcher metric; "" disables the best rules
  bool smaller_is_better = true;
};

struct CheckpointStatus {
  std::filesystem::path path;
  std::int64_t trial_id = 0;
  std::int64_t step = 0;
  std::uint64_t file_bytes = 0;
  bool valid = false;
  std::string problem;                // why not valid
  std::optional<double> metric_value; // for the policy's metric, when recorded
  std::vector<std::string> kept_by;   // rule names; empty: retention deletes it (if valid)
  std::string referenced_by;          // the searcher's reason, when "referenced" keeps it
};

// Steps of one trial that a searcher decision still needs -> why (for people; may be empty).
using ReferencedSteps = std::map<std::int64_t, std::string>;

// Every step-<N>.h5 of one trial, ascending by step, checked at metadata level.
std::vector<CheckpointStatus> scan_checkpoints(const std::filesystem::path& checkpoint_dir,
                                               const Expectation& expect,
                                               const std::string& metric);

// (trial id, step) of a checkpoint.
using CheckpointKey = std::pair<std::int64_t, std::int64_t>;

// Fills kept_by of one trial's files. `experiment_best` holds the checkpoints the
// experiment-best rule keeps (see plan_experiment_retention).
void decide_retention(std::vector<CheckpointStatus>& files, const RetentionPolicy& policy,
                      const ReferencedSteps& referenced_steps,
                      const std::set<CheckpointKey>& experiment_best);
// The same without reasons.
void decide_retention(std::vector<CheckpointStatus>& files, const RetentionPolicy& policy,
                      const std::set<std::int64_t>& referenced_steps,
                      const std::set<CheckpointKey>& experiment_best);

// All trials of an experiment directory, decided together. `referenced` maps trial -> steps.
std::map<std::int64_t, std::vector<CheckpointStatus>> plan_experiment_retention(
    const std::filesystem::path& experiment_dir, const RetentionPolicy& policy,
    const std::map<std::int64_t, std::set<std::int64_t>>& referenced = {});
// The same with the searcher's reasons: trial -> (step -> why).
std::map<std::int64_t, std::vector<CheckpointStatus>> plan_experiment_retention(
    const std::filesystem::path& experiment_dir, const RetentionPolicy& policy,
    const std::map<std::int64_t, ReferencedSteps>& referenced);

// Deletes the valid files no rule keeps (unlink, then fsync the directory); returns them.
std::vector<std::filesystem::path> delete_unkept(const std::vector<CheckpointStatus>& files);

// What a trial runs after each successful save: scan its directory (and, for the experiment-best
// rule, the other trials' directories of the same experiment), decide, delete its own files.
std::vector<std::filesystem::path> apply_retention(const std::filesystem::path& checkpoint_dir,
                                                   const RetentionPolicy& policy,
                                                   const Expectation& expect,
                                                   const std::set<std::int64_t>& referenced_steps = {});
std::vector<std::filesystem::path> apply_retention(const std::filesystem::path& checkpoint_dir,
                                                   const RetentionPolicy& policy,
                                                   const Expectation& expect,
                                                   const ReferencedSteps& referenced_steps);

}  // namespace dlx::checkpoint
