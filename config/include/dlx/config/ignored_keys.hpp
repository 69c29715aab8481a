// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Determined keys a file has that dlx accepts but ignores, gathered from every section.
#include <string>
#include <vector>

#include "dlx/config/experiment.hpp"

namespace dlx::config {

// Each "key (why)": the top-level ones (experiment.determined.ignored) then the searcher's
// (experiment.searcher.ignored). The one warning line in Experiment::warnings, `dlx plan`'s
// `# ignored:` lines and `dlx convert-determined`'s "dropped:" list all show exactly these.
std::vector<std::string> ignored_determined_keys(const Experiment& experiment);

}  // namespace dlx::config
