// SPDX-License-Identifier: Apache-2.0
// squashfs images through unsquashfs (unpack.hpp). unsquashfs (squashfs-tools 4.5.1) checks the
// image's names itself (no "/", "." or ".." in a name, no duplicates) and never writes through a
// link it made; its root is always a directory. Its size is counted from `unsquashfs -lln`, one
// line per file with the size in the third column, before anything is written.
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "dlx/common/bounded_command.hpp"
#include "dlx/data/stage.hpp"
#include "unpack.hpp"

namespace dlx::data {

namespace fs = std::filesystem;

namespace {

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream directories(path ? path : "/usr/bin:/bin");
  for (std::string directory; std::getline(directories, directory, ':');) {
    if (!directory.empty() && ::access((fs::path(directory) / program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

CommandResult run_unsquashfs(const fs::path& image, std::vector<std::string> arguments) {
  if (!on_path("unsquashfs")) {
    unpack_failed(image, "unsquashfs is not installed on this node (the site installs Debian's squashfs-tools; "
                         "or stage a tar archive or a directory instead)");
  }
  CommandLimits limits;
  limits.timeout = std::chrono::hours(2);
  arguments.insert(arguments.begin(), "unsquashfs");
  arguments.push_back(image.string());
  CommandResult result;
  try {
    result = run_bounded(arguments, limits);
  } catch (const CommandError& e) {
    unpack_failed(image, e.what());
  }
  if (result.exit_code != 0) {
    unpack_failed(image, fmt::format("unsquashfs exited with status {}: {}", result.exit_code, result.err));
  }
  return result;
}

// The next whitespace-separated field of `line` from `at`.
std::string_view next_field(std::string_view line, std::size_t& at) {
  while (at < line.size() && line[at] == ' ') ++at;
  const std::size_t start = at;
  while (at < line.size() && line[at] != ' ') ++at;
  return line.substr(start, at - start);
}

}  // namespace

std::optional<std::uint64_t> squashfs_unpacked_size(const fs::path& image, std::uint64_t limit) {
  // "-rw-r--r-- 1000/1000   5000 2026-11-29 03:14 squashfs-root/sub/b.bin": a regular file's line
  // starts with '-'. A name holding a newline can only add lines, never hide one.
  const CommandResult listing = run_unsquashfs(image, {"-lln"});
  std::uint64_t total = 0;
  std::istringstream lines(listing.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() != '-') continue;
    std::size_t at = 0;
    next_field(line, at);  // the mode
    next_field(line, at);  // uid/gid
    const std::string_view size = next_field(line, at);
    std::uint64_t bytes = 0;
    const auto [end, error] = std::from_chars(size.data(), size.data() + size.size(), bytes);
    if (error != std::errc() || end != size.data() + size.size()) {
      unpack_failed(image, fmt::format("cannot read a file's size from unsquashfs -lln: '{}'", line));
    }
    if (bytes > limit - total) return std::nullopt;
    total += bytes;
  }
  return total;
}

void unpack_squashfs(const fs::path& image, int destination) {
  // The staging directory through this process's descriptor, not by its path; -f: it exists.
  const std::string into = fmt::format("/proc/{}/fd/{}", ::getpid(), destination);
  run_unsquashfs(image, {"-no-progress", "-no-xattrs", "-f", "-d", into});
}

}  // namespace dlx::data
