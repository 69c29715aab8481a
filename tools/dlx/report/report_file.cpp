// SPDX-License-Identifier: Apache-2.0
#include "report_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include <fmt/format.h>

#include "dlx/common/durable_file.hpp"
#include "dlx/common/error.hpp"

namespace dlx::cli::report {
namespace {

namespace fs = std::filesystem;

fs::path parent_of(const fs::path& output) {
  return output.parent_path().empty() ? fs::path(".") : output.parent_path();
}

[[noreturn]] void cannot_write(const fs::path& output, const std::string& why) {
  throw Error(fmt::format("cannot write the report {}: {} (choose another -o FILE, in a directory you can write)",
                          output.string(), why));
}

}  // namespace

void check_output_path(const fs::path& output) {
  const auto parent = parent_of(output);
  std::error_code error;
  if (!fs::is_directory(parent, error)) {
    cannot_write(output, fmt::format("its directory {} does not exist", parent.string()));
  }
  if (::access(parent.c_str(), W_OK | X_OK) != 0) {
    cannot_write(output, fmt::format("you may not write in {}: {}", parent.string(),
                                     std::generic_category().message(errno)));
  }
  if (fs::is_directory(output, error)) cannot_write(output, "it is a directory");
}

void write_report_file(const fs::path& output, const std::string& page) {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  const auto temporary = temporary_path_for(output);
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666 & ~mask);
  if (fd < 0) cannot_write(output, fmt::format("cannot create {}: {}", temporary.string(), std::generic_category().message(errno)));
  try {
    std::size_t written = 0;
    while (written < page.size()) {
      const ssize_t n = ::write(fd, page.data() + written, page.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) cannot_write(output, fmt::format("{} (is the file system full?)", std::generic_category().message(errno)));
      written += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0) cannot_write(output, std::generic_category().message(errno));
    if (::close(fd) != 0) {
      fd = -1;
      cannot_write(output, std::generic_category().message(errno));
    }
    fd = -1;
    try {
      publish_file(temporary, output);
    } catch (const std::exception& e) {
      cannot_write(output, e.what());
    }
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(temporary.c_str());
    throw;
  }
}

}  // namespace dlx::cli::report
