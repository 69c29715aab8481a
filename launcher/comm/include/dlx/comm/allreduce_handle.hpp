// SPDX-License-Identifier: Apache-2.0
#pragma once
// The result of a non-blocking collective: wait() returns once the buffers hold the result, or
// throws the collective's CommError. A default-constructed handle is already complete. Move-only;
// a handle destroyed without wait() still waits (the buffers must stay valid until then), and
// swallows the error (a destructor never throws).
#include <functional>
#include <future>

namespace dlx::comm {

class AllreduceHandle {
 public:
  AllreduceHandle() = default;
  explicit AllreduceHandle(std::future<void> result) : result_(std::move(result)) {}
  // A deferred `result` (its work runs in wait(), on the caller's thread) with `done`, which says
  // without blocking whether that wait would return at once (a GPU stream's query).
  AllreduceHandle(std::future<void> result, std::function<bool()> done)
      : result_(std::move(result)), done_(std::move(done)) {}
  AllreduceHandle(AllreduceHandle&&) noexcept = default;
  AllreduceHandle& operator=(AllreduceHandle&& other) noexcept;
  AllreduceHandle(const AllreduceHandle&) = delete;
  AllreduceHandle& operator=(const AllreduceHandle&) = delete;
  ~AllreduceHandle();

  void wait();                   // throws CommError
  bool ready() const;            // true when wait() would not block
  bool valid() const noexcept { return result_.valid(); }  // false once waited for

  // A handle whose work already ran (or failed) on the calling thread.
  static AllreduceHandle completed(std::exception_ptr error = nullptr);

 private:
  void settle() noexcept;
  std::future<void> result_;
  std::function<bool()> done_;
};

}  // namespace dlx::comm
