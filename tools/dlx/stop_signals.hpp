// SPDX-License-Identifier: Apache-2.0
#pragma once
// The watch loops of `dlx status --watch`, `dlx report --watch` and `dlx logs --follow`: SIGINT
// and SIGTERM end them between rounds (the command then exits 0), never in the middle of a write.
// A StopSignals installs the handlers for its lifetime and restores the previous ones after.
#include <signal.h>

#include <chrono>

namespace dlx::cli {

class StopSignals {
 public:
  StopSignals();   // clears an earlier request, then catches SIGINT and SIGTERM
  ~StopSignals();  // the previous handlers come back
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  static bool requested() noexcept;  // a signal arrived since the constructor

 private:
  struct sigaction interrupt_ {}, terminate_ {};
};

// Sleeps `period` in 50 ms slices, ending early when a stop was requested.
void sleep_unless_stopped(std::chrono::duration<double> period);

}  // namespace dlx::cli
