// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/process_usage.hpp"

#include <unistd.h>

#include <charconv>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "kernel_files.hpp"

namespace dlx::launch {

namespace fs = std::filesystem;
using kernel_files::keyed_value;
using kernel_files::parse_number;
using kernel_files::slurp;

namespace {

struct ProcStat {
  pid_t ppid = 0;
  std::uint64_t ticks = 0;  // utime + stime + cutime + cstime
  std::uint64_t rss_pages = 0;
};

// /proc/<pid>/stat: the fields after the command name, which is in parentheses and may hold
// spaces and parentheses itself (so the last ')' ends it).
std::optional<ProcStat> read_stat(const fs::path& proc_root, pid_t pid) {
  const auto text = slurp(proc_root / std::to_string(pid) / "stat");
  if (!text) return std::nullopt;
  const auto close = text->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text->substr(close + 1));
  // Fields from 3 on: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
  // utime(14) stime cutime cstime priority nice threads itrealvalue starttime vsize rss(24).
  std::vector<std::string> values;
  for (std::string field; fields >> field && values.size() < 22;) values.push_back(std::move(field));
  if (values.size() < 22) return std::nullopt;
  ProcStat stat;
  const auto ppid = parse_number<long>(values[1]);
  if (!ppid) return std::nullopt;
  stat.ppid = static_cast<pid_t>(*ppid);
  for (std::size_t i = 11; i <= 14; ++i) {
    const auto ticks = parse_number<long long>(values[i]);
    if (ticks && *ticks > 0) stat.ticks += static_cast<std::uint64_t>(*ticks);
  }
  const auto rss = parse_number<long long>(values[21]);
  if (rss && *rss > 0) stat.rss_pages = static_cast<std::uint64_t>(*rss);
  return stat;
}

}  // namespace

std::optional<fs::path> step_cgroup_of(pid_t pid, const fs::path& proc_root, const fs::path& cgroup_root) {
  const auto text = slurp(proc_root / std::to_string(pid) / "cgroup");
  if (!text) return std::nullopt;
  // cgroup v2: the line "0::/path" (v1 hierarchies have other ids and are not read).
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("0::/")) continue;
    const std::string relative = line.substr(4);
    if (relative.find("job_") == std::string::npos || relative.find("step_") == std::string::npos) return std::nullopt;
    const fs::path directory = cgroup_root / relative;
    std::error_code error;
    if (!fs::exists(directory / "cpu.stat", error)) return std::nullopt;
    return directory;
  }
  return std::nullopt;
}

std::optional<UsageCounters> read_cgroup_usage(const fs::path& cgroup_dir) {
  const auto cpu = slurp(cgroup_dir / "cpu.stat");
  if (!cpu) return std::nullopt;
  const auto usage = keyed_value(*cpu, "usage_usec");
  if (!usage) return std::nullopt;
  UsageCounters counters;
  counters.cpu_seconds = static_cast<double>(*usage) / 1e6;
  if (const auto text = slurp(cgroup_dir / "memory.current")) counters.memory_bytes = parse_number<std::uint64_t>(*text);
  if (const auto text = slurp(cgroup_dir / "memory.peak")) counters.memory_peak_bytes = parse_number<std::uint64_t>(*text);
  if (const auto text = slurp(cgroup_dir / "io.stat")) {
    // One line per device: "8:0 rbytes=1 wbytes=2 rios=3 ...": summed over the devices.
    std::uint64_t read = 0, written = 0;
    std::istringstream words(*text);
    for (std::string word; words >> word;) {
      if (word.starts_with("rbytes=")) read += parse_number<std::uint64_t>(std::string_view(word).substr(7)).value_or(0);
      if (word.starts_with("wbytes=")) written += parse_number<std::uint64_t>(std::string_view(word).substr(7)).value_or(0);
    }
    counters.read_bytes = read;
    counters.write_bytes = written;
  }
  return counters;
}

