// SPDX-License-Identifier: Apache-2.0
#pragma once
// The site defaults `dlx validate` and `dlx plan` apply, as sbatch would: --site-config FILE,
// else $DLX_SITE_CONFIG, else the site_config= of the cluster's plugstack.conf, else none.
#include <optional>
#include <string>

#include "dlx/config/site.hpp"

namespace dlx::cli {

std::optional<config::SiteConfig> load_site_defaults(const std::string& explicit_file);

}  // namespace dlx::cli
