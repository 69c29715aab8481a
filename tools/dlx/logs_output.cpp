#include "logs_output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <vector>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/common/unique_fd.hpp"
#include "dlx/config/display_text.hpp"

namespace dlx::cli {

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
    const auto line = config::printable(std::string_view(pending_).substr(start, end - start));
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
    start = end + 1;
  }
  pending_.erase(0, start);
  at_line_start_ = pending_.empty();
}

void LogOutput::end_source() {
  if (!pending_.empty()) {
    const auto line = config::printable(pending_);
    std::fwrite(line.data(), 1, line.size(), stdout);
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
                       bool no_links) {
  const int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | (no_links ? O_NOFOLLOW : 0);
  UniqueFd fd(::open(path.c_str(), flags));
  if (!fd) {
    if (errno == ENOENT) return offset;
    const int error = errno;
    if (error == ELOOP) {
      throw Error(fmt::format("{} is a symbolic link, not a log dlx-launch wrote (not followed; "
                              "remove it)", path.string()));
    }
    throw SystemError(fmt::format("cannot read {}{}", path.string(),
                                  error == EACCES ? " (the experiment's files are readable by its owner "
                                                    "and their group only: ask its owner)" : ""),
                      error);
  }
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0) throw SystemError(fmt::format("cannot stat {}", path.string()), errno);
  if (!S_ISREG(status.st_mode)) {
    throw Error(fmt::format("{} is not a regular file (not read)", path.string()));
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
