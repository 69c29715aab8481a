// SPDX-License-Identifier: Apache-2.0
// dlx-launch: see launch.hpp for the flow. Typed errors become messages and exit codes here only
// (the message as launch_error_line(); run_launch has also put it in the trial's log).
#include <cstdio>

#include <fmt/format.h>

#include "dlx/env/environment.hpp"
#include "dlx/launch/launch.hpp"
#include "dlx/launch/launch_error.hpp"
#include "dlx/launch/options.hpp"

namespace {

constexpr int kExitLaunchFailed = 1;  // dlx-launch itself failed; the trainer never ran
constexpr int kExitUsage = 2;

}  // namespace

int main(int argc, char** argv) {
  using namespace dlx::launch;
  try {
    const Options options = parse_options(argc, argv);
    if (options.help) {
      std::fputs(usage_text().c_str(), stdout);
      return 0;
    }
    return run_launch(options, dlx::env::current_environment(), resolve_ipv4, stdout);
  } catch (const UsageError& error) {
    fmt::print(stderr, "dlx-launch: {}\n\n{}", error.what(), usage_text());
    return kExitUsage;
  } catch (const std::exception& error) {  // a LaunchError, or any other failure
    std::fputs(launch_error_line(error.what()).c_str(), stderr);
    return kExitLaunchFailed;
  }
}
