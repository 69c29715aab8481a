// SPDX-License-Identifier: Apache-2.0
#include "dlx/comm/communicator.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "dlx/comm/comm_error.hpp"

namespace dlx::comm {

AllreduceHandle Communicator::allreduce_sum_async(Tensor tensor) {
  try {
    allreduce_sum(tensor);
  } catch (...) {
    return AllreduceHandle::completed(std::current_exception());
  }
  return AllreduceHandle::completed();
}

void Communicator::allreduce_sum_bucket(std::span<const Tensor> tensors) {
  for (const Tensor& tensor : tensors) allreduce_sum(tensor);
}

AllreduceHandle Communicator::allreduce_sum_bucket_async(std::vector<Tensor> tensors) {
  try {
    allreduce_sum_bucket(tensors);
  } catch (...) {
    return AllreduceHandle::completed(std::current_exception());
  }
  return AllreduceHandle::completed();
}

void Communicator::require_device_memory() const {
  if (!reduces_device_memory()) {
    detail::refuse_device_memory(name(), "this backend sums host memory only");
  }
}

namespace detail {

void refuse_device_memory(std::string_view backend, std::string_view why) {
  throw CommError("dlx", 0,
                  fmt::format("a tensor in GPU memory was given to the {} backend, which cannot "
                              "sum it: {}. Use the NCCL backend (a trial with GPUs, "
                              "DLX_COMM_BACKEND unset or nccl), or copy the tensor to host memory "
                              "first; nothing was read or changed", backend, why));
}

bool any_on_device(std::span<const Tensor> tensors) noexcept {
  return std::any_of(tensors.begin(), tensors.end(),
                     [](const Tensor& tensor) { return tensor.on_device(); });
}

}  // namespace detail
}  // namespace dlx::comm
