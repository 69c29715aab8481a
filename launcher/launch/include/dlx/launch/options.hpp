// SPDX-License-Identifier: Apache-2.0
#pragma once
// dlx-launch's command line:  dlx-launch [--dry-run] [-- COMMAND [ARGS...]]
#include <string>
#include <vector>

#include "dlx/launch/launch_error.hpp"

namespace dlx::launch {

class UsageError : public LaunchError {
 public:
  using LaunchError::LaunchError;
};

struct Options {
  bool help = false;
  bool dry_run = false;               // print the environment and the command, run nothing
  std::vector<std::string> command;   // empty: the experiment's entrypoint
};

Options parse_options(int argc, const char* const* argv);  // throws UsageError
std::string usage_text();

}  // namespace dlx::launch
