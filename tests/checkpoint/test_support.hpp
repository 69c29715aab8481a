// SPDX-License-Identifier: Apache-2.0
#pragma once
// Shared by the checkpoint tests and the sample writer: a scratch directory and a full record.
#include <filesystem>
#include <string>
#include <vector>

#include "dlx/record/trial_record.hpp"

namespace dlx::checkpoint::testing {

// A fresh directory under the system temp dir, removed with its contents on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Every hyperparameter type, both metric tables with gaps (NaN).
record::TrialRecord sample_record();

std::vector<std::string> file_names_in(const std::filesystem::path& directory);
std::string read_bytes(const std::filesystem::path& path);
void write_bytes(const std::filesystem::path& path, const std::string& bytes);
// Flips one bit of the byte at `offset` in place (same inode: what a reader holding the file
// open sees, unlike write_bytes' replacement).
void flip_byte_in_place(const std::filesystem::path& path, std::size_t offset);

}  // namespace dlx::checkpoint::testing
