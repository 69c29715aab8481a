// SPDX-License-Identifier: Apache-2.0
// The plugin's identity for Slurm and the Slurm release it was built for: the one file compiled
// once per copy of the plugin (spank-plugin/CMakeLists.txt, dlx_spank_plugin). tests/plugin builds
// copies that claim other releases, to show what Slurm and dlx do with them
// (tests/cluster/slurm_release_test.sh):
//   DLX_PLUGIN_VERSION_NUMBER    plugin_version, which Slurm compares with its own release when it
//                                loads the plugin (default: SLURM_VERSION_NUMBER of the headers)
//   DLX_BUILT_FOR_SLURM_VERSION  the release dlx's own check expects (default: the same)
extern "C" {
#include <slurm/spank.h>
}

#include "running_slurm.hpp"

#ifndef DLX_PLUGIN_VERSION_NUMBER
#define DLX_PLUGIN_VERSION_NUMBER SLURM_VERSION_NUMBER
#endif
#ifndef DLX_BUILT_FOR_SLURM_VERSION
#define DLX_BUILT_FOR_SLURM_VERSION DLX_PLUGIN_VERSION_NUMBER
#endif

extern "C" {
// Defined by hand: SPANK_PLUGIN() declares them `const` at namespace scope, which in C++ means
// internal linkage, so Slurm could not find them in the loaded module.
__attribute__((visibility("default"))) extern const char plugin_name[] = "dlx";
__attribute__((visibility("default"))) extern const char plugin_type[] = "spank";
__attribute__((visibility("default"))) extern const unsigned int plugin_version = DLX_PLUGIN_VERSION_NUMBER;
}

namespace dlx::spank {

unsigned built_for_slurm_version() { return DLX_BUILT_FOR_SLURM_VERSION; }

}  // namespace dlx::spank
