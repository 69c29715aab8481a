// SPDX-License-Identifier: Apache-2.0
#include "dlx/common/file_copy.hpp"

#include <unistd.h>

#include <cerrno>
#include <vector>

#include "dlx/common/error.hpp"

namespace dlx {

std::uint64_t copy_file_data(int in, int out, const std::filesystem::path& from, const std::filesystem::path& to) {
  std::uint64_t copied = 0;
  bool in_kernel = true;
  std::vector<char> buffer;
  for (;;) {
    ssize_t got = 0;
    if (in_kernel) {
      got = ::copy_file_range(in, nullptr, out, nullptr, std::size_t{1} << 30, 0);
      if (got < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP) && copied == 0) {
        in_kernel = false;
        continue;
      }
    } else {
      if (buffer.empty()) buffer.resize(std::size_t{1} << 20);
      got = ::read(in, buffer.data(), buffer.size());
      for (ssize_t done = 0; got > 0 && done < got;) {
        const ssize_t wrote = ::write(out, buffer.data() + done, static_cast<std::size_t>(got - done));
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote < 0) throw SystemError("write " + to.string(), errno);
        done += wrote;
      }
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw SystemError("copy " + from.string() + " to " + to.string(), errno);
    if (got == 0) break;
    copied += static_cast<std::uint64_t>(got);
  }
  return copied;
}

}  // namespace dlx
