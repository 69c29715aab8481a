// SPDX-License-Identifier: Apache-2.0
// copy_segments.hpp: one kernel copies a table of segments. Block row y copies segment y; the
// blocks of a row stride over its bytes in the widest unit (16, 8, 4 or 1 bytes) that its
// source, destination and length are all aligned to. PyTorch's and cudaMalloc's allocations are
// 256-byte aligned and a bucket's offsets are sums of element sizes, so 16 or 8 is the rule.
#include <algorithm>
#include <cstdint>

#include "copy_segments.hpp"

namespace dlx::comm::detail {
namespace {

struct SegmentTable {
  CopySegment segment[kSegmentsPerLaunch];
};

template <class Unit>
__device__ void copy_units(const CopySegment& s) {
  const auto* from = static_cast<const Unit*>(s.source);
  auto* to = static_cast<Unit*>(s.destination);
  const std::size_t units = s.bytes / sizeof(Unit);
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < units;
       i += stride) {
    to[i] = from[i];
  }
}

__global__ void copy_segments_kernel(SegmentTable table) {
  const CopySegment s = table.segment[blockIdx.y];
  const auto alignment = reinterpret_cast<std::uintptr_t>(s.source) |
                         reinterpret_cast<std::uintptr_t>(s.destination) | s.bytes;
  if (alignment % 16 == 0) {
    copy_units<uint4>(s);
  } else if (alignment % 8 == 0) {
    copy_units<std::uint64_t>(s);
  } else if (alignment % 4 == 0) {
    copy_units<std::uint32_t>(s);
  } else {
    copy_units<unsigned char>(s);
  }
}

constexpr unsigned kThreads = 256;
// Blocks per segment: enough that the largest segment of a bucket (under FusedAllreduce's
// 128 KiB "alone" limit, or a few MiB when set higher) is copied by many SMs at once.
constexpr unsigned kMaxBlocksPerSegment = 64;

}  // namespace

cudaError_t copy_segments(std::span<const CopySegment> segments, cudaStream_t stream,
                          std::uint64_t& launches) {
  for (std::size_t first = 0; first < segments.size(); first += kSegmentsPerLaunch) {
    const std::size_t count = std::min(kSegmentsPerLaunch, segments.size() - first);
    SegmentTable table{};
    std::size_t largest = 0;
    for (std::size_t i = 0; i < count; ++i) {
      table.segment[i] = segments[first + i];
      largest = std::max(largest, segments[first + i].bytes);
    }
    const std::size_t per_block = std::size_t{kThreads} * 16;
    const auto blocks = static_cast<unsigned>(
        std::clamp<std::size_t>((largest + per_block - 1) / per_block, 1, kMaxBlocksPerSegment));
    copy_segments_kernel<<<dim3(blocks, static_cast<unsigned>(count)), kThreads, 0, stream>>>(table);
    ++launches;
    if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
  }
  return cudaSuccess;
}

}  // namespace dlx::comm::detail
