// SPDX-License-Identifier: Apache-2.0
#include "sample_stream.hpp"

namespace dlx::searcher {

namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

SampleStream::SampleStream(std::uint64_t seed, std::uint64_t trial, std::uint64_t slot) {
  std::uint64_t mix = seed;
  state_ = splitmix64(mix) ^ trial;
  state_ = splitmix64(state_) ^ slot;
  splitmix64(state_);
}

std::uint64_t SampleStream::next_bits() { return splitmix64(state_); }

double SampleStream::next_unit() { return static_cast<double>(next_bits() >> 11) * 0x1.0p-53; }

std::uint64_t SampleStream::next_below(std::uint64_t bound) {
  // Rejection sampling: drop the top sliver that would make some residues more likely.
  const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % bound);
  std::uint64_t bits;
  do {
    bits = next_bits();
  } while (bits >= limit);
  return bits % bound;
}

}  // namespace dlx::searcher
