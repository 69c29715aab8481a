#pragma once
extern "C" {
#include <slurm/spank.h>
}

namespace dlx::spank {

// In slurmstepd's user_init (euid = the job's user): give the step the trial's environment.
// Returns 0, or -1 after reporting why.
int export_trial_environment(spank_t sp);

}  // namespace dlx::spank
