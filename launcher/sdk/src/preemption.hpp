// SPDX-License-Identifier: Apache-2.0
#pragma once
// The local half of should_checkpoint_and_exit(): handlers for the checkpoint signals (SIGTERM,
// SIGUSR1, SIGUSR2 by default: Slurm's preemption SIGTERM and the --signal=... warnings; several
// are accepted because NCCL and others use SIGUSR1 for their own purposes) that only set a flag.
// The handler is async-signal-safe: one store to a lock-free atomic. The Trial asks every rank's
// flag collectively (trial.cpp), so all ranks decide to stop at the same step.
//
// This file only catches the request; the rest of the preemption protocol (the agreement, the
// save within DLX_EXIT_DEADLINE_S, the stop_reason and exit 85 for Slurm's requeue, the resume)
// is checkpointing.cpp's, whose header comment lists it step by step.
#include <csignal>
#include <vector>

namespace dlx::detail {

class PreemptionSignals {
 public:
  // Installs the handlers; the previous dispositions come back in the destructor.
  explicit PreemptionSignals(std::vector<int> signals);
  ~PreemptionSignals();
  PreemptionSignals(const PreemptionSignals&) = delete;
  PreemptionSignals& operator=(const PreemptionSignals&) = delete;

  // The signal that arrived first since start-up, or 0.
  static int received() noexcept;

 private:
  std::vector<int> signals_;
  std::vector<struct sigaction> previous_;
};

}  // namespace dlx::detail
