// SPDX-License-Identifier: Apache-2.0
// The tar family through libarchive (unpack.hpp has what an archive may hold and why).
//
// libarchive's writer works with names relative to the working directory, or absolute ones; given
// absolute names below the staging directory it replaced that directory itself with an archive's
// "." link (issue 31, finding 5). So the unpack runs in a child process whose working directory
// is the staging directory's handle (fchdir), with relative names, the secure flags (no "..", no
// absolute name, nothing through a link), and the entries checked here first. fchdir changes the
// directory of every thread, hence the child: the stager's own threads (and a test's) keep theirs.
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "dlx/common/byte_size.hpp"
#include "dlx/common/file_kind.hpp"
#include "dlx/common/unique_fd.hpp"
#include "dlx/data/stage.hpp"
#include "unpack.hpp"

namespace dlx::data {

namespace fs = std::filesystem;

namespace {

using Reader = std::unique_ptr<struct archive, decltype(&archive_read_free)>;
using Writer = std::unique_ptr<struct archive, decltype(&archive_write_free)>;

constexpr std::size_t kMaxChildMessage = 64 << 10;

Reader open_reader(const fs::path& archive) {
  Reader in(archive_read_new(), archive_read_free);
  archive_read_support_format_tar(in.get());
  archive_read_support_format_gnutar(in.get());
  // The compressions the suffixes name, each through its library (never an external program).
  archive_read_support_filter_gzip(in.get());
  archive_read_support_filter_bzip2(in.get());
  archive_read_support_filter_xz(in.get());
  archive_read_support_filter_lzma(in.get());
  archive_read_support_filter_zstd(in.get());
  if (archive_read_open_filename(in.get(), archive.c_str(), std::size_t{1} << 20) != ARCHIVE_OK) {
    unpack_failed(archive, archive_error_string(in.get()));
  }
  return in;
}

// A name from the archive that stays inside the destination: relative, without "..".
bool stays_inside(const char* name) {
  if (name == nullptr || *name == '\0') return true;
  const fs::path path(name);
  if (path.is_absolute()) return false;
  for (const auto& part : path) {
    if (part == "..") return false;
  }
  return true;
}

// "", ".", "./", "./." ...: the unpacked directory itself.
bool names_top(const char* name) { return name == nullptr || fs::path(name).lexically_normal() == "."; }

// Refuses what unpack.hpp says an archive may not hold. True for the entry "." as a directory,
// which is skipped: the unpacked directory stays as dlx made it.
bool check_entry(const fs::path& archive, struct archive_entry* entry) {
  const char* name = archive_entry_pathname(entry);
  const char* hardlink = archive_entry_hardlink(entry);
  if (!stays_inside(name) || !stays_inside(hardlink)) {
    unpack_failed(archive, fmt::format("the entry '{}' would land outside the unpacked directory",
                                       hardlink && !stays_inside(hardlink) ? hardlink : name));
  }
  const mode_t mode = archive_entry_mode(entry);
  if (hardlink && names_top(hardlink)) {
    unpack_failed(archive, fmt::format("the entry '{}' is a hard link to the unpacked directory itself", name));
  }
  if (names_top(name)) {
    if (S_ISDIR(mode) && !hardlink) return true;
    const char* target = archive_entry_symlink(entry);
    unpack_failed(archive, fmt::format("the entry '{}' is {}{}, not a directory: unpacked, it would replace the "
                                       "directory the trials read (an archive's \".\" may only be a directory)",
                                       name ? name : "", hardlink ? "a hard link" : describe_file_kind(mode),
                                       target ? fmt::format(" to '{}'", target) : std::string()));
  }
  if (!hardlink && !S_ISREG(mode) && !S_ISDIR(mode) && !S_ISLNK(mode)) {
    unpack_failed(archive, fmt::format("the entry '{}' is {}: dlx unpacks only files, directories and symbolic links",
                                       name, describe_file_kind(mode)));
  }
  return false;
}

// What an entry adds to the unpacked size: a regular file's declared size (a hard link's data,
// when it has any, goes into the file it links).
std::uint64_t declared_bytes(struct archive_entry* entry) {
  if (!S_ISREG(archive_entry_mode(entry)) || archive_entry_size(entry) <= 0) return 0;
  return static_cast<std::uint64_t>(archive_entry_size(entry));
}

[[noreturn]] void over_budget(const fs::path& archive, std::uint64_t budget) {
  unpack_failed(archive, fmt::format("it unpacks to more than the {} it held when it was counted (was it replaced "
                                     "while it was staged? stage an archive no job is writing, or retry)",
                                     format_byte_size(budget)));
}

// The unpack itself, in the child, whose working directory is the staging directory.
void extract_here(const fs::path& archive, std::uint64_t budget) {
  Reader in = open_reader(archive);
  Writer out(archive_write_disk_new(), archive_write_free);
  // Modes and times kept; never "..", never an absolute name, never through a link; owners never
  // restored (no lookup of names either).
  archive_write_disk_set_options(out.get(), ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME |
                                                ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                                ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS);
  std::uint64_t written = 0;
  struct archive_entry* entry = nullptr;
  for (;;) {
    const int got = archive_read_next_header(in.get(), &entry);
    if (got == ARCHIVE_EOF) break;
    if (got != ARCHIVE_OK) unpack_failed(archive, archive_error_string(in.get()));
    if (check_entry(archive, entry)) continue;
    archive_entry_set_perm(entry, archive_entry_perm(entry) & 0777);  // permission bits, not set-id bits
    const std::uint64_t declared = declared_bytes(entry);
    if (declared > budget - written) over_budget(archive, budget);
    if (archive_write_header(out.get(), entry) != ARCHIVE_OK) unpack_failed(archive, archive_error_string(out.get()));
    std::uint64_t data = 0;
    const void* block = nullptr;
    std::size_t size = 0;
    la_int64_t offset = 0;
    for (;;) {
      const int read = archive_read_data_block(in.get(), &block, &size, &offset);
      if (read == ARCHIVE_EOF) break;
      if (read != ARCHIVE_OK) unpack_failed(archive, archive_error_string(in.get()));
      data += size;
      if (data > declared) over_budget(archive, budget);
      if (archive_write_data_block(out.get(), block, size, offset) != ARCHIVE_OK) {
        unpack_failed(archive, archive_error_string(out.get()));
      }
    }
    if (archive_write_finish_entry(out.get()) != ARCHIVE_OK) unpack_failed(archive, archive_error_string(out.get()));
    written += declared;
  }
  if (archive_write_close(out.get()) != ARCHIVE_OK) unpack_failed(archive, archive_error_string(out.get()));
}

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t wrote = ::write(fd, text.data() + done, text.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return;
    done += static_cast<std::size_t>(wrote);
  }
}

std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return text;
    if (text.size() < kMaxChildMessage) text.append(buffer, static_cast<std::size_t>(got));
  }
}

}  // namespace

