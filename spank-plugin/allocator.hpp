// SPDX-License-Identifier: Apache-2.0
#pragma once
extern "C" {
#include <slurm/spank.h>
}

namespace dlx::spank {

// Inside sbatch, as the user, after every option is known: validate the experiment, create its
// directory with the frozen snapshot, and turn the submission into the experiment's job array.
// Returns 0, or -1 after reporting why (then sbatch submits nothing).
int prepare_submission(spank_t sp);

// At sbatch's exit (slurm_spank_exit), submitted or not: the directory prepare_submission created
// is removed again when slurmctld holds no job of this sbatch (refused_job_cleanup.hpp).
void finish_submission() noexcept;

}  // namespace dlx::spank
