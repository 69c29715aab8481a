// SPDX-License-Identifier: Apache-2.0
// The parent of a packed task (launcher/launch/include/dlx/launch/task_slots.hpp) against slots
// whose runs are scripted here, in real forked processes: a ticket that gives its place back is
// tried again once another slot ends and the task goes on; a task left with nothing but such
// tickets gives its array slot back (85); a slot killed by SIGKILL has its trainer ended with it,
// stays not done, and requeues the task. (The whole dlx-launch in slots: task_slots_test.py.)
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dlx/launch/task_slots.hpp"
#include "process_helpers.hpp"
#include "run_in_child.hpp"

using dlx::launch::SlotRun;
using dlx::launch::TaskTickets;

namespace {

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// How many times `ticket` has started, counting this start (a file per ticket in `dir`).
int count_attempt(const std::filesystem::path& dir, int ticket) {
  const auto path = dir / fmt::format("attempts-{}", ticket);
  std::ofstream(path, std::ios::app) << "x";
  return static_cast<int>(read_all(path).size());
}

void pause_ms(int milliseconds) { std::this_thread::sleep_for(std::chrono::milliseconds(milliseconds)); }

bool process_alive(pid_t pid) {
  // A zombie no one reaps has ended too: /proc/<pid>/stat's third field is its state.
  std::istringstream stat(read_all(fmt::format("/proc/{}/stat", pid)));
  std::string id, name, state;
  stat >> id >> name >> state;
  return !state.empty() && state != "Z";
}

struct PackedRun {
  std::string result;  // "status S done [..]" from the child that ran the task
  std::string log;     // what the task printed on stderr
};

// Runs tickets {0, 2, 4, ...}.size() == `tickets` of task 0, `at_once` at a time, in a child (the
// parent installs signal handlers and reaps any child), with stderr in a file.
PackedRun run_task(const std::filesystem::path& dir, std::vector<int> tickets, int at_once,
                   const dlx::launch::RunSlot& run) {
  std::filesystem::create_directories(dir / "tasks");
  const auto log = dir / "task.log";
  const auto child = dlx::testing::run_in_child([&] {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ::dup2(fd, STDERR_FILENO) < 0) return std::string("cannot redirect stderr");
    TaskTickets task;
    task.task = 0;
    task.tickets = tickets;
    task.progress = dir / "tasks" / "0.json";
    task.at_once = at_once;
    std::set<int> done;
    const int status = dlx::launch::run_packed_task(task, tickets, done, {{"DLX_TICKET", "0"}}, run);
    return fmt::format("status {} done [{}]", status, fmt::join(done, ", "));
  }, 60);
  return {child.text, read_all(log)};
}

}  // namespace

TEST_CASE("packed task: a ticket that gives its place back is tried again once another slot ends",
          "[launch][packing]") {
  dlx::test::TempDir dir("packed-give-back");
  // Ticket 0 waits for the searcher on its first start; 2 trains for a while; 4 briefly.
  const auto run = [&](const dlx::env::EnvMap& env) {
    const int ticket = std::stoi(env.at("DLX_TICKET"));
    const int attempt = count_attempt(dir.path(), ticket);
    if (ticket == 0 && attempt == 1) return SlotRun{85, true};
    pause_ms(ticket == 2 ? 1500 : 200);
    std::ofstream(dir.path() / "order", std::ios::app) << ticket << " ";
    return SlotRun{0, false};
  };
  const auto ran = run_task(dir.path(), {0, 2, 4}, 2, run);
  CHECK(ran.result == "status 0 done [0, 2, 4]");
  CHECK(read_all(dir.path() / "attempts-0") == "xx");
  // Ticket 4 took the place 0 gave back; 0 ran again once 4 ended, while 2 still trained.
  CHECK(read_all(dir.path() / "order") == "4 0 2 ");
  CHECK(read_all(dir.path() / "tasks" / "0.json").find("\"done\":[0,2,4]") != std::string::npos);
  CHECK_THAT(ran.log, Catch::Contains("ticket 0 in slot 0") && Catch::Contains("ticket 4 in slot 0"));
}

TEST_CASE("packed task: with only tickets that gave their place back left, the task requeues",
          "[launch][packing]") {
  dlx::test::TempDir dir("packed-all-wait");
  const auto run = [&](const dlx::env::EnvMap& env) {
    const int ticket = std::stoi(env.at("DLX_TICKET"));
    count_attempt(dir.path(), ticket);
    if (ticket == 0) return SlotRun{85, true};  // a trial elsewhere waits to resume, always
    pause_ms(500);
    return SlotRun{0, false};
  };
  const auto ran = run_task(dir.path(), {0, 2}, 2, run);
  CHECK(ran.result == "status 85 done [2]");
  // Once at the start, once more after ticket 2 ended; not again and again.
  CHECK(read_all(dir.path() / "attempts-0") == "xx");
  CHECK_THAT(ran.log, Catch::Contains("task 0: its ticket 0 waits for the searcher and nothing else in the task "
                                      "runs: the task gives its array slot back (exit 85)"));
}

TEST_CASE("packed task: a slot killed from outside ends its trainer, and the task requeues", "[launch][packing]") {
  dlx::test::TempDir dir("packed-killed");
  const auto trainer_pid = dir.path() / "trainer.pid";
  const auto run = [&](const dlx::env::EnvMap& env) {
    const int ticket = std::stoi(env.at("DLX_TICKET"));
    count_attempt(dir.path(), ticket);
    if (ticket == 0) {
      // The slot's "trainer" outlives it unless something ends it; then the OOM killer's
      // SIGKILL takes the slot's own dlx-launch.
      const pid_t trainer = ::fork();
      if (trainer == 0) {
        for (;;) ::pause();
      }
      std::ofstream(trainer_pid) << trainer;
      pause_ms(200);
      ::raise(SIGKILL);
    }
    pause_ms(800);
    return SlotRun{0, false};
  };
  const auto ran = run_task(dir.path(), {0, 2, 4}, 2, run);
  // Ticket 4 does not start after the kill: the task requeues once 2 ends, and runs 0 and 4 then.
  CHECK(ran.result == "status 85 done [2]");
  CHECK_FALSE(std::filesystem::exists(dir.path() / "attempts-4"));
  const pid_t trainer = std::stoi(read_all(trainer_pid));
  bool ended = false;
  for (int i = 0; i < 50 && !ended; ++i) {
    ended = !process_alive(trainer);
    if (!ended) pause_ms(100);
  }
  if (!ended) ::kill(trainer, SIGKILL);  // not to leave it behind when the check fails
  CHECK(ended);
  CHECK_THAT(ran.log, Catch::Contains("task 0: ticket 0: its slot's dlx-launch (pid") &&
                          Catch::Contains("was killed by SIGKILL (exit 137); its trainer is ended too, and the task "
                                          "requeues once the other slots end"));
}
