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
#include <deque>
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
#include "dlx/launch/trial_outcome.hpp"

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
  UniqueFd report;  // read end: one byte (SlotReport) when the slot ended for a reason of its own
};

// What a slot tells its parent through its pipe, besides its exit status.
enum SlotReport : char {
  kLaunchFailed = 'E',  // its own dlx-launch failed (not the trainer): the message is in its log
  kGaveBack = 'Y',      // it waited for the searcher and gave its place back (exit 85)
};

// Starts `ticket` in slot `slot`, a process group of its own (so that the slot's trainer can be
// ended with it, should the slot itself be killed). The child never returns.
pid_t start_slot(const TaskTickets& task, const env::EnvMap& task_env, int ticket, int slot, const RunSlot& run,
                 UniqueFd& report_read) {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) throw LaunchError(fmt::format("cannot make a pipe: {}", std::strerror(errno)));
  UniqueFd read_end(ends[0]);
  UniqueFd write_end(ends[1]);
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = ::fork();
  if (pid < 0) throw LaunchError(fmt::format("cannot fork a slot: {}", std::strerror(errno)));
  if (pid == 0) {
    int status = 1;
    char report = 0;
    try {
      ::setpgid(0, 0);
      read_end.reset();
      for (auto& other : g_slot_pids) other.store(0);
      install_notice_handlers();  // as a dlx-launch of its own: notices go to its trainer
      fmt::print(stderr, "dlx-launch: task {}: ticket {} in slot {}\n", task.task, ticket, slot);
      const auto ran = run(slot_environment(task, task_env, ticket, slot));
      status = ran.status;
      if (ran.gave_slot_back) report = kGaveBack;
    } catch (const std::exception& error) {
      fmt::print(stderr, "dlx-launch: task {}: ticket {}: {}\n", task.task, ticket, error.what());
      report = kLaunchFailed;
    }
    if (report != 0 && ::write(write_end.get(), &report, 1) != 1) {
      // The parent then takes the status alone: a failure counts the ticket as failed (the
      // message above says why), a give-back as a requeue of the task.
    }
    std::fflush(nullptr);
    ::_exit(status);
  }
  ::setpgid(pid, pid);  // also here: the parent may signal the group before the child runs
  // Read once the slot has ended: without blocking, should anything it started still hold the
  // write end (each exec closes it).
  ::fcntl(read_end.get(), F_SETFL, O_NONBLOCK);
  report_read = std::move(read_end);
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
    if (!devices.empty()) {
      const auto position = static_cast<std::size_t>(slot) % devices.size();
      // Under MPS the daemon numbers the task's GPUs 0 to G-1 (mps_daemon.hpp).
      out["CUDA_VISIBLE_DEVICES"] = task.gpus_as_mps_numbers ? std::to_string(position) : devices[position];
    }
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
  // Tickets that gave their place back: `gave_back` wait for another slot to end (the search may
  // then have work for them), `to_retry` are started again before any new ticket.
  std::deque<int> gave_back;
  std::deque<int> to_retry;
  int failed = 0;
  bool requeue = false;
  std::optional<int> launch_failed;  // the ticket whose slot's dlx-launch failed
  auto stopping = [&] { return requeue || launch_failed || g_packed_notice.load() != 0; };
  auto next_ticket = [&]() -> std::optional<int> {
    if (!to_retry.empty()) {
      const int ticket = to_retry.front();
      to_retry.pop_front();
      return ticket;
    }
    if (next < left.size()) return left[next++];
    return std::nullopt;
  };
  for (;;) {
    while (!stopping() && static_cast<int>(running.size()) < at_once) {
      const auto ticket = next_ticket();
      if (!ticket) break;
      int slot = 0;
      while (busy[static_cast<std::size_t>(slot)]) ++slot;
      UniqueFd report;
      const pid_t pid = start_slot(task, task_env, *ticket, slot, run, report);
      busy[static_cast<std::size_t>(slot)] = true;
      g_slot_pids[slot].store(pid);
      running.emplace(pid, RunningSlot{*ticket, slot, std::move(report)});
    }
    if (running.empty()) break;
    // Which child ended, left a zombie for now (WNOWAIT): while it is one, its pid, and so its
    // process group's id, cannot be taken by another process, and a slot that was killed has its
    // group ended first (below).
    siginfo_t info{};
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOWAIT) != 0) {
      if (errno == EINTR) continue;
      throw LaunchError(fmt::format("waitid failed: {}", std::strerror(errno)));
    }
    const pid_t ended = info.si_pid;
    const auto found = running.find(ended);
    if (found != running.end() && (info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED)) {
      ::kill(-ended, SIGKILL);  // the slot's trainer, which no one would account for, ends with it
    }
    int wait_status = 0;
    while (::waitpid(ended, &wait_status, 0) < 0 && errno == EINTR) {
    }
    if (found == running.end()) continue;  // not a slot (none is expected)
    const int status = exit_status_of(wait_status);
    const int ticket = found->second.ticket;
    const int slot = found->second.slot;
    char report = 0;
    if (::read(found->second.report.get(), &report, 1) != 1) report = 0;
    g_slot_pids[slot].store(0);
    busy[static_cast<std::size_t>(slot)] = false;
    running.erase(found);
    if (report == kGaveBack && status == env::kRequeueExitCode) {
      // It waits for the searcher (a trial elsewhere must resume first, or a notice came). It
      // is tried again once another slot ends; the task yields its array slot only when
      // nothing in it runs any more.
      gave_back.push_back(ticket);
      continue;
    }
    // Something changed in the search: the tickets that gave their place back ask again.
    to_retry.insert(to_retry.end(), gave_back.begin(), gave_back.end());
    gave_back.clear();
    if (WIFSIGNALED(wait_status)) {
      // The slot's own dlx-launch was killed (the kernel's OOM killer, a user's kill): its
      // trainer has been ended with it (above), and the trial is not done.
      const int signal_number = WTERMSIG(wait_status);
      fmt::print(stderr, "dlx-launch: task {}: ticket {}: its slot's dlx-launch (pid {}) was {}; its trainer is "
                         "ended too, and {}\n",
                 task.task, ticket, ended, describe_exit(status),
                 signal_number == SIGKILL ? "the task requeues once the other slots end: the trial resumes from its "
                                            "checkpoint"
                                          : "the task stops once the other slots end");
      if (signal_number == SIGKILL) {
        requeue = true;
      } else {
        launch_failed = launch_failed.value_or(ticket);
      }
      continue;
    }
    if (report == kLaunchFailed) {
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
  const bool not_all_run = next < left.size() || !gave_back.empty() || !to_retry.empty();
  if (requeue || (g_packed_notice.load() != 0 && not_all_run)) return env::kRequeueExitCode;
  if (!launch_failed && !gave_back.empty()) {
    fmt::print(stderr, "dlx-launch: task {}: {} {} for the searcher and nothing else in the task runs: the task "
                       "gives its array slot back (exit {}) and asks again when Slurm restarts it\n",
               task.task, tickets_text({gave_back.begin(), gave_back.end()}, 0), gave_back.size() == 1 ? "waits" : "wait",
               env::kRequeueExitCode);
    return env::kRequeueExitCode;
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
