#pragma once
// A fresh directory for a searcher test (where the journal and experiment.h5 go), removed with its
// contents on destruction.
#include <cstdlib>
#include <filesystem>
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

}  // namespace dlx::testing
