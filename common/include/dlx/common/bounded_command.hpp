// SPDX-License-Identifier: Apache-2.0
#pragma once
// Runs a helper program (git) from a process that must never hang: sbatch's allocator context.
// The child gets its own process group, stdin from /dev/null, and its stdout and stderr captured;
// past the deadline or the output cap, the whole group is killed (SIGKILL) and reaped, and the
// caller gets a CommandError saying which command and why. No shell is involved.
#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "dlx/common/error.hpp"

namespace dlx {

class CommandError : public Error {
 public:
  using Error::Error;
};

struct CommandResult {
  int exit_code = 0;  // the program's exit status (128 + N when killed by signal N)
  std::string out;    // everything it wrote to stdout
  std::string err;    // to stderr (capped at 64 KiB; for messages)
};

struct CommandLimits {
  std::chrono::milliseconds timeout{20000};
  std::size_t max_output = std::size_t{256} << 20;  // stdout bytes; more ends the command
};

// argv[0] is looked up in PATH. `extra_env` is added to (or overrides) this process's environment.
// Throws CommandError when the program cannot start, runs past the timeout or writes too much.
CommandResult run_bounded(const std::vector<std::string>& argv, const CommandLimits& limits = {},
                          const std::vector<std::pair<std::string, std::string>>& extra_env = {});

}  // namespace dlx
