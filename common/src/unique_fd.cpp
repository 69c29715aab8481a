// SPDX-License-Identifier: Apache-2.0
#include "dlx/common/unique_fd.hpp"

#include <unistd.h>

namespace dlx {

void UniqueFd::reset(int fd) noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

}  // namespace dlx
