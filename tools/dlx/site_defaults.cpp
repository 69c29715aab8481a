// SPDX-License-Identifier: Apache-2.0
#include "site_defaults.hpp"

#include <cstdlib>

#include "experiment_locator.hpp"

namespace dlx::cli {

std::optional<config::SiteConfig> load_site_defaults(const std::string& explicit_file) {
  std::string file = explicit_file;
  if (file.empty()) {
    if (const char* from_environment = std::getenv("DLX_SITE_CONFIG")) file = from_environment;
  }
  if (file.empty() && std::getenv("SLURM_CONF")) file = plugstack_argument("site_config");
  if (file.empty()) return std::nullopt;
  return config::parse_site_config_file(file);
}

}  // namespace dlx::cli
