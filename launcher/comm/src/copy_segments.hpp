// SPDX-License-Identifier: Apache-2.0
#pragma once
// copy_segments: many small device-to-device copies in one kernel launch (up to
// kSegmentsPerLaunch at a time), the way a fusion bucket of device tensors is packed and
// unpacked (device_bucket.hpp). One launch costs a few microseconds whatever it copies; the
// runtime's own calls cost that per copy: cudaMemcpyBatchAsync took 8-9 us per 1 KiB tensor on
// an H200 (CUDA 13.0, docs/benchmarks.md), as many separate ncclAllReduce calls would.
// Built from copy_segments.cu by nvcc; the declarations are plain C++.
#include <cstddef>
#include <cstdint>
#include <span>

#include <cuda_runtime_api.h>

namespace dlx::comm::detail {

struct CopySegment {
  const void* source;
  void* destination;
  std::size_t bytes;
};

// Segments per launch: their table travels as the kernel's parameter (128 x 24 bytes, inside the
// 4 KiB every CUDA version accepts).
inline constexpr std::size_t kSegmentsPerLaunch = 128;

// Enqueues the copies on `stream`, kSegmentsPerLaunch per launch; adds the launches to
// `launches`. Segments must not overlap. Returns the first launch error (nothing is waited for).
cudaError_t copy_segments(std::span<const CopySegment> segments, cudaStream_t stream,
                          std::uint64_t& launches);

}  // namespace dlx::comm::detail
