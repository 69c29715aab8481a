// SPDX-License-Identifier: Apache-2.0
#pragma once
// A counter-based random stream: value k of stream (seed, trial, slot) is SplitMix64 of a mix of
// the four numbers. No state is carried from one trial to the next, so trial 17 is the same
// whether or not trials 0-16 were ever computed, on any machine and compiler.
#include <cstdint>

namespace dlx::searcher {

class SampleStream {
 public:
  SampleStream(std::uint64_t seed, std::uint64_t trial, std::uint64_t slot);
  std::uint64_t next_bits();
  double next_unit();                               // uniform in [0, 1), 53 random bits
  std::uint64_t next_below(std::uint64_t bound);    // uniform in [0, bound), unbiased

 private:
  std::uint64_t state_;
};

}  // namespace dlx::searcher
