// SPDX-License-Identifier: Apache-2.0
#include "plugin_state.hpp"

#include "dlx/config/display_text.hpp"

extern "C" {
#include <slurm/spank.h>
}

namespace dlx::spank {

PluginState& state() {
  static PluginState instance;
  return instance;
}

namespace {

// Called from the callbacks' catch blocks too: nothing may escape, out of memory included.
void print_escaped(void (*print)(const char*, ...), const std::string& message) noexcept {
  try {
    print("%s", config::printable(message).c_str());
  } catch (...) {
    print("%s", "dlx: a message could not be shown (out of memory)");
  }
}

}  // namespace

// Every message goes through printable() here, at the one place where the plugin prints: they
// quote file names, link targets, paths, values and library text that a user (or a repository
// they cloned) chose, and a control character in one would act on the terminal of whoever runs
// sbatch, or forge a line (a "Submitted batch job" of its own). The CLI escapes the same way.
void report_error(const std::string& message) noexcept { print_escaped(slurm_error, message); }

void report_info(const std::string& message) noexcept { print_escaped(slurm_info, message); }

void report_verbose(const std::string& message) noexcept { print_escaped(slurm_verbose, message); }

}  // namespace dlx::spank