namespace {

// The children of `pid` from /proc/<pid>/task/<tid>/children (each thread lists the children it
// forked): a walk from the trainer that reads its own tree only, not every process of the node.
// nullopt when the kernel has no such file (CONFIG_PROC_CHILDREN).
std::optional<std::vector<pid_t>> children_of(const fs::path& proc_root, pid_t pid) {
  std::vector<pid_t> children;
  std::error_code error;
  bool any = false;
  for (const auto& task : fs::directory_iterator(proc_root / std::to_string(pid) / "task", error)) {
    const auto text = slurp(task.path() / "children");
    if (!text) continue;
    any = true;
    std::istringstream words(*text);
    for (long child = 0; words >> child;) children.push_back(static_cast<pid_t>(child));
  }
  if (!any) return std::nullopt;
  return children;
}

// The tree by a scan of every process's parent: where children files do not exist.
std::vector<pid_t> tree_by_scan(const fs::path& proc_root, pid_t root) {
  std::multimap<pid_t, pid_t> children;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(proc_root, error)) {
    const auto name = entry.path().filename().string();
    const auto pid = parse_number<long>(name);
    if (!pid || std::to_string(*pid) != name) continue;
    if (auto stat = read_stat(proc_root, static_cast<pid_t>(*pid))) children.emplace(stat->ppid, static_cast<pid_t>(*pid));
  }
  std::vector<pid_t> tree{root};
  for (std::size_t i = 0; i < tree.size(); ++i) {
    const auto [first, last] = children.equal_range(tree[i]);
    for (auto it = first; it != last; ++it) tree.push_back(it->second);
  }
  return tree;
}

std::vector<pid_t> process_tree(const fs::path& proc_root, pid_t root) {
  std::vector<pid_t> tree{root};
  for (std::size_t i = 0; i < tree.size(); ++i) {
    auto children = children_of(proc_root, tree[i]);
    if (!children) {
      if (i == 0) return tree_by_scan(proc_root, root);
      continue;  // exited meanwhile
    }
    tree.insert(tree.end(), children->begin(), children->end());
  }
  return tree;
}

}  // namespace

std::vector<pid_t> trainer_processes(pid_t root, const std::optional<fs::path>& cgroup, const fs::path& proc_root) {
  if (cgroup) {
    std::vector<pid_t> pids;
    if (const auto text = slurp(*cgroup / "cgroup.procs")) {
      std::istringstream words(*text);
      for (long pid = 0; words >> pid;) pids.push_back(static_cast<pid_t>(pid));
    }
    return pids;
  }
  if (!read_stat(proc_root, root)) return {};
  return process_tree(proc_root, root);
}

std::optional<UsageCounters> read_process_tree_usage(pid_t root, const fs::path& proc_root) {
  if (!read_stat(proc_root, root)) return std::nullopt;
  const std::vector<pid_t> tree = process_tree(proc_root, root);
  static const long ticks_per_second = ::sysconf(_SC_CLK_TCK);
  static const long page_bytes = ::sysconf(_SC_PAGESIZE);
  UsageCounters counters;
  std::uint64_t ticks = 0, rss_pages = 0, read = 0, written = 0;
  bool io_known = false;
  int processes = 0;
  for (const pid_t pid : tree) {
    const auto stat = read_stat(proc_root, pid);
    if (!stat) continue;  // exited meanwhile
    ++processes;
    ticks += stat->ticks;
    rss_pages += stat->rss_pages;
    if (const auto io = slurp(proc_root / std::to_string(pid) / "io")) {
      read += keyed_value(*io, "read_bytes").value_or(0);
      written += keyed_value(*io, "write_bytes").value_or(0);
      io_known = true;
    }
  }
  counters.cpu_seconds = static_cast<double>(ticks) / static_cast<double>(ticks_per_second > 0 ? ticks_per_second : 100);
  counters.memory_bytes = rss_pages * static_cast<std::uint64_t>(page_bytes > 0 ? page_bytes : 4096);
  if (io_known) {
    counters.read_bytes = read;
    counters.write_bytes = written;
  }
  counters.processes = processes;
  return counters;
}

}  // namespace dlx::launch
