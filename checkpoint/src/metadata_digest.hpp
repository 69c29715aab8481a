// SPDX-License-Identifier: Apache-2.0
#pragma once
// The checksum over everything in a checkpoint that is not tensor bytes: metadata, state and the
// tensor index (names, dtypes, shapes, block CRCs), as canonical JSON. Stored as
// /metadata_crc32c; HDF5's own checksums do not cover variable-length strings (global heap).
#include <cstdint>

#include "dlx/checkpoint/checkpoint.hpp"

namespace dlx::checkpoint::detail {

std::uint32_t metadata_digest(const CheckpointSummary& summary);

}  // namespace dlx::checkpoint::detail
