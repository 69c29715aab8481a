// SPDX-License-Identifier: Apache-2.0
#pragma once
// The CUDA runtime calls the MPI backend needs for device tensors, without making the CPU build
// depend on CUDA: cuda_stream_cuda.cpp when CMake found CUDA, else cuda_stream_none.cpp.
namespace dlx::comm::detail {

// False in a build without CUDA: device tensors cannot be ordered against a stream there.
bool built_with_cuda() noexcept;

// Waits until the work queued on `stream` (a cudaStream_t; nullptr: the legacy default stream)
// is done; throws CommError("CUDA", ...) on an error.
void synchronize_cuda_stream(void* stream);

}  // namespace dlx::comm::detail
