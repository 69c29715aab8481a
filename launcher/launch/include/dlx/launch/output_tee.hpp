// SPDX-License-Identifier: Apache-2.0
#pragma once
// The trainer's output, copied into the trial's directory while it still goes where it went
// before (Slurm's output files): `dlx logs` reads the copy (store/trial_logs.hpp names the files).
//
// How (one thread, no work on the trainer's side):
//   1. Two pipes: the trainer gets their write ends as its stdout and stderr (dlx-launch's own
//      messages go the same way while the tee runs, so the log has them in order too).
//   2. A thread polls both read ends and, for every read (up to 64 KiB), writes the bytes first
//      to where the stream went before (the same fd Slurm gave dlx-launch, unchanged: no added
//      buffering, so lines and their interleaving arrive as the trainer wrote them) and then to
//      the log, in the order the reads return them. Stdout and stderr share one log.
//   3. The log takes at most max_bytes of the run's output; then a line saying so ends it and
//      the rest goes to Slurm's files only. A failed write to the log (a full disk) stops the copy
//      the same way; a failed write to the original stream (closed) stops that stream's copy. The
//      trainer is never blocked by the log beyond the pipe's buffer (grown to 1 MiB where allowed).
//   4. finish() (the trainer has exited): dlx-launch takes its streams back and closes its write
//      ends; the thread reads until both pipes are at end of file, which is at once unless a
//      process the trainer started still holds them open. Such a process gets drain_grace (1 s),
//      then the thread stops reading and closes the pipes, so dlx-launch never hangs on it.
//   5. The tee keeps the last bytes of stderr (kStderrTailBytes), so that dlx-launch can name a
//      crashed trainer's last error line (stderr_tail) instead of only its exit status.
// The thread blocks every signal: they stay with dlx-launch's main thread (child_process.cpp),
// and SIGPIPE from a closed stream is an EPIPE error, never a kill.
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "dlx/common/unique_fd.hpp"

namespace dlx::launch {

inline constexpr std::uint64_t kDefaultLogMaxBytes = 64ull << 20;  // 64 MiB per rank and attempt
inline constexpr std::size_t kStderrTailBytes = 8 << 10;

struct TeeOptions {
  std::uint64_t max_bytes = kDefaultLogMaxBytes;  // this run's bytes in the log, marker aside
  std::chrono::milliseconds drain_grace{1000};
};

struct TeeResult {
  std::uint64_t logged_bytes = 0;  // copied into the log
  std::uint64_t seen_bytes = 0;    // read from the pipes
  bool truncated = false;          // the cap or a write error ended the copy
};

class OutputTee {
 public:
  // Starts the thread: bytes written to out_fd()/err_fd() go to `pass_out`/`pass_err` (borrowed,
  // never closed; -1 drops that stream) and into `log`. Throws SystemError.
  OutputTee(UniqueFd log, int pass_out, int pass_err, TeeOptions options = {});
  ~OutputTee();
  OutputTee(const OutputTee&) = delete;
  OutputTee& operator=(const OutputTee&) = delete;

  // The pipes' write ends (the trainer's stdout and stderr).
  int out_fd() const noexcept { return out_write_.get(); }
  int err_fd() const noexcept { return err_write_.get(); }

  // Closes the write ends this object holds and waits for the thread (step 4). Idempotent.
  TeeResult finish();

  // After finish(): appends `text` to the log alone (its destination streams get nothing), where
  // the cap leaves room and the copy was not cut. For what dlx-launch says once its own output no
  // longer goes through the tee. Returns whether it was written.
  bool append_to_log(std::string_view text);

  // The last kStderrTailBytes of stderr so far, once the thread has read what the stderr pipe
  // held when this was called (waiting at most `settle` for it: a trainer that just exited may
  // have left its last lines there).
  std::string stderr_tail(std::chrono::milliseconds settle = std::chrono::milliseconds(500));

 private:
  void run();
  void keep_tail(const char* data, std::size_t size);  // under tail_mutex_

  UniqueFd log_;
  UniqueFd out_read_, out_write_, err_read_, err_write_;
  UniqueFd wake_read_, wake_write_;  // finish() -> thread
  int pass_out_, pass_err_;
  TeeOptions options_;
  TeeResult result_;
  std::mutex tail_mutex_;  // held while the thread reads stderr and keeps its tail
  std::string stderr_tail_;
  std::thread thread_;
  bool finished_ = false;
};

// The marker that ends a log cut at the cap (a line of its own).
std::string truncation_marker(std::uint64_t max_bytes);

// dlx-launch's side: while an object lives, this process's fds 1 and 2 are the tee's pipes and
// the tee passes to the fds they were. Its destructor (or restore()) puts them back first.
class StdioThroughTee {
 public:
  StdioThroughTee(UniqueFd log, TeeOptions options);
  ~StdioThroughTee();
  StdioThroughTee(const StdioThroughTee&) = delete;
  StdioThroughTee& operator=(const StdioThroughTee&) = delete;
  TeeResult restore();
  // restore(), then `line` into the log alone (OutputTee::append_to_log): dlx-launch's last words
  // (the error that ends it), which it prints once its streams are back, go into the log too.
  TeeResult restore_and_log(std::string_view line);
  // OutputTee::stderr_tail of the trainer's (and dlx-launch's) stderr; "" once restored.
  std::string stderr_tail() { return restored_ ? std::string() : tee_.stderr_tail(); }

 private:
  UniqueFd saved_out_, saved_err_;
  OutputTee tee_;
  bool restored_ = false;
};

}  // namespace dlx::launch
