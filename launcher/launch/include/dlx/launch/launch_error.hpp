// SPDX-License-Identifier: Apache-2.0
#pragma once
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "dlx/common/error.hpp"

namespace dlx::launch {

// Something dlx-launch itself cannot do (no command, wrong allocation, fork failed). what() is
// the message without a prefix: main prints it as launch_error_line(), and a trial record that
// keeps it says "dlx-launch: " before it too.
class LaunchError : public Error {
 public:
  using Error::Error;
};

// The line dlx-launch ends with when it fails (any error, `what` its what()): on stderr, and in
// the trial's log when one is kept.
inline std::string launch_error_line(std::string_view what) { return fmt::format("dlx-launch: {}\n", what); }

}  // namespace dlx::launch
