// SPDX-License-Identifier: Apache-2.0
// cuda_stream.hpp through the CUDA runtime.
#include <cuda_runtime_api.h>

#include "cuda_stream.hpp"
#include "dlx/comm/comm_error.hpp"
#include "dlx/common/cuda_check.hpp"

namespace dlx::comm::detail {
namespace {

[[noreturn]] void stream_failed(const CudaFailure& failure) {
  throw CommError("CUDA", static_cast<int>(failure.error),
                  describe_failure("CUDA", static_cast<int>(failure.error),
                                   cudaGetErrorString(failure.error), failure.call, failure.file,
                                   failure.line));
}

}  // namespace

bool built_with_cuda() noexcept { return true; }

void synchronize_cuda_stream(void* stream) {
  DLX_CUDA_CHECK(stream_failed, cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

}  // namespace dlx::comm::detail
