#include "plugin_options.hpp"

#include <fmt/format.h>

#include "dlx/common/error.hpp"

namespace dlx::spank {

PluginOptions parse_plugin_options(const std::vector<std::string>& arguments) {
  PluginOptions options;
  for (const auto& argument : arguments) {
    auto equals = argument.find('=');
    if (equals == std::string::npos) {
      throw Error(fmt::format("plugstack.conf: argument '{}' is not key=value "
                              "(use storage_root=DIR, site_config=FILE and array_via=sbatch|job_submit)", argument));
    }
    std::string key = argument.substr(0, equals), value = argument.substr(equals + 1);
    if (key == "storage_root") {
      if (value.empty() || value.front() != '/') {
        throw Error(fmt::format("plugstack.conf: storage_root must be an absolute path, got '{}'", value));
      }
      options.storage_root = value;
    } else if (key == "site_config") {
      if (value.empty() || value.front() != '/') {
        throw Error(fmt::format("plugstack.conf: site_config must be an absolute path, got '{}'", value));
      }
      options.site_config = value;
    } else if (key == "array_via") {
      if (value == "sbatch") {
        options.array_via = ArrayVia::sbatch;
      } else if (value == "job_submit") {
        options.array_via = ArrayVia::job_submit;
      } else {
        throw Error(fmt::format("plugstack.conf: array_via must be sbatch or job_submit, got '{}'", value));
      }
    } else {
      throw Error(fmt::format("plugstack.conf: unknown argument '{}' (known: storage_root, site_config, array_via)", key));
    }
  }
  if (options.storage_root.empty()) {
    throw Error("plugstack.conf: storage_root=DIR is not set (the administrator must name the shared "
                "directory for experiments)");
  }
  return options;
}

}  // namespace dlx::spank
