// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a trainer has used so far, read from where the kernel keeps it, for the system sampler
// (system_sampler.hpp). Two sources, the better one when it exists:
//   - the step's cgroup v2 (Slurm's cgroup plugin gives each task of a step its own:
//     .../job_<id>/step_<s>/...): cpu.stat usage_usec, memory.current, memory.peak, io.stat's
//     rbytes/wbytes. Exact, the exited processes included, nothing of another trial's.
//   - else the trainer's process tree from /proc: each live process's utime + stime + the
//     cutime + cstime of the children it has waited for (so a DataLoader worker that exited and
//     was reaped still counts), RSS (a page shared by a parent and its forked workers counts in
//     each), /proc/<pid>/io read_bytes/write_bytes (storage bytes; those of exited processes are
//     lost, so the rate is clamped at 0 when one exits).
// Counters are cumulative; the sampler turns them into rates.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

namespace dlx::launch {

struct UsageCounters {
  double cpu_seconds = 0;
  std::optional<std::uint64_t> memory_bytes;
  std::optional<std::uint64_t> memory_peak_bytes;
  std::optional<std::uint64_t> read_bytes;
  std::optional<std::uint64_t> write_bytes;
  std::optional<int> processes;
};

// The cgroup v2 directory `pid` is in, when it is a Slurm step's (its path names job_ and step_)
// and cgroup_root holds it; else nullopt (no cgroup v2, or a cgroup shared with other work).
std::optional<std::filesystem::path> step_cgroup_of(pid_t pid, const std::filesystem::path& proc_root = "/proc",
                                                    const std::filesystem::path& cgroup_root = "/sys/fs/cgroup");

// From a cgroup v2 directory; nullopt when its cpu.stat cannot be read (the cgroup is gone).
std::optional<UsageCounters> read_cgroup_usage(const std::filesystem::path& cgroup_dir);

// The trainer's processes: those in its step's cgroup when it has one (cgroup.procs), else
// `root` and its descendants; empty when they are gone.
std::vector<pid_t> trainer_processes(pid_t root, const std::optional<std::filesystem::path>& cgroup,
                                     const std::filesystem::path& proc_root = "/proc");

// From `root` and its descendants in proc_root; nullopt when root is gone.
std::optional<UsageCounters> read_process_tree_usage(pid_t root, const std::filesystem::path& proc_root = "/proc");

}  // namespace dlx::launch
