// SPDX-License-Identifier: Apache-2.0
// Configuration errors at the trainer's edge (trial.hpp): which exceptions they are, the exit
// status a trainer ends with, and the std::terminate handler that ends an uncaught one with it.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>

#include "dlx/trial.hpp"

namespace dlx {

namespace {

std::terminate_handler previous_handler = nullptr;

// An uncaught TrialConfigError or HparamError: its message, as the C++ runtime would print it
// (the last line, which dlx-launch records as the trial's last error), then exit 78 without the
// abort; anything else goes to the handler that was there before.
[[noreturn]] void config_error_exit() {
  if (const auto current = std::current_exception()) {
    try {
      std::rethrow_exception(current);
    } catch (const std::exception& error) {
      if (is_config_error(error)) {
        std::fflush(stdout);
        std::fprintf(stderr, "terminate called after throwing a dlx configuration error\n  what():  %s\n", error.what());
        std::fflush(stderr);
        std::_Exit(kConfigErrorExitCode);
      }
    } catch (...) {
    }
  }
  if (previous_handler != nullptr) previous_handler();
  std::abort();
}

}  // namespace

bool is_config_error(const std::exception& error) noexcept {
  return dynamic_cast<const TrialConfigError*>(&error) != nullptr || dynamic_cast<const HparamError*>(&error) != nullptr;
}

int exit_status_for(const std::exception& error) noexcept { return is_config_error(error) ? kConfigErrorExitCode : 1; }

void Trial::install_config_error_exit() {
  static std::once_flag once;
  std::call_once(once, [] { previous_handler = std::set_terminate(config_error_exit); });
}

}  // namespace dlx
