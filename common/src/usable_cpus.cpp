// SPDX-License-Identifier: Apache-2.0
#include "dlx/common/usable_cpus.hpp"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace dlx {

unsigned usable_cpus() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (::sched_getaffinity(0, sizeof(mask), &mask) == 0) {
    const int count = CPU_COUNT(&mask);
    if (count > 0) return static_cast<unsigned>(count);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace dlx
