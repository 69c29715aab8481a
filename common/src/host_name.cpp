// SPDX-License-Identifier: Apache-2.0
#include "dlx/common/host_name.hpp"

#include <unistd.h>

#include <array>

namespace dlx {

std::string host_name() {
  std::array<char, 256> host{};  // HOST_NAME_MAX is 64 on Linux; the last byte stays NUL
  if (::gethostname(host.data(), host.size() - 1) != 0 || host[0] == '\0') return "unknown-host";
  return host.data();
}

}  // namespace dlx
