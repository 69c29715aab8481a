// SPDX-License-Identifier: Apache-2.0
#pragma once
// One background thread that runs submitted jobs one at a time, in submission order (the MPI
// backend's non-blocking collectives). Started on the first submit. Open MPI 4.1 has no
// asynchronous progress thread ("OMPI progress: no" in ompi_info), so an MPI_Iallreduce would
// only advance inside later MPI calls; a thread blocked in MPI_Allreduce makes progress while
// the trainer computes. This needs MPI_THREAD_MULTIPLE (MpiRuntime asks for it).
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace dlx::comm::detail {

class CommWorker {
 public:
  CommWorker() = default;
  ~CommWorker();  // runs what is queued, then joins
  CommWorker(const CommWorker&) = delete;
  CommWorker& operator=(const CommWorker&) = delete;

  // The future holds the job's exception, if any.
  std::future<void> submit(std::function<void()> job);
  // Returns when every submitted job has finished (at once when none is outstanding).
  void drain();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;  // a job arrived or stop
  std::condition_variable idle_;  // outstanding_ dropped to 0
  std::deque<std::packaged_task<void()>> queue_;
  std::size_t outstanding_ = 0;   // queued + running
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace dlx::comm::detail
