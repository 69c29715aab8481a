// SPDX-License-Identifier: Apache-2.0
#include "dlx/comm/allreduce_handle.hpp"

#include <chrono>

namespace dlx::comm {

AllreduceHandle& AllreduceHandle::operator=(AllreduceHandle&& other) noexcept {
  if (this != &other) {
    settle();
    result_ = std::move(other.result_);
    done_ = std::move(other.done_);
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
  if (!result_.valid()) return true;
  const auto status = result_.wait_for(std::chrono::seconds(0));
  if (status == std::future_status::deferred) return done_ && done_();
  return status == std::future_status::ready;
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
