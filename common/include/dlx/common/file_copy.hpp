// SPDX-License-Identifier: Apache-2.0
#pragma once
// The bytes of one open file into another: copy_file_range (in the kernel, reflinks where the file
// system has them), falling back to read/write where the kernel cannot (another file system on old
// kernels, special file systems). Shared by the code snapshot's copy and the data cache's.
#include <cstdint>
#include <filesystem>

namespace dlx {

// Copies from `in`'s offset to its end into `out` at its offset; returns the bytes copied. `from`
// and `to` name the files in the SystemError thrown on failure.
std::uint64_t copy_file_data(int in, int out, const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace dlx
