// SPDX-License-Identifier: Apache-2.0
#pragma once
extern "C" {
#include <slurm/spank.h>
}

namespace dlx::spank {

// Set instead of the trial's environment when the plugin refuses the trial (e.g. an experiment
// directory another user could have changed): the reason, for dlx-launch to exit with.
inline constexpr const char* kRefusalVariable = "DLX_REFUSED";
// plugstack.conf's local_dir=, unexpanded, for dlx-launch's data staging.
inline constexpr const char* kSiteLocalDirVariable = "DLX_SITE_LOCAL_DIR";
// Slurm's TmpFS as slurmctld reported it to sbatch (%n kept): below local_dir= and above $TMPDIR
// in where dlx-launch puts the node-local code copy and data cache.
inline constexpr const char* kSlurmTmpFsVariable = "DLX_SLURM_TMPFS";

// In slurmstepd's user_init (euid = the job's user): give the step the trial's environment, or,
// when that cannot be done safely, report why and set DLX_REFUSED. Always returns 0: a failed
// user_init in a batch step drains the node.
int export_trial_environment(spank_t sp);

}  // namespace dlx::spank
