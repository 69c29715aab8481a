// SPDX-License-Identifier: Apache-2.0
#include "preemption.hpp"

#include <atomic>

namespace dlx::detail {

namespace {

std::atomic<int> g_received{0};
static_assert(std::atomic<int>::is_always_lock_free, "set from a signal handler");

extern "C" void on_checkpoint_signal(int signal_number) {
  int none = 0;
  g_received.compare_exchange_strong(none, signal_number);  // lock-free: async-signal-safe
}

}  // namespace

PreemptionSignals::PreemptionSignals(std::vector<int> signals)
    : signals_(std::move(signals)), previous_(signals_.size()) {
  struct sigaction action {};
  action.sa_handler = on_checkpoint_signal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (std::size_t i = 0; i < signals_.size(); ++i) {
    ::sigaction(signals_[i], &action, &previous_[i]);
  }
}

PreemptionSignals::~PreemptionSignals() {
  for (std::size_t i = 0; i < signals_.size(); ++i) {
    ::sigaction(signals_[i], &previous_[i], nullptr);
  }
}

int PreemptionSignals::received() noexcept { return g_received.load(); }

}  // namespace dlx::detail
