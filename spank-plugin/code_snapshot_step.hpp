// SPDX-License-Identifier: Apache-2.0
#pragma once
// The allocator's code snapshot step (store/code_snapshot.hpp does the work): planned before the
// experiment directory exists, so that a failure (over the size cap, a git error) queues nothing
// and leaves nothing behind; written into the directory once it is made.
#include <filesystem>
#include <optional>

#include "dlx/config/experiment.hpp"
#include "dlx/store/code_snapshot.hpp"
#include "sbatch_options.hpp"

namespace dlx::spank {

// nullopt when the experiment opts out (code: {snapshot: false}) or there is nothing to snapshot
// (said once, as info). Resolves a relative code.dir against the experiment file's directory and
// stores the absolute path back into `experiment` (the frozen config names it). Throws
// store::CodeSnapshotError.
std::optional<store::CodePlan> plan_code(config::Experiment& experiment, const SbatchOptions& sbatch);

// The job's working directory: --chdir (-D) when given, else where sbatch runs.
std::filesystem::path job_working_dir(const SbatchOptions& sbatch);

// Where the trials start, as the submitter sees it now: the snapshot's working directory (its
// copy is what trials run), else the job's working directory.
std::filesystem::path trial_start_dir(const std::optional<store::CodePlan>& plan, const SbatchOptions& sbatch);

// Copies the plan into the experiment directory and says what was copied. Throws
// store::CodeSnapshotError.
void write_code(store::CodePlan& plan, const std::filesystem::path& experiment_dir);

}  // namespace dlx::spank
