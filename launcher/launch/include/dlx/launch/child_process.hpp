// SPDX-License-Identifier: Apache-2.0
#pragma once
// Runs the trainer as a child of dlx-launch: fork + execvp, so the child inherits the whole
// environment (PMIx variables included: under srun --mpi=pmix it is the MPI process of this
// task). While it runs, SIGTERM, SIGINT, SIGUSR1, SIGUSR2 and SIGCONT sent to dlx-launch are
// forwarded to it (Slurm's preemption and --signal warnings reach the trainer whichever process
// Slurm signals; a trainer may see a signal twice when Slurm signals the whole step, which is
// harmless for these signals).
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace dlx::launch {

// The signals forwarded to the child.
const std::vector<int>& forwarded_signals();

// From dlx-launch's start: a notice signal (SIGTERM, SIGUSR1, SIGUSR2: preemption, requeue, time
// limit) is remembered instead of killing dlx-launch, so a notice that arrives before the trainer
// runs (or before the trainer installed its own handlers and died of it) is still a notice.
void install_notice_handlers();
// The first notice signal received since install_notice_handlers(), or 0.
int notice_received() noexcept;

// Waits for the child and returns its exit status: the exit code, or 128 + signal number when
// a signal killed it (the shell convention). A program that cannot be executed exits 127 (not
// found) or 126 (not executable) after printing why. Throws LaunchError when fork fails.
// `end_child`, when given, is asked about once a second while the child runs; when it returns
// true the child is SIGKILLed (its status, 137, is returned): a peer rank crashed (peer_crash.hpp).
// `started`, when given, is called with the child's pid once it runs (the system sampler).
// `exec_error`, when given, is set to the errno of a failed exec (0 when the program ran), told
// apart from a program that itself exits 127 or 126.
int run_child(const std::vector<std::string>& argv, const std::function<bool()>& end_child = {},
              const std::function<void(pid_t)>& started = {}, int* exec_error = nullptr);

}  // namespace dlx::launch
