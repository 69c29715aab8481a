// SPDX-License-Identifier: Apache-2.0
#pragma once
// What bench_checkpoint's parts hand back, and the statistics they share.
#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace dlx::bench {

struct Result {
  std::string name;
  double value = 0;
  std::string target;
  bool pass = false;
};

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

inline double seconds(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace dlx::bench
