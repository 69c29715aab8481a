// SPDX-License-Identifier: Apache-2.0
#pragma once
// The reading half shared by load, summary and verify: open a file, check that it is a dlx
// checkpoint of a known format version and of the expected trial, read the metadata and the
// tensor index, and check them against /metadata_crc32c. Tensor bytes are read separately.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <vector>

#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/h5/handle.hpp"
#include "dlx/common/unique_fd.hpp"

namespace dlx::checkpoint::detail {

struct OpenCheckpoint {
  UniqueFd fd;             // the descriptor checked at open (a regular file); tensors are read from it
  std::uint64_t file_bytes = 0;
  h5::Handle file;         // HDF5's handle on the same file
  CheckpointSummary summary;
  std::vector<std::optional<std::uint64_t>> offsets;  // per tensor: file offset of its bytes
};

OpenCheckpoint open_checkpoint(const std::filesystem::path& path, const Expectation& expect);

// Reads the tensors of `reads` block by block, checksumming each piece as it is read, and
// compares with their CRCs. A load of enough bytes shares its CRC blocks out over a few threads;
// the CRCs are compared in `reads` order, so the error names the first damaged block in that
// order. No destination may overlap another.
struct TensorRead {
  std::size_t index;              // into checkpoint.summary.tensors
  std::byte* destination;         // tensor bytes long; null to verify only (or for `device`)
  void* device = nullptr;         // CUDA device memory, tensor bytes long, instead of destination
};
void read_tensors(const OpenCheckpoint& checkpoint, std::span<const TensorRead> reads,
                  const std::filesystem::path& path);
// The same for tensors verified before (Checkpoint::deferred), each described by `info`, its
// bytes at `offset` of `fd`: read into `destination`, shared out over threads sooner than a
// load's reads (they come from the page cache as a rule).
struct DeferredTensorRead {
  const TensorInfo* info;
  std::optional<std::uint64_t> offset;
  std::byte* destination;
};
void read_deferred_tensors(int fd, std::span<const DeferredTensorRead> reads,
                           const std::filesystem::path& path);

// What Checkpoint::read_into needs once the load has returned: the descriptor the load verified
// the deferred tensors through (so a file renamed over the path meanwhile changes nothing), and
// where each deferred tensor's bytes lie. HDF5's handle is closed: the reads are plain preads.
struct DeferredFile {
  UniqueFd fd;
  std::filesystem::path path;
  std::vector<std::optional<std::uint64_t>> offsets;  // parallel to Checkpoint::deferred
};

}  // namespace dlx::checkpoint::detail
