// SPDX-License-Identifier: Apache-2.0
// A plugin-shaped module built without any hardening (tests/plugin/CMakeLists.txt), for
// hardening_test.sh to show that each of its checks fails on such a file: a fixed-size buffer
// (a canary and a fortified snprintf when hardened) and one exported helper besides the plugin
// symbols.
#include <cstdio>
#include <cstring>

extern "C" {
__attribute__((visibility("default"))) extern const char plugin_name[] = "dlx_unhardened_probe";
__attribute__((visibility("default"))) extern const char plugin_type[] = "spank";
__attribute__((visibility("default"))) extern const unsigned int plugin_version = 0;

__attribute__((visibility("default"))) int dlx_probe_helper(const char* text) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "probe: %s", text);
  return static_cast<int>(std::strlen(buffer));
}

__attribute__((visibility("default"))) int slurm_spank_init(void*, int argc, char** argv) {
  return dlx_probe_helper(argc > 0 ? argv[0] : "") > 0 ? 0 : -1;
}
}
