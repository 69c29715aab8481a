// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/task_slots.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <memory>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "dlx/common/unique_fd.hpp"
#include "dlx/env/trial_environment.hpp"
#include "dlx/launch/child_process.hpp"
#include "dlx/launch/launch_error.hpp"

namespace dlx::launch {

namespace {

// The parent's view of its slots for its signal handler: a notice is remembered (no new ticket
// starts) and passed on to every running slot, which passes it to its trainer.
constexpr int kMostSlots = 256;
std::atomic<pid_t> g_slot_pids[kMostSlots];
std::atomic<int> g_packed_notice{0};

extern "C" void forward_to_slots(int signal_number) {
  if (signal_number == SIGTERM || signal_number == SIGUSR1 || signal_number == SIGUSR2) {
    int none = 0;
    g_packed_notice.compare_exchange_strong(none, signal_number);
  }
  for (auto& slot : g_slot_pids) {
    const pid_t pid = slot.load();
    if (pid > 0) ::kill(pid, signal_number);
  }
}

void install_slot_forwarding() {
  struct sigaction forward {};
  forward.sa_handler = forward_to_slots;
  forward.sa_flags = SA_RESTART;
  sigemptyset(&forward.sa_mask);
  for (int signal_number : forwarded_signals()) ::sigaction(signal_number, &forward, nullptr);
}

std::vector<std::string> split_devices(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string device; std::getline(in, device, ',');) {
    if (!device.empty()) out.push_back(device);
  }
  return out;
}

struct RunningSlot {
  int ticket = 0;
  int slot = 0;
  UniqueFd failure;  // read end: one byte when the slot's own dlx-launch failed
};

// Starts `ticket` in slot `slot`. The child never returns.
pid_t start_slot(const TaskTickets& task, const env::EnvMap& task_env, int ticket, int slot, const RunSlot& run,
                 UniqueFd& failure_read) {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) throw LaunchError(fmt::format("cannot make a pipe: {}", std::strerror(errno)));
  UniqueFd read_end(ends[0]);
  UniqueFd write_end(ends[1]);
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = ::fork();
  if (pid < 0) throw LaunchError(fmt::format("cannot fork a slot: {}", std::strerror(errno)));
  if (pid == 0) {
    int status = 1;
    try {
      read_end.reset();
      for (auto& other : g_slot_pids) other.store(0);
      install_notice_handlers();  // as a dlx-launch of its own: notices go to its trainer
      fmt::print(stderr, "dlx-launch: task {}: ticket {} in slot {}\n", task.task, ticket, slot);
      status = run(slot_environment(task, task_env, ticket, slot));
    } catch (const std::exception& error) {
      fmt::print(stderr, "dlx-launch: task {}: ticket {}: {}\n", task.task, ticket, error.what());
      const char failed = 'E';
      if (::write(write_end.get(), &failed, 1) != 1) {
        // The parent then counts the ticket as failed by its status: the message above says why.
      }
    }
    std::fflush(nullptr);
    ::_exit(status);
  }
  // Read once the slot has ended: without blocking, should anything it started still hold the
  // write end (each exec closes it).
  ::fcntl(read_end.get(), F_SETFL, O_NONBLOCK);
  failure_read = std::move(read_end);
  return pid;
}

int exit_status_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

}  // namespace

env::EnvMap slot_environment(const TaskTickets& task, const env::EnvMap& task_env, int ticket, int slot) {
  auto out = ticket == task.task ? task_env : ticket_environment(task_env, ticket);
  out["DLX_SLOT"] = std::to_string(slot);
  if (task.trials_per_gpu > 0) {
    const auto found = task_env.find("CUDA_VISIBLE_DEVICES");
    const auto devices = found == task_env.end() ? std::vector<std::string>{} : split_devices(found->second);
    if (!devices.empty()) out["CUDA_VISIBLE_DEVICES"] = devices[static_cast<std::size_t>(slot) % devices.size()];
    out["DLX_GPU_MEMORY_FRACTION"] = fmt::format("{:.6g}", 1.0 / task.trials_per_gpu);
  }
  return out;
}

int run_packed_task(const TaskTickets& task, const std::vector<int>& left, std::set<int>& done,
                    const env::EnvMap& task_env, const RunSlot& run) {
  const int at_once = std::min(task.at_once, kMostSlots);
  install_slot_forwarding();
  std::map<pid_t, RunningSlot> running;
  std::vector<bool> busy(static_cast<std::size_t>(at_once), false);
  std::size_t next = 0;
  int failed = 0;
  bool requeue = false;
  std::optional<int> launch_failed;  // the ticket whose slot's dlx-launch failed
  auto stopping = [&] { return requeue || launch_failed || g_packed_notice.load() != 0; };
  for (;;) {
    while (!stopping() && next < left.size() && static_cast<int>(running.size()) < at_once) {
      int slot = 0;
      while (busy[static_cast<std::size_t>(slot)]) ++slot;
      UniqueFd failure;
      const pid_t pid = start_slot(task, task_env, left[next], slot, run, failure);
      busy[static_cast<std::size_t>(slot)] = true;
      g_slot_pids[slot].store(pid);
      running.emplace(pid, RunningSlot{left[next], slot, std::move(failure)});
      ++next;
    }
    if (running.empty()) break;
    int wait_status = 0;
    const pid_t ended = ::waitpid(-1, &wait_status, 0);
    if (ended < 0) {
      if (errno == EINTR) continue;
      throw LaunchError(fmt::format("waitpid failed: {}", std::strerror(errno)));
    }
    const auto found = running.find(ended);
    if (found == running.end()) continue;  // not a slot (none is expected)
    const int status = exit_status_of(wait_status);
    const int ticket = found->second.ticket;
    const int slot = found->second.slot;
    char byte = 0;
    const bool own_failure = ::read(found->second.failure.get(), &byte, 1) == 1;
    g_slot_pids[slot].store(0);
    busy[static_cast<std::size_t>(slot)] = false;
    running.erase(found);
    if (own_failure) {
      launch_failed = launch_failed.value_or(ticket);
      continue;  // not done: a requeue runs it again
    }
    if (status == env::kRequeueExitCode) {
      requeue = true;
      continue;
    }
    if (status != 0) failed = status;
    done.insert(ticket);
    record_tickets_done(task, done);
  }
  if (requeue || g_packed_notice.load() != 0) {
    if (next < left.size() || requeue) return env::kRequeueExitCode;
  }
  if (launch_failed) {
    std::vector<int> not_done;
    for (const int ticket : task.tickets) {
      if (!done.contains(ticket)) not_done.push_back(ticket);
    }
    throw LaunchError(fmt::format("task {}: ticket {}: dlx-launch failed in its slot (above) (the task stops: {} did "
                                  "not run or did not finish; once this is fixed, `scontrol requeue` of the task runs "
                                  "them and skips the ones it finished)",
                                  task.task, *launch_failed, tickets_text(not_done, 0)));
  }
  return failed;
}

}  // namespace dlx::launch
