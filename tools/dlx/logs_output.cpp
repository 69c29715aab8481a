// SPDX-License-Identifier: Apache-2.0
#include "logs_output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <vector>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/common/trusted_path.hpp"
#include "dlx/common/unique_fd.hpp"
#include "dlx/config/display_text.hpp"

namespace dlx::cli {

namespace {

// Where `text` may be cut without splitting a UTF-8 sequence: before an incomplete one at its end
// (at most 3 bytes), else its size.
std::size_t character_boundary(std::string_view text) {
  for (std::size_t back = 1; back <= 3 && back <= text.size(); ++back) {
    const auto byte = static_cast<unsigned char>(text[text.size() - back]);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const std::size_t length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1;
    return length > back ? text.size() - back : text.size();
  }
  return text.size();
}

}  // namespace

void LogOutput::emit_escaped(std::string_view text) {
  const auto shown = config::printable(text);
  std::fwrite(shown.data(), 1, shown.size(), stdout);
}

void LogOutput::write(std::string_view bytes) {
  if (bytes.empty()) return;
  if (!escape_) {
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    at_line_start_ = bytes.back() == '\n';
    return;
  }
  pending_.append(bytes);
  std::size_t start = 0;
  for (auto end = pending_.find('\n'); end != std::string::npos; end = pending_.find('\n', start)) {
    emit_escaped(std::string_view(pending_).substr(start, end - start));
    std::fputc('\n', stdout);
    start = end + 1;
  }
  pending_.erase(0, start);
  if (pending_.size() >= kMaxPending) {
    const auto cut = character_boundary(pending_);
    emit_escaped(std::string_view(pending_).substr(0, cut));
    pending_.erase(0, cut);
    at_line_start_ = false;
    return;
  }
  at_line_start_ = pending_.empty();
}

void LogOutput::end_source() {
  if (!pending_.empty()) {
    emit_escaped(pending_);
    pending_.clear();
  }
  if (!at_line_start_) std::fputc('\n', stdout);
  at_line_start_ = true;
  std::fflush(stdout);
}

void LogOutput::header(std::string_view text) {
  end_source();
  fmt::print("# {}\n", config::printable(text));
  std::fflush(stdout);
}

std::uint64_t copy_log(const std::filesystem::path& path, std::uint64_t offset, LogOutput& out,
                       const std::optional<LogOwner>& owner) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) {
    if (errno == ENOENT) return offset;
    const int error = errno;
    if (error == ELOOP) {
      throw Error(fmt::format("{} is a symbolic link, not {} (not followed; remove it)", path.string(),
                              owner ? fmt::format("the output file Slurm wrote for job {}", owner->job_id)
                                    : std::string("a log dlx-launch wrote")));
    }
    throw SystemError(fmt::format("cannot read {}{}", path.string(),
                                  error == EACCES && owner
                                      ? fmt::format(" as {}, the user job {} ran as", owner->user, owner->job_id)
                                  : error == EACCES ? " (the experiment's files are readable by its owner "
                                                      "and their group only: ask its owner)"
                                                    : ""),
                      error);
  }
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0) throw SystemError(fmt::format("cannot stat {}", path.string()), errno);
  if (!S_ISREG(status.st_mode)) {
    throw Error(fmt::format("{} is not a regular file (not read)", path.string()));
  }
  if (owner && status.st_uid != owner->uid) {
    throw Error(fmt::format("{} belongs to {}, not to {}, the user job {} ran as: not the output file Slurm "
                            "wrote for it (not read)",
                            path.string(), user_name_of(status.st_uid), owner->user, owner->job_id));
  }
  const auto size = static_cast<std::uint64_t>(status.st_size);
  if (size < offset) offset = 0;  // truncated since (Slurm's file of a requeued job)
  std::vector<char> buffer(1 << 16);
  while (offset < size) {
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), size - offset));
    const ssize_t n = ::pread(fd.get(), buffer.data(), want, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SystemError(fmt::format("cannot read {}", path.string()), errno);
    if (n == 0) break;
    out.write(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
    offset += static_cast<std::uint64_t>(n);
  }
  return offset;
}

}  // namespace dlx::cli
