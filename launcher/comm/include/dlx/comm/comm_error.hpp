// SPDX-License-Identifier: Apache-2.0
#pragma once
// A failed collective or communicator set-up. what() names the call, the host, file:line and the
// library's own error string; library() and code() keep the raw MPI/NCCL/CUDA error for callers.
#include <string>

#include "dlx/common/error.hpp"

namespace dlx::comm {

class CommError : public Error {
 public:
  CommError(std::string library, int code, const std::string& message)
      : Error(message), library_(std::move(library)), code_(code) {}
  const std::string& library() const noexcept { return library_; }  // "MPI", "NCCL", "CUDA"
  int code() const noexcept { return code_; }

 private:
  std::string library_;
  int code_;
};

// "<library> error <code> (<error string>) in <call> at <file>:<line> on <host>"
std::string describe_failure(const char* library, int code, const std::string& error_string,
                             const char* call, const char* file, int line);

}  // namespace dlx::comm
