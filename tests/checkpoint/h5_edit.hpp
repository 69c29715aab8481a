// SPDX-License-Identifier: Apache-2.0
#pragma once
// Edits of an HDF5 file in place, for tests that need a file dlx would not write: an older or
// newer format version, a missing attribute or dataset. Each REQUIREs success.
#include <cstdint>
#include <filesystem>

namespace dlx::checkpoint::testing {

void set_format_version(const std::filesystem::path& path, std::int64_t version);
void remove_link(const std::filesystem::path& path, const char* name);
void remove_attribute(const std::filesystem::path& path, const char* name);
// Stores every dataset of /metrics/training and /metrics/validation contiguous (what dlx wrote
// before format 3), same names and values.
void make_metric_tables_contiguous(const std::filesystem::path& path);

}  // namespace dlx::checkpoint::testing
