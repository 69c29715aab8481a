// SPDX-License-Identifier: Apache-2.0
#include "dlx/comm/allreduce_handle.hpp"

#include <chrono>

namespace dlx::comm {

AllreduceHandle& AllreduceHandle::operator=(AllreduceHandle&& other) noexcept {
  if (this != &other) {
    settle();
    result_ = std::move(other.result_);
  }
  return *this;
}

AllreduceHandle::~AllreduceHandle() { settle(); }

void AllreduceHandle::settle() noexcept {
  if (!result_.valid()) return;
  try {
    result_.get();
  } catch (...) {
  }
}

void AllreduceHandle::wait() {
  if (result_.valid()) result_.get();
}

bool AllreduceHandle::ready() const {
  return !result_.valid() ||
         result_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

AllreduceHandle AllreduceHandle::completed(std::exception_ptr error) {
  std::promise<void> promise;
  if (error) {
    promise.set_exception(error);
  } else {
    promise.set_value();
  }
  return AllreduceHandle(promise.get_future());
}

}  // namespace dlx::comm
