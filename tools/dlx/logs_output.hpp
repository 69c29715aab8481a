#pragma once
// What `dlx logs` writes: headers and a trial's output bytes. To a file or pipe the bytes go out
// exactly as the trainer wrote them; on a terminal (unless --raw) every line goes through
// printable() first, so that an escape sequence in a trial's output (another user's, when a group
// member reads it) cannot act on the reader's terminal.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace dlx::cli {

class LogOutput {
 public:
  explicit LogOutput(bool escape) : escape_(escape) {}
  // Bytes of the current source (on a terminal only whole lines go out; the rest waits).
  void write(std::string_view bytes);
  // The current source is done for now: what waits goes out, and a newline if it did not end one.
  void end_source();
  // A "# ..." line of its own (after end_source()).
  void header(std::string_view text);

 private:
  bool escape_;
  std::string pending_;
  bool at_line_start_ = true;
};

// Copies `path` from byte `offset` to its current end into `out` and returns the new offset (the
// same when the file does not exist yet; 0 onwards again when it became shorter, as Slurm's file
// does when a requeued job truncates it). Only a regular file is read (opened without blocking, so
// a FIFO cannot stall the reader); `no_links` refuses a symbolic link. Throws dlx::Error naming
// the file.
std::uint64_t copy_log(const std::filesystem::path& path, std::uint64_t offset, LogOutput& out,
                       bool no_links = true);

}  // namespace dlx::cli
