// SPDX-License-Identifier: Apache-2.0
#pragma once
// After sbatch: the experiment directory of a job that slurmctld did not take.
//
// The plugin creates <storage_root>/<user>/<name>[.N]/ before sbatch submits the job, because
// the job carries its name (the job name, DLX_EXPERIMENT_DIR). When slurmctld then refuses the
// job (a partition that does not exist, an account or QOS limit, a --time over the partition's
// MaxTime) or sbatch only tests it (--test-only), the directory stayed behind: an experiment
// `dlx status` showed as pending for ever, and the next submission of the name got `.2`.
//
// sbatch tells its plugins neither the job id nor whether it submitted: slurm_spank_exit runs
// after both, and S_JOB_ID is not available there. So at exit the plugin asks slurmctld for the
// user's jobs and removes the directory only when all of these hold:
//   - slurmctld answered, and none of the user's jobs may be this sbatch's
//     (submission_match.hpp: the same session or job name, submitted since the directory);
//   - the directory holds the same entries as when this sbatch wrote it (no trial wrote to it);
//   - sbatch did not wait for the job (--wait) nor send it to another cluster (--clusters).
// Every doubt keeps the directory: keeping one costs a `.2`, removing one a job's experiment.
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "sbatch_options.hpp"

namespace dlx::spank {

// What create_and_freeze (allocator.cpp) made, kept for the exit.
struct CreatedExperiment {
  std::filesystem::path directory;
  std::string job_name;              // the job's name as sbatch submits it
  std::time_t created = 0;           // before the job was submitted
  std::vector<std::string> entries;  // the directory's entries once written, sorted
};

// The directory's entries, sorted (what a trial adds shows as a difference).
std::vector<std::string> directory_entries(const std::filesystem::path& directory);

// At sbatch's exit: remove `created` when slurmctld holds no job of this sbatch (above), and say
// so. Reports instead of throwing.
void remove_if_not_submitted(const CreatedExperiment& created, const SbatchOptions& sbatch) noexcept;

}  // namespace dlx::spank
