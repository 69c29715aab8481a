// SPDX-License-Identifier: Apache-2.0
#pragma once
// Stand-ins for container runtimes that are not installed here (tests/container): programs that
// record how they were called, and a PATH that holds only them.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace dlx::testing {

// PATH holds only `dir` while it lives: the runtimes that stand-in programs there provide.
struct OnlyPath {
  explicit OnlyPath(const std::filesystem::path& dir) : saved(std::getenv("PATH") ? std::getenv("PATH") : "") {
    ::setenv("PATH", dir.c_str(), 1);
  }
  ~OnlyPath() { ::setenv("PATH", saved.c_str(), 1); }
  OnlyPath(const OnlyPath&) = delete;
  OnlyPath& operator=(const OnlyPath&) = delete;
  std::string saved;
};

// A stand-in for `name` in `dir`: appends its arguments (one per line, then "--") to `log`, exits 0.
inline void stand_in(const std::filesystem::path& dir, const std::string& name, const std::filesystem::path& log) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / name) << "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> '" << log.string()
                            << "'\necho -- >> '" << log.string() << "'\n";
  std::filesystem::permissions(dir / name, std::filesystem::perms::owner_all);
}

}  // namespace dlx::testing
