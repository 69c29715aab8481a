// SPDX-License-Identifier: Apache-2.0
// cuda_stream.hpp in a build without CUDA.
#include "cuda_stream.hpp"

#include "dlx/comm/comm_error.hpp"

namespace dlx::comm::detail {

bool built_with_cuda() noexcept { return false; }

void synchronize_cuda_stream(void*) {
  throw CommError("CUDA", 0, "this dlx was built without CUDA: it cannot use GPU memory");
}

}  // namespace dlx::comm::detail
