// SPDX-License-Identifier: Apache-2.0
#pragma once
#include "dlx/common/error.hpp"

namespace dlx::launch {

// Something dlx-launch itself cannot do (no command, wrong allocation, fork failed). what() is
// the message without a prefix: main prints it after "dlx-launch: ", and a trial record that keeps
// it says "dlx-launch: " before it too.
class LaunchError : public Error {
 public:
  using Error::Error;
};

}  // namespace dlx::launch
