// SPDX-License-Identifier: Apache-2.0
#pragma once
// The metric lines rank 0 prints on the trainer's standard output ("dlx: trial 3 step 200
// validation accuracy=0.912"), written by a thread of their own, so that the metrics flusher,
// which makes reports durable, never waits for whoever reads that output: a pipe nobody drains
// (a parent that captures the output and reads it only at the end, a stalled `| tee`) would
// otherwise stop the flusher, then the reports behind it, and hang the trial's exit.
//
// The thread writes only when the output can take bytes (poll), a pipe's worth at most at a time
// and whole lines, so that it never blocks for long in a write and never splits a line. Lines the
// output cannot take yet wait here up to kMaxQueuedBytes; past that, new lines are counted and
// left out, and once the output moves again a line says how many. At the end (the destructor)
// the lines still waiting get kFinalDrain (5 s) to go out; what is left then is counted on stderr, if
// it can take the line. The lines are a view of the reports for people: trial.h5 and the metrics
// log keep every report whatever happens here.
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace dlx::detail {

class MetricLinePrinter {
 public:
  // Writes to `output` (a file descriptor this object does not own; standard output in a
  // trial); stdio's stdout is flushed before each write when `output` is its descriptor, so that
  // what a C or C++ program printed before comes first.
  explicit MetricLinePrinter(int output, std::chrono::milliseconds final_drain = kFinalDrain);
  // Gives the waiting lines final_drain to go out, then returns (a few seconds later at most: a
  // thread still stuck in a write, after another writer filled the pipe between its poll and its
  // write, is left to the process's exit).
  ~MetricLinePrinter();
  MetricLinePrinter(const MetricLinePrinter&) = delete;
  MetricLinePrinter& operator=(const MetricLinePrinter&) = delete;

  // `lines`: whole lines, each ending in '\n'. Never waits for the output.
  void print(std::string lines);

  static constexpr std::size_t kMaxQueuedBytes = std::size_t{1} << 20;
  static constexpr std::chrono::seconds kFinalDrain{5};

 private:
  struct Shared;  // the queue and the thread's state; the thread holds it too (it may outlive this)
  std::shared_ptr<Shared> shared_;
};

}  // namespace dlx::detail
