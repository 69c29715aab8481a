#include "plugin_state.hpp"

extern "C" {
#include <slurm/spank.h>
}

namespace dlx::spank {

PluginState& state() {
  static PluginState instance;
  return instance;
}

void report_error(const std::string& message) { slurm_error("%s", message.c_str()); }

void report_info(const std::string& message) { slurm_info("%s", message.c_str()); }

}  // namespace dlx::spank
