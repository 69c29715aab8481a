// SPDX-License-Identifier: Apache-2.0
#include "nccl_check.hpp"

#include <string>

#include <fmt/format.h>

#include "dlx/comm/comm_error.hpp"

namespace dlx::comm::detail {

void abort_communicator(ncclComm_t& comm) noexcept {
  if (comm == nullptr) return;
  ncclCommAbort(comm);
  comm = nullptr;
}

void fail_nccl(ncclResult_t result, ncclComm_t& comm, const char* call, const char* file,
               int line) {
  std::string text = ncclGetErrorString(result);
  if (const char* last = ncclGetLastError(comm); last != nullptr && *last != '\0') {
    text = fmt::format("{}: {}", text, last);
  }
  abort_communicator(comm);
  throw CommError("NCCL", static_cast<int>(result),
                  describe_failure("NCCL", static_cast<int>(result), text, call, file, line));
}

void fail_cuda(const CudaFailure& failure, ncclComm_t& comm) {
  std::string text = cudaGetErrorString(failure.error);
  abort_communicator(comm);
  throw CommError("CUDA", static_cast<int>(failure.error),
                  describe_failure("CUDA", static_cast<int>(failure.error), text, failure.call, failure.file,
                                   failure.line));
}

}  // namespace dlx::comm::detail
