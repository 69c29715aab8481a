// SPDX-License-Identifier: Apache-2.0
#include "host_copy.hpp"

#include <algorithm>
#include <cstring>

#include "dlx/common/parallel_for.hpp"
#include "dlx/common/usable_cpus.hpp"

namespace dlx::checkpoint::detail {
namespace {

constexpr std::size_t kSingleThreadBelow = std::size_t{32} << 20;
constexpr std::size_t kMinSliceBytes = std::size_t{8} << 20;
constexpr unsigned kMaxThreads = 4;

// Copies bytes [begin, end) of the concatenation of `copies`.
void copy_range(std::span<const HostCopy> copies, std::size_t begin, std::size_t end) {
  std::size_t position = 0;
  for (const auto& copy : copies) {
    const auto first = std::max(begin, position);
    const auto last = std::min(end, position + copy.bytes);
    if (first < last) {
      std::memcpy(copy.destination + (first - position),
                  static_cast<const std::byte*>(copy.source) + (first - position), last - first);
    }
    position += copy.bytes;
    if (position >= end) break;
  }
}

}  // namespace

unsigned host_copy_threads(std::size_t total_bytes) {
  if (total_bytes < kSingleThreadBelow) return 1;
  const auto by_size = static_cast<unsigned>(std::min<std::size_t>(total_bytes / kMinSliceBytes, kMaxThreads));
  return std::max(1u, std::min({usable_cpus(), kMaxThreads, by_size}));
}

void copy_on_host(std::span<const HostCopy> copies) {
  std::size_t total = 0;
  for (const auto& copy : copies) total += copy.bytes;
  const unsigned threads = host_copy_threads(total);
  // One slice per thread, each a whole multiple of 4 KiB of the concatenation.
  const std::size_t slice = (total / threads + 4095) / 4096 * 4096;
  parallel_for(threads, threads, [&](std::size_t t) {
    const auto begin = std::min(total, t * slice);
    copy_range(copies, begin, std::min(total, begin + slice));
  });
}

}  // namespace dlx::checkpoint::detail
