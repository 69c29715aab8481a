// SPDX-License-Identifier: Apache-2.0
#pragma once
// Host-to-host copies for a checkpoint snapshot. The snapshot is the training loop's whole stall
// in an async save, and one thread's memcpy reaches only part of a node's memory bandwidth, so a
// large snapshot is split over a few threads (each copies contiguous slices of 8 MiB or more).
// Small snapshots stay on the calling thread: starting threads would cost more than they save.
#include <cstddef>
#include <span>

namespace dlx::checkpoint::detail {

struct HostCopy {
  std::byte* destination;
  const void* source;
  std::size_t bytes;
};

// The number of threads copy_on_host uses for `total_bytes`: 1 below 32 MiB, else up to
// min(hardware threads, 4), at least 8 MiB each.
unsigned host_copy_threads(std::size_t total_bytes);

// Performs every copy; returns when all are done.
void copy_on_host(std::span<const HostCopy> copies);

}  // namespace dlx::checkpoint::detail
