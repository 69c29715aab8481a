// SPDX-License-Identifier: Apache-2.0
#include "dlx/common/bounded_command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "dlx/common/unique_fd.hpp"

extern char** environ;

namespace dlx {

namespace {

constexpr std::size_t kMaxErrBytes = 64 << 10;

std::string command_text(const std::vector<std::string>& argv) {
  std::string text;
  for (const auto& arg : argv) text += (text.empty() ? "" : " ") + arg;
  return text;
}

// This process's environment with `extra` added or replacing same-named entries.
std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> env;
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string_view text(*entry);
    bool replaced = false;
    for (const auto& [name, value] : extra) replaced = replaced || text.starts_with(name + "=");
    if (!replaced) env.emplace_back(text);
  }
  for (const auto& [name, value] : extra) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (auto& text : strings) result.push_back(text.data());
  result.push_back(nullptr);
  return result;
}

int wait_status_to_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

void kill_and_reap(pid_t child) {
  ::kill(-child, SIGKILL);  // the group: git's own children (hooks, pagers) go too
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
}

// The child's end of its stdout and stderr pipes, and the parent's.
struct ChildPipes {
  UniqueFd out_read, out_write, err_read, err_write;
};

ChildPipes make_pipes(const std::string& what) {
  ChildPipes pipes;
  std::array<int, 2> out_pipe{}, err_pipe{};
  if (::pipe2(out_pipe.data(), O_CLOEXEC) != 0) throw SystemError("pipe for " + what, errno);
  pipes.out_read.reset(out_pipe[0]);
  pipes.out_write.reset(out_pipe[1]);
  if (::pipe2(err_pipe.data(), O_CLOEXEC) != 0) throw SystemError("pipe for " + what, errno);
  pipes.err_read.reset(err_pipe[0]);
  pipes.err_write.reset(err_pipe[1]);
  return pipes;
}

// Starts `argv` in a process group of its own, stdin from /dev/null, stdout and stderr into
// `pipes`, with the signals it may have inherited ignored or blocked back to their defaults.
pid_t spawn_child(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& extra_env,
                  const ChildPipes& pipes) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipes.out_write.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, pipes.err_write.get(), 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setpgroup(&attributes, 0);  // its own group, killed as one
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGINT);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  auto args = argv;
  auto env = child_environment(extra_env);
  auto arg_pointers = pointers(args);
  auto env_pointers = pointers(env);
  pid_t child = 0;
  const int spawn_error = ::posix_spawnp(&child, arg_pointers[0], &actions, &attributes, arg_pointers.data(),
                                         env_pointers.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawn_error != 0) {
    throw CommandError(fmt::format("cannot run {}: {}", argv.front(), std::strerror(spawn_error)));
  }
  return child;
}

[[noreturn]] void give_up_waiting(pid_t child, const std::string& what, const char* did_not,
                                  std::chrono::steady_clock::duration timeout) {
  kill_and_reap(child);
  throw CommandError(fmt::format("{} did not {} within {:.0f} s and was killed", what, did_not,
                                 std::chrono::duration<double>(timeout).count()));
}

// Reads the child's stdout (up to limits.max_output: more kills it) and stderr (the first
// kMaxErrBytes kept) until it closes both, or kills it at `deadline`.
void collect_output(pid_t child, ChildPipes& pipes, const CommandLimits& limits, const std::string& what,
                    std::chrono::steady_clock::time_point deadline, CommandResult& result) {
  std::array<char, 65536> buffer{};
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) give_up_waiting(child, what, "finish", limits.timeout);
    std::array<pollfd, 2> fds{pollfd{out_open ? pipes.out_read.get() : -1, POLLIN, 0},
                              pollfd{err_open ? pipes.err_read.get() : -1, POLLIN, 0}};
    const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) {
      const int error = errno;
      kill_and_reap(child);
      throw SystemError("poll on the output of " + what, error);
    }
    for (int index = 0; index < 2 && ready > 0; ++index) {
      if (fds[index].fd < 0 || fds[index].revents == 0) continue;
      const ssize_t got = ::read(fds[index].fd, buffer.data(), buffer.size());
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        (index == 0 ? out_open : err_open) = false;
        continue;
      }
      if (index == 0) {
        result.out.append(buffer.data(), static_cast<std::size_t>(got));
        if (result.out.size() > limits.max_output) {
          kill_and_reap(child);
          throw CommandError(fmt::format("{} wrote more than {} bytes and was killed", what, limits.max_output));
        }
      } else if (result.err.size() < kMaxErrBytes) {
        result.err.append(buffer.data(), static_cast<std::size_t>(got));
      }
    }
  }
}

// Both pipes closed: the program has exited or is about to (or closed them and goes on: the
// deadline still holds). Its exit code.
int wait_for_exit(pid_t child, const CommandLimits& limits, const std::string& what,
                  std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) return wait_status_to_code(status);
    if (done < 0 && errno != EINTR) throw SystemError("waitpid for " + what, errno);
    if (std::chrono::steady_clock::now() >= deadline) give_up_waiting(child, what, "exit", limits.timeout);
    ::usleep(1000);
  }
}

}  // namespace

CommandResult run_bounded(const std::vector<std::string>& argv, const CommandLimits& limits,
                          const std::vector<std::pair<std::string, std::string>>& extra_env) {
  const std::string what = command_text(argv);
  ChildPipes pipes = make_pipes(what);
  const pid_t child = spawn_child(argv, extra_env, pipes);
  pipes.out_write.reset();
  pipes.err_write.reset();
  CommandResult result;
  const auto deadline = std::chrono::steady_clock::now() + limits.timeout;
  collect_output(child, pipes, limits, what, deadline, result);
  result.exit_code = wait_for_exit(child, limits, what, deadline);
  return result;
}

}  // namespace dlx
