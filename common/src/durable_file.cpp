// SPDX-License-Identifier: Apache-2.0
#include "dlx/common/durable_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/common/file_kind.hpp"
#include "dlx/common/unique_fd.hpp"

namespace dlx {

SystemError::SystemError(const std::string& what_failed, int error_number)
    : Error(fmt::format("{}: {}", what_failed, std::strerror(error_number))),
      error_number_(error_number) {}

namespace {

UniqueFd open_or_throw(const std::filesystem::path& path, int flags, mode_t mode = 0) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) throw SystemError(fmt::format("cannot open {}", path.string()), errno);
  return UniqueFd(fd);
}

void fsync_or_throw(int fd, const std::filesystem::path& path) {
  if (::fsync(fd) != 0) throw SystemError(fmt::format("cannot fsync {}", path.string()), errno);
}

}  // namespace

std::filesystem::path temporary_path_for(const std::filesystem::path& final_path) {
  // pid + a per-process counter + random bits: unique across processes, threads and nodes.
  static std::atomic<unsigned> counter{0};
  thread_local std::random_device entropy;
  auto name = fmt::format(".tmp.{}.{}.{}.{:08x}", final_path.filename().string(), ::getpid(),
                          counter.fetch_add(1), entropy());
  return final_path.parent_path() / name;
}

bool is_temporary_name(std::string_view file_name) { return file_name.starts_with(".tmp."); }

void fsync_file(const std::filesystem::path& path) {
  auto fd = open_or_throw(path, O_RDONLY | O_NONBLOCK);
  fsync_or_throw(fd.get(), path);
}

void fsync_directory(const std::filesystem::path& directory) {
  auto dir = directory.empty() ? std::filesystem::path(".") : directory;
  auto fd = open_or_throw(dir, O_RDONLY | O_DIRECTORY);
  fsync_or_throw(fd.get(), dir);
}

void publish_file(const std::filesystem::path& temporary, const std::filesystem::path& final_path) {
  fsync_file(temporary);
  if (::rename(temporary.c_str(), final_path.c_str()) != 0) {
    int saved = errno;
    ::unlink(temporary.c_str());
    throw SystemError(
        fmt::format("cannot rename {} to {}", temporary.string(), final_path.string()), saved);
  }
  fsync_directory(final_path.parent_path());
}

void write_file_durably(const std::filesystem::path& final_path, std::string_view contents,
                        mode_t mode) {
  auto temporary = temporary_path_for(final_path);
  try {
    auto fd = open_or_throw(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
    // open's mode is masked by the umask; the file's is exact (0664 under umask 002 would let a
    // group member rewrite it).
    if (::fchmod(fd.get(), mode) != 0) {
      throw SystemError(fmt::format("cannot set the mode of {}", temporary.string()), errno);
    }
    std::size_t written = 0;
    while (written < contents.size()) {
      ssize_t n = ::write(fd.get(), contents.data() + written, contents.size() - written);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw SystemError(fmt::format("cannot write {}", temporary.string()), errno);
      }
      written += static_cast<std::size_t>(n);
    }
    fsync_or_throw(fd.get(), temporary);
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
  publish_file(temporary, final_path);
}

std::string read_small_file(const std::filesystem::path& path, std::size_t max_bytes) {
  // O_NONBLOCK: a FIFO in the file's place must not block the reader (slurmstepd, dlx-launch)
  // waiting for a writer; it is refused below. On a regular file the flag changes nothing.
  auto fd = open_or_throw(path, O_RDONLY | O_NONBLOCK);
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0) throw SystemError(fmt::format("cannot stat {}", path.string()), errno);
  if (!S_ISREG(status.st_mode)) {
    throw SystemError::with_message(
        fmt::format("cannot read {}: it is {}, not a regular file", path.string(), describe_file_kind(status.st_mode)),
        EINVAL);
  }
  std::string contents;
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError(fmt::format("cannot read {}", path.string()), errno);
    }
    if (n == 0) break;
    contents.append(buffer, static_cast<std::size_t>(n));
    if (contents.size() > max_bytes)
      throw Error(fmt::format("{}: larger than the {} byte limit", path.string(), max_bytes));
  }
  return contents;
}

}  // namespace dlx
