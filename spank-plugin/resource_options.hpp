// SPDX-License-Identifier: Apache-2.0
#pragma once
// The sbatch options an experiment asks for (before the user's own options win). One table for
// the plugin, which applies them, and for `dlx plan`, which shows them.
#include <string>
#include <utility>
#include <vector>

#include "dlx/config/experiment.hpp"

namespace dlx::spank {

// (sbatch long option without "--", value), in a fixed order; unset requests are left out.
std::vector<std::pair<std::string, std::string>> resource_options(const config::Experiment& experiment);

}  // namespace dlx::spank
