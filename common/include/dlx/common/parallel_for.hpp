// SPDX-License-Identifier: Apache-2.0
#pragma once
// parallel_for(count, threads, body): body(i) for every i in [0, count), on `threads` threads (the
// caller's own included, so 1 starts none), each taking the next index from one shared counter, so
// that uneven items (a large file beside small ones) keep every thread busy. The first exception
// stops the others from taking more indices and is rethrown once every thread has returned. Used
// by the copies of the code snapshot, of the data cache and of a checkpoint snapshot, and by the
// checkpoint's block CRCs.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace dlx {

template <typename Body>
void parallel_for(std::size_t count, std::size_t threads, Body&& body) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    try {
      for (std::size_t index = next++; index < count && !failed; index = next++) body(index);
    } catch (...) {
      std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      failed = true;
    }
  };
  const std::size_t used = std::clamp<std::size_t>(threads, 1, std::max<std::size_t>(count, 1));
  {
    std::vector<std::jthread> helpers;
    for (std::size_t helper = 1; helper < used; ++helper) helpers.emplace_back(work);
    work();
  }  // joins the helpers
  if (failure) std::rethrow_exception(failure);
}

}  // namespace dlx
