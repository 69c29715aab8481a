#include "dlx/comm/comm_error.hpp"

#include <unistd.h>

#include <array>

#include <fmt/format.h>

namespace dlx::comm {

std::string describe_failure(const char* library, int code, const std::string& error_string,
                             const char* call, const char* file, int line) {
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  return fmt::format("{} error {} ({}) in {} at {}:{} on {}", library, code, error_string, call,
                     file, line, host.data());
}

}  // namespace dlx::comm
