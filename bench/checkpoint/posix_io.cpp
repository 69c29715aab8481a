// SPDX-License-Identifier: Apache-2.0
#include "posix_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "dlx/common/error.hpp"
#include "dlx/common/unique_fd.hpp"

namespace dlx::bench {
namespace {

UniqueFd open_or_throw(const std::filesystem::path& path, int flags) {
  UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC, 0644));
  if (!fd) throw SystemError("open " + path.string(), errno);
  return fd;
}

}  // namespace

void posix_write_fsync(const std::filesystem::path& path,
                       const std::vector<std::span<const std::byte>>& buffers, bool direct) {
  constexpr std::size_t kPiece = std::size_t{8} << 20;
  auto fd = open_or_throw(path, O_WRONLY | O_CREAT | O_TRUNC | (direct ? O_DIRECT : 0));
  off_t offset = 0;
  for (auto buffer : buffers) {
    while (!buffer.empty()) {
      auto n = direct ? ::pwrite(fd.get(), buffer.data(), std::min(buffer.size(), kPiece), offset)
                      : ::write(fd.get(), buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw SystemError("write " + path.string(), errno);
      buffer = buffer.subspan(static_cast<std::size_t>(n));
      offset += n;
    }
  }
  if (::fsync(fd.get()) != 0) throw SystemError("fsync " + path.string(), errno);
}

void posix_read(const std::filesystem::path& path, std::span<std::byte> into) {
  auto fd = open_or_throw(path, O_RDONLY);
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  while (!into.empty()) {
    auto n = ::read(fd.get(), into.data(), std::min<std::size_t>(into.size(), 16u << 20));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SystemError("read " + path.string(), errno);
    if (n == 0) break;
    into = into.subspan(static_cast<std::size_t>(n));
  }
}

void drop_from_page_cache(const std::filesystem::path& path) {
  auto fd = open_or_throw(path, O_RDONLY);
  ::fdatasync(fd.get());
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
}

}  // namespace dlx::bench
