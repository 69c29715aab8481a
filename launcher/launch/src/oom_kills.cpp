// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/oom_kills.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "dlx/common/byte_size.hpp"
#include "kernel_files.hpp"

namespace dlx::launch {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> words_of(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

bool has_option(const std::string& options, std::string_view name) {
  std::istringstream in(options);
  for (std::string option; std::getline(in, option, ',');) {
    if (option == name) return true;
  }
  return false;
}

// The path of this process's cgroup in the v2 hierarchy ("0::/path"), or in the v1 hierarchy
// whose controllers include memory ("4:memory:/path", "5:cpu,memory:/path").
std::optional<std::string> cgroup_path(std::string_view proc_cgroup, bool v2) {
  std::istringstream lines{std::string(proc_cgroup)};
  for (std::string line; std::getline(lines, line);) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? std::string::npos : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const auto controllers = line.substr(first + 1, second - first - 1);
    const bool matches = v2 ? line.substr(0, first) == "0" && controllers.empty() : has_option(controllers, "memory");
    if (matches) return line.substr(second + 1);
  }
  return std::nullopt;
}

// The mount point of the cgroup file system that holds `path`, with `path` made relative to the
// mount's root; nullopt when none does. mountinfo's line: "id parent major:minor root mountpoint
// options [optional fields] - fstype source superoptions".
std::optional<fs::path> mounted_dir(std::string_view mountinfo, const std::string& path, bool v2) {
  std::istringstream lines{std::string(mountinfo)};
  for (std::string line; std::getline(lines, line);) {
    const auto words = words_of(line);
    const auto dash = std::find(words.begin(), words.end(), "-");
    if (words.size() < 5 || dash == words.end() || words.end() - dash < 4) continue;
    const auto& fstype = *(dash + 1);
    const auto& superoptions = *(dash + 3);
    if (v2 ? fstype != "cgroup2" : fstype != "cgroup" || !has_option(superoptions, "memory")) continue;
    const fs::path root(words[3]);
    const auto relative = fs::path(path).lexically_relative(root);
    if (relative.empty() || *relative.begin() == "..") continue;  // not under what is mounted here
    return relative == "." ? fs::path(words[4]) : (fs::path(words[4]) / relative).lexically_normal();
  }
  return std::nullopt;
}

}  // namespace

std::optional<MemoryCgroup> memory_cgroup_of(std::string_view proc_cgroup, std::string_view mountinfo) {
  // v1's memory hierarchy first: where it is mounted, memory is not controlled through v2.
  for (const bool v2 : {false, true}) {
    const auto path = cgroup_path(proc_cgroup, v2);
    if (!path) continue;
    if (auto dir = mounted_dir(mountinfo, *path, v2)) return MemoryCgroup{std::move(*dir), v2};
  }
  return std::nullopt;
}

std::optional<OomKills> OomKills::of_this_process() {
  const auto cgroups = kernel_files::slurp("/proc/self/cgroup");
  const auto mounts = kernel_files::slurp("/proc/self/mountinfo");
  if (!cgroups || !mounts) return std::nullopt;
  auto cgroup = memory_cgroup_of(*cgroups, *mounts);
  if (!cgroup) return std::nullopt;
  OomKills kills(std::move(*cgroup));
  if (!kills.count()) return std::nullopt;  // no counter here (a kernel before 4.13 on v1)
  return kills;
}

std::optional<std::uint64_t> OomKills::count() const {
  const auto text = kernel_files::slurp(cgroup_.dir / (cgroup_.v2 ? "memory.events" : "memory.oom_control"));
  if (!text) return std::nullopt;
  return kernel_files::keyed_value(*text, "oom_kill");
}

std::optional<std::uint64_t> OomKills::limit_bytes() const {
  const auto text = kernel_files::slurp(cgroup_.dir / (cgroup_.v2 ? "memory.max" : "memory.limit_in_bytes"));
  if (!text) return std::nullopt;
  const auto limit = kernel_files::parse_number<std::uint64_t>(*text);  // v2's "max": none
  // v1 says "no limit" with a huge number (PAGE_COUNTER_MAX pages): none past 2^60 bytes.
  if (!limit || *limit >= (std::uint64_t{1} << 60)) return std::nullopt;
  return limit;
}

std::string oom_cause(std::uint64_t kills, std::optional<std::uint64_t> limit_bytes) {
  auto text = fmt::format("out of memory: the kernel's OOM killer ended {} process{} in this rank's memory cgroup",
                          kills, kills == 1 ? "" : "es");
  if (limit_bytes) text += fmt::format(" (its limit: {})", format_byte_size(*limit_bytes));
  return text;
}

}  // namespace dlx::launch
