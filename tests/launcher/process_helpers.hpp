// SPDX-License-Identifier: Apache-2.0
#pragma once
// Running a program under a controlled environment from a test: `env -i` + popen.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace dlx::test {

struct CommandResult {
  int status = -1;  // exit code, or 128 + signal
  std::string output;  // stdout and stderr together
};

inline std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs `argv` with exactly `env` (plus PATH) as its environment.
inline CommandResult run_with_env(const std::map<std::string, std::string>& env,
                                  const std::vector<std::string>& argv) {
  std::string command = "env -i PATH=/usr/local/bin:/usr/bin:/bin";
  for (const auto& [name, value] : env) command += " " + shell_quote(name + "=" + value);
  for (const auto& arg : argv) command += " " + shell_quote(arg);
  command += " 2>&1";
  CommandResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  const int status = ::pclose(pipe);
  if (WIFEXITED(status)) result.status = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) result.status = 128 + WTERMSIG(status);
  return result;
}

// A fresh empty directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    std::string pattern = (std::filesystem::temp_directory_path() / ("dlx-" + tag + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace dlx::test
