// SPDX-License-Identifier: Apache-2.0
#include "dlx/container/nvidia_driver.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "dlx/common/bounded_command.hpp"
#include "dlx/container/runtime.hpp"

namespace dlx::container {

namespace fs = std::filesystem;

namespace {

// One entry of `ldconfig -p`: "\tlibcuda.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so.1".
struct CacheEntry {
  std::string_view name, flags, path;
};

std::optional<CacheEntry> parse_entry(std::string_view line) {
  const auto open = line.find(" (");
  const auto close = line.find(") => ");
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  auto name = line.substr(0, open);
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.front()))) name.remove_prefix(1);
  return CacheEntry{name, line.substr(open + 2, close - open - 2), line.substr(close + 5)};
}

// The loader's own word size: ldconfig marks 64-bit libraries "x86-64", "AArch64" or "64bit"
// (ppc64le); a 32-bit library on the same node ("libc6" alone) is not the trainer's.
bool is_64_bit(std::string_view flags) {
  return flags.find("x86-64") != std::string_view::npos || flags.find("AArch64") != std::string_view::npos ||
         flags.find("64bit") != std::string_view::npos;
}

// "libcuda.so.1" for "libcuda.so": the name, a dot, digits (and dots); not "libcuda.so" itself,
// the development link, nor "libcudart.so.12".
bool is_versioned(std::string_view name, std::string_view base) {
  if (!name.starts_with(base) || name.size() < base.size() + 2 || name[base.size()] != '.') return false;
  const auto version = name.substr(base.size() + 1);
  return std::all_of(version.begin(), version.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
}

}  // namespace

std::vector<Mount> driver_library_mounts(std::string_view listing) {
  std::vector<Mount> mounts;
  std::set<std::string_view> found;
  while (!listing.empty()) {
    const auto end = listing.find('\n');
    const auto line = listing.substr(0, end);
    listing.remove_prefix(end == std::string_view::npos ? listing.size() : end + 1);
    const auto entry = parse_entry(line);
    if (!entry || !is_64_bit(entry->flags) || entry->path.empty() || entry->path.front() != '/') continue;
    for (const auto base : kDriverLibraries) {
      if (found.count(base) || !is_versioned(entry->name, base)) continue;
      found.insert(base);
      const fs::path dir = kDriverLibraryDir;
      mounts.push_back({fs::path(entry->path), dir / entry->name, true});
      if (base == "libcuda.so") mounts.push_back({fs::path(entry->path), dir / base, true});
    }
  }
  return mounts;
}

std::vector<Mount> find_driver_files() {
  std::vector<Mount> files;
  try {
    for (const char* ldconfig : {"/sbin/ldconfig", "/usr/sbin/ldconfig"}) {
      std::error_code absent;
      if (!fs::exists(ldconfig, absent)) continue;
      const auto listed = run_bounded({ldconfig, "-p"}, CommandLimits{.timeout = std::chrono::seconds(10)});
      if (listed.exit_code == 0) files = driver_library_mounts(listed.out);
      break;
    }
  } catch (const std::exception&) {
    // No cache to read: the node's driver, if any, is not mounted (dlx-launch says so).
  }
  // The file itself (the cache names the soname link), so that the mount does not depend on a
  // link the container cannot follow.
  for (auto& file : files) {
    std::error_code error;
    auto resolved = fs::canonical(file.host, error);
    if (!error) file.host = std::move(resolved);
  }
  std::erase_if(files, [](const Mount& file) {
    std::error_code error;
    return !fs::is_regular_file(file.host, error);
  });
  if (files.empty()) return files;
  if (const auto smi = find_program("nvidia-smi")) {
    std::error_code error;
    auto resolved = fs::canonical(*smi, error);
    if (!error) files.push_back({resolved, fs::path(kDriverProgramDir) / "nvidia-smi", true});
  }
  return files;
}

void add_driver_variables(std::vector<std::pair<std::string, std::string>>& env) {
  const auto prepend = [&](const std::string& name, const std::string& dir) {
    auto found = std::find_if(env.begin(), env.end(), [&](const auto& var) { return var.first == name; });
    if (found == env.end()) {
      env.emplace_back(name, dir);
    } else if (found->second.empty()) {
      found->second = dir;
    } else {
      found->second = dir + ":" + found->second;
    }
  };
  prepend("LD_LIBRARY_PATH", kDriverLibraryDir);
  prepend("PATH", kDriverProgramDir);
  const bool triton_set = std::any_of(env.begin(), env.end(), [](const auto& var) { return var.first == "TRITON_LIBCUDA_PATH"; });
  if (!triton_set) env.emplace_back("TRITON_LIBCUDA_PATH", kDriverLibraryDir);
}

}  // namespace dlx::container
