#pragma once
#include "dlx/common/error.hpp"

namespace dlx::launch {

// Something dlx-launch itself cannot do (no command, wrong allocation, fork failed). what() is
// the whole message, starting with "dlx-launch: ".
class LaunchError : public Error {
 public:
  using Error::Error;
};

}  // namespace dlx::launch
