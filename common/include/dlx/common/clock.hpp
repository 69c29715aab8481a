// SPDX-License-Identifier: Apache-2.0
#pragma once
// Wall-clock seconds since the epoch, for the *_unix timestamps in dlx's files.
#include <chrono>
#include <cstdint>

namespace dlx {

inline std::int64_t unix_seconds_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace dlx
