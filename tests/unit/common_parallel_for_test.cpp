// SPDX-License-Identifier: Apache-2.0
// dlx::parallel_for (common/include/dlx/common/parallel_for.hpp): every index once, on the threads
// asked for, and the first failure rethrown after every thread has stopped.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "dlx/common/parallel_for.hpp"

TEST_CASE("parallel_for visits every index exactly once, on at most the threads asked for", "[common]") {
  for (const std::size_t threads : {std::size_t{1}, std::size_t{3}, std::size_t{16}}) {
    std::vector<std::atomic<int>> visits(1000);
    std::mutex mutex;
    std::set<std::thread::id> seen;
    dlx::parallel_for(visits.size(), threads, [&](std::size_t index) {
      visits[index]++;
      std::lock_guard lock(mutex);
      seen.insert(std::this_thread::get_id());
    });
    for (const auto& count : visits) CHECK(count == 1);
    CHECK(seen.size() <= threads);
    if (threads == 1) CHECK(seen == std::set{std::this_thread::get_id()});  // no thread started
  }
  int calls = 0;
  dlx::parallel_for(0, 4, [&](std::size_t) { ++calls; });
  CHECK(calls == 0);
}

TEST_CASE("parallel_for rethrows the first failure and stops handing out work", "[common]") {
  std::atomic<int> calls{0};
  // Each other item takes 1 ms, so that the others could only take every item by running 100 s
  // past the failure: with items that cost nothing, a loaded machine (a full CI run) let three
  // threads take all 100,000 while the failing one waited to set its flag.
  CHECK_THROWS_WITH(dlx::parallel_for(100000, 4,
                                      [&](std::size_t index) {
                                        calls++;
                                        if (index == 10) throw std::runtime_error("item 10 failed");
                                        std::this_thread::sleep_for(std::chrono::milliseconds(1));
                                      }),
                    "item 10 failed");
  CHECK(calls < 100000);  // the others stopped taking items
}
