// SPDX-License-Identifier: Apache-2.0
#include "stop_signals.hpp"

#include <algorithm>
#include <thread>

namespace dlx::cli {

namespace {

volatile sig_atomic_t stop_requested = 0;

extern "C" void request_stop(int) { stop_requested = 1; }

}  // namespace

StopSignals::StopSignals() {
  stop_requested = 0;
  struct sigaction action {};
  action.sa_handler = request_stop;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &interrupt_);
  ::sigaction(SIGTERM, &action, &terminate_);
}

StopSignals::~StopSignals() {
  ::sigaction(SIGINT, &interrupt_, nullptr);
  ::sigaction(SIGTERM, &terminate_, nullptr);
}

bool StopSignals::requested() noexcept { return stop_requested != 0; }

void sleep_unless_stopped(std::chrono::duration<double> period) {
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(period);
  while (!stop_requested && Clock::now() < until) {
    const Clock::duration left = until - Clock::now();
    std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(50), left));
  }
}

}  // namespace dlx::cli
