// SPDX-License-Identifier: Apache-2.0
#pragma once
// Whether the kernel's OOM killer ended a process of this rank while its trainer ran, so that a
// crash says "out of memory" instead of a bare "killed by SIGKILL (exit 137)" (or a DataLoader's
// "worker ... killed by signal: Killed").
//
// Where the count is: the memory cgroup dlx-launch is in, which its trainer and the trainer's
// children share (Slurm's task/cgroup puts each task in one; without it, whatever cgroup the node
// runs it in). The kernel counts a kill in the memory cgroup of the process it killed (cgroup v2:
// that cgroup and its ancestors), in `oom_kill` of memory.events (v2) or memory.oom_control (v1,
// Linux 4.13 on). The directory is found as runc finds it: this process's cgroup path from
// /proc/self/cgroup, made relative to the root of the cgroup file system mounted for it
// (/proc/self/mountinfo's root field: a container sees only its own subtree, mounted at its root).
// The limit, when one is set, is memory.max (v2) or memory.limit_in_bytes (v1).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace dlx::launch {

struct MemoryCgroup {
  std::filesystem::path dir;
  bool v2 = false;
};

// The memory cgroup directory from /proc/self/cgroup's and /proc/self/mountinfo's texts; nullopt
// when there is none (no memory controller, or its file system is not mounted here).
std::optional<MemoryCgroup> memory_cgroup_of(std::string_view proc_cgroup, std::string_view mountinfo);

class OomKills {
 public:
  // This process's memory cgroup, when it has one with an oom_kill counter.
  static std::optional<OomKills> of_this_process();
  explicit OomKills(MemoryCgroup cgroup) : cgroup_(std::move(cgroup)) {}

  // The kills counted so far; nullopt when the counter cannot be read.
  std::optional<std::uint64_t> count() const;
  // The cgroup's memory limit in bytes; nullopt when it has none (or it cannot be read).
  std::optional<std::uint64_t> limit_bytes() const;

 private:
  MemoryCgroup cgroup_;
};

// The words a crash gets when `kills` processes were OOM-killed while the trainer ran: "out of
// memory: the kernel's OOM killer ended 1 process in this rank's memory cgroup (its limit: 4.29
// GB)". The cgroup's, not the trainer's own: without Slurm's task cgroup it may be shared.
std::string oom_cause(std::uint64_t kills, std::optional<std::uint64_t> limit_bytes);

}  // namespace dlx::launch
