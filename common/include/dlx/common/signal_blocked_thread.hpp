// SPDX-License-Identifier: Apache-2.0
#pragma once
// A helper thread that starts with every signal blocked (a thread inherits its creator's mask):
// the process's signals (a checkpoint notice, dlx-launch's requeue signal, a trainer's own) go to
// the threads that handle them, never to a helper, and a SIGPIPE raised by a helper's write to a
// pipe whose reader went stays pending on it, harmless, while the write fails with EPIPE.
#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace dlx {

// Starts `function` on a new thread with every signal blocked; the caller's own mask is back
// before this returns or throws (std::system_error, as std::thread's constructor).
template <typename Function>
std::thread signal_blocked_thread(Function&& function) {
  sigset_t all, previous;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  struct RestoreMask {
    sigset_t mask;
    ~RestoreMask() { ::pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
  } restore{previous};
  return std::thread(std::forward<Function>(function));
}

}  // namespace dlx
