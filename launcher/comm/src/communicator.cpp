// SPDX-License-Identifier: Apache-2.0
#include "dlx/comm/communicator.hpp"

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

}  // namespace dlx::comm
