// SPDX-License-Identifier: Apache-2.0
#pragma once
// A fresh directory for a searcher test (where the journal and experiment.h5 go), removed with its
// contents on destruction, and whole-file reads and writes for tests that damage those files.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace dlx::testing {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "dlx-searcher-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::filesystem::path journal() const { return path / "journal"; }
  std::filesystem::path summary() const { return path / "experiment.h5"; }
};

// The whole file as bytes ("" if it cannot be read).
inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Replaces the file's contents with `bytes`.
inline void spit(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace dlx::testing
