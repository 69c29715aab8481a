// SPDX-License-Identifier: Apache-2.0
#include "dlx/comm/comm_error.hpp"

#include <fmt/format.h>

#include "dlx/common/host_name.hpp"

namespace dlx::comm {

std::string describe_failure(const char* library, int code, const std::string& error_string,
                             const char* call, const char* file, int line) {
  return fmt::format("{} error {} ({}) in {} at {}:{} on {}", library, code, error_string, call,
                     file, line, host_name());
}

}  // namespace dlx::comm
