// SPDX-License-Identifier: Apache-2.0
#include "copy_tree.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dlx/common/file_copy.hpp"
#include "dlx/common/parallel_for.hpp"
#include "dlx/common/unique_fd.hpp"
#include "dlx/data/stage.hpp"

namespace dlx::data {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void copy_failed(const fs::path& path, const std::string& why) {
  throw DataError(fmt::format("cannot copy {}: {} (is the node-local directory full? `dlx data gc` frees space)",
                              path.string(), why));
}

// `from` into the new file `name` of `destination` (`to` names it in messages).
std::uint64_t copy_one_file(const fs::path& from, int destination, const std::string& name, const fs::path& to,
                            mode_t mode) {
  UniqueFd in(::open(from.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!in) copy_failed(from, std::strerror(errno));
  struct stat info {};
  if (::fstat(in.get(), &info) != 0 || !S_ISREG(info.st_mode)) copy_failed(from, "it is no longer a regular file");
  UniqueFd out(::openat(destination, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!out) copy_failed(to, std::strerror(errno));
  std::uint64_t copied = 0;
  try {
    copied = copy_file_data(in.get(), out.get(), from, to);
  } catch (const SystemError& e) {
    copy_failed(from, e.what());
  }
  if (::fchmod(out.get(), mode & 0777) != 0) copy_failed(to, std::strerror(errno));
  // The source's modification time, as a copy should: a compiled Python module (__pycache__/*.pyc
  // of a container image's root) is valid only while its .py file keeps the time it records, and
  // Python recompiles every module at each start otherwise (twice the time of `import torch`).
  const struct timespec times[2] = {info.st_atim, info.st_mtim};
  if (::futimens(out.get(), times) != 0) copy_failed(to, std::strerror(errno));
  return copied;
}

}  // namespace

std::uint64_t copy_source(const Manifest& manifest, int destination, const fs::path& shown, unsigned threads) {
  if (manifest.kind != SourceKind::directory) {
    const auto& entry = manifest.entries.front();
    const std::string name = manifest.source.filename().string();
    return copy_one_file(manifest.source, destination, name, shown / name, entry.mode);
  }
  std::vector<const ManifestEntry*> files;
  std::vector<const ManifestEntry*> directories;
  for (const auto& entry : manifest.entries) {
    if (entry.relative.empty()) continue;  // the source directory itself: `destination`
    const fs::path to = shown / entry.relative;
    if (entry.type == 'd') {
      if (::mkdirat(destination, entry.relative.c_str(), 0700) != 0) copy_failed(to, std::strerror(errno));
      directories.push_back(&entry);
    } else if (entry.type == 'l') {
      if (::symlinkat(entry.link_target.c_str(), destination, entry.relative.c_str()) != 0) {
        copy_failed(to, std::strerror(errno));
      }
    } else {
      files.push_back(&entry);
    }
  }
  // Each thread takes the next file; the first failure stops the others and is what is thrown.
  std::atomic<std::uint64_t> bytes{0};
  parallel_for(files.size(), threads, [&](std::size_t i) {
    bytes += copy_one_file(manifest.source / files[i]->relative, destination, files[i]->relative,
                           shown / files[i]->relative, files[i]->mode);
  });
  for (auto it = directories.rbegin(); it != directories.rend(); ++it) {
    // The manifest's directories, made above: no link among them (no AT_SYMLINK_NOFOLLOW needed).
    if (::fchmodat(destination, (*it)->relative.c_str(), (*it)->mode & 0777, 0) != 0) {
      copy_failed(shown / (*it)->relative, std::strerror(errno));
    }
  }
  return bytes;
}

}  // namespace dlx::data
