// SPDX-License-Identifier: Apache-2.0
#pragma once
// DLX_NCCL_CHECK(owner, call) and DLX_CUDA_CHECK(detail::AbortOnFailure(owner), call) (the one
// CUDA check, dlx/common/cuda_check.hpp): every NCCL and CUDA call of the GPU backend goes through
// one of these. On failure they record host, file, line and the library's own error string
// (ncclGetErrorString + ncclGetLastError, cudaGetErrorString), abort the communicator `owner` (an
// ncclComm_t lvalue, set to nullptr) so no peer waits on it forever, and throw CommError.
// ncclInProgress is not a failure: the communicator is non-blocking and the caller then waits
// with a deadline.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "dlx/common/cuda_check.hpp"

namespace dlx::comm::detail {

[[noreturn]] void fail_nccl(ncclResult_t result, ncclComm_t& comm, const char* call,
                            const char* file, int line);
[[noreturn]] void fail_cuda(const CudaFailure& failure, ncclComm_t& comm);
// DLX_CUDA_CHECK's handler in this backend: fail_cuda on `comm`.
struct AbortOnFailure {
  ncclComm_t& comm;
  [[noreturn]] void operator()(const CudaFailure& failure) const { fail_cuda(failure, comm); }
};
// Abort and forget `comm` (no-op when nullptr). Never throws.
void abort_communicator(ncclComm_t& comm) noexcept;

}  // namespace dlx::comm::detail

#define DLX_NCCL_CHECK(owner, call)                                                  \
  do {                                                                              \
    const ncclResult_t dlx_nccl_rc_ = (call);                                       \
    if (dlx_nccl_rc_ != ncclSuccess && dlx_nccl_rc_ != ncclInProgress) {            \
      ::dlx::comm::detail::fail_nccl(dlx_nccl_rc_, owner, #call, __FILE__, __LINE__); \
    }                                                                               \
  } while (false)