std::optional<std::uint64_t> tar_unpacked_size(const fs::path& archive, std::uint64_t limit) {
  Reader in = open_reader(archive);
  std::uint64_t total = 0;
  struct archive_entry* entry = nullptr;
  for (;;) {
    const int got = archive_read_next_header(in.get(), &entry);
    if (got == ARCHIVE_EOF) return total;
    if (got != ARCHIVE_OK) unpack_failed(archive, archive_error_string(in.get()));
    check_entry(archive, entry);
    const std::uint64_t declared = declared_bytes(entry);
    if (declared > limit - total) return std::nullopt;  // stop at once: a small archive may declare terabytes
    total += declared;
    if (archive_read_data_skip(in.get()) != ARCHIVE_OK) unpack_failed(archive, archive_error_string(in.get()));
  }
}

void unpack_tar(const fs::path& archive, int destination, std::uint64_t budget) {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) unpack_failed(archive, fmt::format("cannot make a pipe: {}", std::strerror(errno)));
  UniqueFd from_child(ends[0]), to_parent(ends[1]);
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) unpack_failed(archive, fmt::format("cannot start the unpacking process: {}", std::strerror(errno)));
  if (child == 0) {
    // The child: its failure's message goes to the parent through the pipe; exit without
    // running this process's atexit handlers or flushing its stdio buffers.
    from_child.reset();
    std::string failure;
    try {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the stager killed: the unpack stops too
      if (::getppid() != parent) ::_exit(2);
      if (::fchdir(destination) != 0) {
        unpack_failed(archive, fmt::format("cannot enter the staging directory: {}", std::strerror(errno)));
      }
      extract_here(archive, budget);
    } catch (const std::exception& e) {
      failure = e.what();
    } catch (...) {
      failure = fmt::format("cannot unpack {}: an unexpected error", archive.string());
    }
    write_all(to_parent.get(), failure);
    ::_exit(failure.empty() ? 0 : 1);
  }
  to_parent.reset();
  const std::string message = read_all(from_child.get());
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) unpack_failed(archive, fmt::format("cannot wait for the unpacking process: {}", std::strerror(errno)));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 1 && !message.empty()) throw DataError(message);
  unpack_failed(archive, WIFSIGNALED(status)
                             ? fmt::format("the unpacking process was killed by signal {}", WTERMSIG(status))
                             : fmt::format("the unpacking process exited with status {}", WEXITSTATUS(status)));
}

}  // namespace dlx::data
