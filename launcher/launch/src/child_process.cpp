// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "dlx/common/error.hpp"
#include "dlx/common/unique_fd.hpp"
#include "dlx/launch/launch_error.hpp"
#include "dlx/launch/process_usage.hpp"

namespace dlx::launch {

namespace {

std::atomic<pid_t> g_child{0};
std::atomic<int> g_notice{0};  // the first notice signal received (before or while the child ran)
static_assert(std::atomic<pid_t>::is_always_lock_free, "used from a signal handler");
static_assert(std::atomic<int>::is_always_lock_free, "used from a signal handler");

bool is_notice(int signal_number) {
  return signal_number == SIGTERM || signal_number == SIGUSR1 || signal_number == SIGUSR2;
}

extern "C" void forward_to_child(int signal_number) {
  if (is_notice(signal_number)) {
    int none = 0;
    g_notice.compare_exchange_strong(none, signal_number);
  }
  const pid_t child = g_child.load();
  if (child > 0) ::kill(child, signal_number);
}

sigset_t forwarded_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal_number : forwarded_signals()) sigaddset(&set, signal_number);
  return set;
}

// `failed_exec`: the write end of a close-on-exec pipe; a failed execvp writes its errno there.
[[noreturn]] void exec_in_child(const std::vector<std::string>& argv, const sigset_t& old_mask, int failed_exec) {
  // Default dispositions and the original mask: the trainer starts like a directly run program.
  struct sigaction defaults {};
  defaults.sa_handler = SIG_DFL;
  for (int signal_number : forwarded_signals()) ::sigaction(signal_number, &defaults, nullptr);
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  const int error = errno;
  if (failed_exec >= 0) (void)!::write(failed_exec, &error, sizeof error);
  std::fprintf(stderr, "dlx-launch: cannot run '%s': %s\n", args[0], std::strerror(error));
  ::_exit(error == ENOENT ? 127 : 126);
}

// Blocks until the child exits. Returns its wait status.
int wait_for(pid_t child) {
  int wait_status = 0;
  while (::waitpid(child, &wait_status, 0) < 0) {
    if (errno != EINTR) {
      const int error = errno;
      throw LaunchError(std::string("waitpid failed: ") + std::strerror(error));
    }
  }
  return wait_status;
}

// As wait_for, asking `end_child` about once a second. SIGCHLD is blocked (by the caller), so
// sigtimedwait returns as soon as the child exits; a forwarded signal interrupts it (EINTR) and
// the loop goes on.
int wait_or_end(pid_t child, const std::function<bool()>& end_child) {
  sigset_t child_exit;
  sigemptyset(&child_exit);
  sigaddset(&child_exit, SIGCHLD);
  const timespec second{1, 0};
  for (;;) {
    int wait_status = 0;
    const pid_t done = ::waitpid(child, &wait_status, WNOHANG);
    if (done == child) return wait_status;
    if (done < 0 && errno != EINTR) {
      const int error = errno;
      throw LaunchError(std::string("waitpid failed: ") + std::strerror(error));
    }
    if (end_child()) {
      // The trainer's whole tree, found before the child dies (its descendants would then no
      // longer be linked to it): an entrypoint string's trainer is the shell's child, and its
      // DataLoader workers are the trainer's.
      for (const pid_t process : trainer_processes(child, std::nullopt)) ::kill(process, SIGKILL);
      ::kill(child, SIGKILL);
      return wait_for(child);
    }
    ::sigtimedwait(&child_exit, nullptr, &second);
  }
}

int exit_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

}  // namespace

void install_notice_handlers() {
  struct sigaction record {};
  record.sa_handler = forward_to_child;  // no child yet: only remembers the notice
  record.sa_flags = SA_RESTART;
  sigemptyset(&record.sa_mask);
  for (int signal_number : forwarded_signals()) {
    if (is_notice(signal_number)) ::sigaction(signal_number, &record, nullptr);
  }
}

int notice_received() noexcept { return g_notice.load(); }

const std::vector<int>& forwarded_signals() {
  static const std::vector<int> signals{SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGCONT};
  return signals;
}

int run_child(const std::vector<std::string>& argv, const std::function<bool()>& end_child,
              const std::function<void(pid_t)>& started, int* exec_error) {
  if (argv.empty()) throw LaunchError("empty command");
  // Whether the exec itself failed, told apart from a trainer that exits 127 or 126 of its own:
  // the child writes its errno into this pipe only when execvp returns, and exec closes the
  // child's write end (close-on-exec), so after the child's exit the pipe holds an errno or
  // nothing. Read once the child has exited: every write end is closed by then.
  if (exec_error) *exec_error = 0;
  std::array<int, 2> exec_pipe{-1, -1};
  if (exec_error && ::pipe2(exec_pipe.data(), O_CLOEXEC | O_NONBLOCK) != 0) {
    throw LaunchError(std::string("cannot create a pipe for the trainer's start: ") + std::strerror(errno));
  }
  const UniqueFd exec_read(exec_pipe[0]);
  UniqueFd exec_write(exec_pipe[1]);
  // Block the forwarded signals until the child's pid is known, so none is lost in between;
  // SIGCHLD stays blocked while waiting (wait_or_end waits for it).
  sigset_t blocked = forwarded_set();
  sigaddset(&blocked, SIGCHLD);
  sigset_t old_mask;
  ::sigprocmask(SIG_BLOCK, &blocked, &old_mask);
  struct sigaction forward {};
  forward.sa_handler = forward_to_child;
  forward.sa_flags = SA_RESTART;
  sigemptyset(&forward.sa_mask);
  std::vector<struct sigaction> previous(forwarded_signals().size());
  for (std::size_t i = 0; i < forwarded_signals().size(); ++i) {
    ::sigaction(forwarded_signals()[i], &forward, &previous[i]);
  }
  std::fflush(nullptr);  // no buffered output duplicated into the child
  const pid_t child = ::fork();
  if (child < 0) {
    const int error = errno;
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    throw LaunchError(std::string("cannot fork: ") + std::strerror(error));
  }
  if (child == 0) exec_in_child(argv, old_mask, exec_write.get());
  exec_write.reset();
  g_child.store(child);
  sigset_t waiting_mask = old_mask;
  sigaddset(&waiting_mask, SIGCHLD);
  ::sigprocmask(SIG_SETMASK, &waiting_mask, nullptr);
  if (started) started(child);

  const int wait_status = end_child ? wait_or_end(child, end_child) : wait_for(child);
  g_child.store(0);
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  for (std::size_t i = 0; i < forwarded_signals().size(); ++i) {
    ::sigaction(forwarded_signals()[i], &previous[i], nullptr);
  }
  int error = 0;
  if (exec_read && ::read(exec_read.get(), &error, sizeof error) == static_cast<ssize_t>(sizeof error)) {
    *exec_error = error;
  }
  return exit_status(wait_status);
}

}  // namespace dlx::launch
