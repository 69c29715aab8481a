// SPDX-License-Identifier: Apache-2.0
#pragma once
// Running a real program from a test (the dlx binary, as a user would): argv as given, stdout and
// stderr captured apart through files in `scratch`, the exit status (128 + N when killed by
// signal N, as a shell reports it).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace dlx::testing {

struct ProgramOutput {
  int status = -1;
  std::string out, err;
};

inline std::string read_whole_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

inline ProgramOutput run_program(std::vector<std::string> argv, const std::filesystem::path& scratch) {
  const auto out_path = scratch / "stdout", err_path = scratch / "stderr";
  const pid_t child = ::fork();
  if (child == 0) {
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || err < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0) ::_exit(126);
    std::vector<char*> raw;
    for (auto& arg : argv) raw.push_back(arg.data());
    raw.push_back(nullptr);
    ::execv(raw[0], raw.data());
    ::_exit(127);
  }
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child) return {};
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), read_whole_file(out_path),
          read_whole_file(err_path)};
}

}  // namespace dlx::testing
