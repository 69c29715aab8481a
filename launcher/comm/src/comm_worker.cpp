// SPDX-License-Identifier: Apache-2.0
#include "comm_worker.hpp"

namespace dlx::comm::detail {

CommWorker::~CommWorker() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::future<void> CommWorker::submit(std::function<void()> job) {
  std::packaged_task<void()> task(std::move(job));
  auto result = task.get_future();
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(task));
    ++outstanding_;
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  }
  wake_.notify_one();
  return result;
}

void CommWorker::drain() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return outstanding_ == 0; });
}

void CommWorker::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ and nothing left
    auto task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    task();  // a packaged_task stores the exception in its future
    lock.lock();
    if (--outstanding_ == 0) idle_.notify_all();
  }
}

}  // namespace dlx::comm::detail
