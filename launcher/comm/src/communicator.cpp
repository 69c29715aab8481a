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

}  // namespace dlx::comm
