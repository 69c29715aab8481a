// SPDX-License-Identifier: Apache-2.0
// Opening the journal and its lock files safely (journal_files.hpp; protocol in journal.hpp).
#include "journal_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include <fmt/format.h>

#include "dlx/common/accounts.hpp"
#include "dlx/common/error.hpp"
#include "dlx/common/file_kind.hpp"
#include "dlx/searcher/journal.hpp"

namespace dlx::searcher::detail {

namespace {

// The error for a failed open of `path` (errno `error`). O_NOFOLLOW fails with ELOOP on a
// symbolic link; a loop in the directories above fails the same way, hence the lstat.
[[noreturn]] void throw_journal_open_error(const std::filesystem::path& path, int error, const char* what) {
  struct stat info {};
  if (error == ELOOP && ::lstat(path.c_str(), &info) == 0 && S_ISLNK(info.st_mode)) {
    throw JournalError(fmt::format("{} is a symbolic link: dlx does not follow links in an experiment directory "
                                   "(whoever can change the link chooses what dlx reads and writes); replace it "
                                   "with the file itself, or remove it",
                                   path.string()));
  }
  if (error == EISDIR) {
    throw JournalError(fmt::format("{} is a directory, not the {}: move it aside", path.string(), what));
  }
  throw SystemError(fmt::format("cannot open the {} {}", what, path.string()), error);
}

// The checks every file of the protocol passes once open: a regular file (a FIFO, a device or a
// directory planted under the name is refused before anything is read from it).
struct stat checked_regular_journal_file(int fd, const std::filesystem::path& path, const char* what) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) throw SystemError(fmt::format("cannot stat {}", path.string()), errno);
  if (!S_ISREG(info.st_mode)) {
    throw JournalError(fmt::format("{} is {}, not a regular file: dlx uses its {} only as a regular file; move it "
                                   "aside",
                                   path.string(), describe_file_kind(info.st_mode), what));
  }
  return info;
}

// A file a writer opens read-write: created with exactly `create_mode` (fchmod: the umask may
// have removed bits), or an existing one of this process's user with its mode cut to `most`.
UniqueFd open_owned_journal_file(const std::filesystem::path& path, mode_t create_mode, mode_t most, const char* what) {
  constexpr int kFlags = O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  UniqueFd fd(::open(path.c_str(), kFlags));
  bool created = false;
  if (!fd && errno == ENOENT) {
    fd = UniqueFd(::open(path.c_str(), kFlags | O_CREAT | O_EXCL, create_mode));
    created = static_cast<bool>(fd);
    if (!fd && errno == EEXIST) fd = UniqueFd(::open(path.c_str(), kFlags));  // another process made it just now
  }
  if (!fd) throw_journal_open_error(path, errno, what);
  const struct stat info = checked_regular_journal_file(fd.get(), path, what);
  if (info.st_uid != ::geteuid()) {
    throw JournalError(fmt::format("{} belongs to {}, not to this process's user ({}): only the experiment's owner "
                                   "writes its {} (another user's file there could be changed or locked by them); "
                                   "run this as the owner, or, if the file is left over from a run as another "
                                   "user, have it removed",
                                   path.string(), describe_user(info.st_uid), describe_user(::geteuid()), what));
  }
  const mode_t mode = info.st_mode & 07777;
  const mode_t wanted = created ? create_mode : (mode & most);
  if (mode != wanted && ::fchmod(fd.get(), wanted) != 0) {
    throw SystemError(fmt::format("cannot set the mode of {} to {:04o}", path.string(), wanted), errno);
  }
  return fd;
}

}  // namespace

std::string describe_user(uid_t uid) {
  if (auto entry = passwd_entry(uid)) return fmt::format("uid {} ({})", uid, entry->name);
  return fmt::format("uid {}", uid);
}

UniqueFd open_journal_to_read(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return fd;
    throw_journal_open_error(path, errno, "journal");
  }
  checked_regular_journal_file(fd.get(), path, "journal");
  return fd;
}

UniqueFd open_journal_to_write(const std::filesystem::path& path) {
  return open_owned_journal_file(path, 0640, 0640, "journal");
}

UniqueFd open_lock_file(const std::filesystem::path& path) {
  return open_owned_journal_file(path, 0600, 0600, "journal lock file");
}

}  // namespace dlx::searcher::detail
