// SPDX-License-Identifier: Apache-2.0
#pragma once
// Running a piece of a test in a forked child, as another user when the test runs as root: what
// the child's code returns (or the message it threw) comes back through a pipe, and alarm() turns
// a call that blocks into a failed test instead of a hung one.
#include <grp.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <string>

namespace dlx::testing {

// Who a forked child becomes before it acts (run as root only): a user and its group.
struct Credentials {
  uid_t uid;
  gid_t gid;
};

inline bool become(const std::optional<Credentials>& who) {
  if (!who) return true;
  return ::setgroups(0, nullptr) == 0 && ::setgid(who->gid) == 0 && ::setuid(who->uid) == 0;
}

struct ChildResult {
  int status = -1;   // exit status; 128 + signal when killed (SIGALRM: it hung)
  std::string text;  // what the body returned, "threw: <message>", or "cannot change user"
};

// Runs `body` in a forked child (as `who`, when given) under alarm(`seconds`).
inline ChildResult run_in_child(const std::function<std::string()>& body, unsigned seconds = 60,
                                std::optional<Credentials> who = std::nullopt) {
  ChildResult result;
  int out[2];
  if (::pipe(out) != 0) return result;
  const pid_t child = ::fork();
  if (child < 0) return result;
  if (child == 0) {
    ::close(out[0]);
    ::alarm(seconds);
    std::string text;
    if (!become(who)) {
      text = "cannot change user";
    } else {
      try {
        text = body();
      } catch (const std::exception& error) {
        text = std::string("threw: ") + error.what();
      }
    }
    const bool sent = ::write(out[1], text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::_exit(sent ? 0 : 1);
  }
  ::close(out[1]);
  char buffer[4096];
  for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) > 0;) result.text.append(buffer, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace dlx::testing
