// SPDX-License-Identifier: Apache-2.0
#pragma once
// DLX_CUDA_CHECK(on_failure, call): every CUDA runtime call of dlx goes through this one macro (the
// NCCL backend, launcher/comm/src/nccl_check.hpp; device snapshots, checkpoint/src/
// device_copy_cuda.cpp). It evaluates `call` once; on any result but cudaSuccess it hands
// on_failure a CudaFailure: the runtime's code, the call as written, the file and the line. The
// handler turns that into its library's typed exception, with the library's own error string
// (cudaGetErrorString): the NCCL backend aborts its communicator first and throws CommError
// naming the host, the checkpoint library throws CheckpointError. It must not return: the macro
// is a statement after which the call has succeeded.
//
// Header only, for the sources CMake compiles when it found CUDA (cmake/DlxCuda.cmake); they link
// CUDA::cudart, never the driver library.
#include <cuda_runtime_api.h>

namespace dlx {

struct CudaFailure {
  cudaError_t error;
  const char* call;  // the call's text
  const char* file;
  int line;
};

}  // namespace dlx

#define DLX_CUDA_CHECK(on_failure, call)                                                    \
  do {                                                                                      \
    const cudaError_t dlx_cuda_rc_ = (call);                                                \
    if (dlx_cuda_rc_ != cudaSuccess) {                                                      \
      (on_failure)(::dlx::CudaFailure{dlx_cuda_rc_, #call, __FILE__, __LINE__});            \
    }                                                                                       \
  } while (false)
