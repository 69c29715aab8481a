// SPDX-License-Identifier: Apache-2.0
#pragma once
// What `dlx logs` writes: headers and a trial's output bytes. To a file or pipe the bytes go out
// exactly as the trainer wrote them; on a terminal (unless --raw) every line goes through
// printable() first, so that an escape sequence in a trial's output (another user's, when a group
// member reads it) cannot act on the reader's terminal.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace dlx::cli {

class LogOutput {
 public:
  explicit LogOutput(bool escape) : escape_(escape) {}
  // Bytes of the current source. On a terminal whole lines go out escaped; a line still open waits,
  // but never more than kMaxPending bytes of it: past that it goes out as it is so far (escaped,
  // cut at a character boundary), so that a log without newlines is streamed, not held whole.
  void write(std::string_view bytes);
  // The current source is done for now: what waits goes out, and a newline if it did not end one.
  void end_source();
  // A "# ..." line of its own (after end_source()).
  void header(std::string_view text);

  static constexpr std::size_t kMaxPending = std::size_t{64} << 10;

 private:
  void emit_escaped(std::string_view text);
  bool escape_;
  std::string pending_;
  bool at_line_start_ = true;
};

// Who may own a log dlx reads (copy_log): dlx-launch's own copies are checked by their directory
// (the experiment's); Slurm's file must belong to the user the job ran as.
struct LogOwner {
  uid_t uid = 0;
  std::string user;    // for messages
  std::string job_id;  // for messages
};

// Copies `path` from byte `offset` to its current end into `out` and returns the new offset (the
// same when the file does not exist yet; 0 onwards again when it became shorter, as Slurm's file
// does when a requeued job truncates it). Only a regular file is read, never through a symbolic
// link (O_NOFOLLOW) and without blocking (a FIFO cannot stall the reader); with `owner`, only a
// file that user owns. Throws dlx::Error naming the file and why it is not read.
std::uint64_t copy_log(const std::filesystem::path& path, std::uint64_t offset, LogOutput& out,
                       const std::optional<LogOwner>& owner = std::nullopt);

}  // namespace dlx::cli
