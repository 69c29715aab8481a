// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Slurm that loaded the plugin against the release the plugin was built for. Slurm itself
// refuses a plugin whose plugin_version names another release before any dlx code runs; this
// check covers what gets past that (a Slurm that does not compare, a plugin_version that lies)
// and gives the refusal dlx's own words (docs/admin-guide.md, section 11, "What a Slurm release mismatch does").
extern "C" {
#include <slurm/spank.h>
}

#include <string>

namespace dlx::spank {

// SLURM_VERSION_NUMBER of the headers this copy of the plugin was built with (plugin_identity.cpp).
unsigned built_for_slurm_version();

// "" when the running Slurm is the release the plugin was built for; else the line that refuses
// --dl-experiment (also when the running version cannot be read). Valid in every context.
std::string running_slurm_problem(spank_t sp);

}  // namespace dlx::spank
