// SPDX-License-Identifier: Apache-2.0
#include "dlx/common/trusted_path.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <deque>
#include <fstream>
#include <vector>

#include <fmt/format.h>

#include "dlx/common/accounts.hpp"
#include "dlx/common/file_kind.hpp"

namespace dlx {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxSymbolicLinks = 40;  // the kernel's own limit (ELOOP)

bool writable_by_others(const struct stat& status) { return (status.st_mode & (S_IWGRP | S_IWOTH)) != 0; }
bool sticky(const struct stat& status) { return (status.st_mode & S_ISVTX) != 0; }
// Inside a user namespace that does not map root (a rootless container, e.g. pyxis/enroot, or
// unshare --user), files of every unmapped uid, root's included, show as the overflow uid
// (/proc/sys/kernel/overflowuid). There they stand for root: the rule cannot tell them apart,
// so inside such a namespace it checks less (docs/security.md, "Known limits"); slurmstepd and
// sbatch, which check the same directories outside any namespace, are not weakened.
uid_t unmapped_root_uid() {
  static const uid_t value = [] {
    std::ifstream map("/proc/self/uid_map");
    std::string inside, outside, count;
    if (!(map >> inside >> outside >> count) || (inside == "0" && outside == "0")) return uid_t{0};
    std::ifstream overflow("/proc/sys/kernel/overflowuid");
    long uid = 65534;
    overflow >> uid;
    return static_cast<uid_t>(uid);
  }();
  return value;
}

bool root_or(uid_t uid, uid_t owner) { return uid == 0 || uid == owner || uid == unmapped_root_uid(); }

struct stat stat_of(int fd, const fs::path& shown) {
  struct stat status {};
  if (::fstat(fd, &status) != 0) throw SystemError(fmt::format("cannot look at {}", shown.string()), errno);
  return status;
}

std::string writers_of(const struct stat& status) {
  const bool group = (status.st_mode & S_IWGRP) != 0, others = (status.st_mode & S_IWOTH) != 0;
  return group && others ? "its group and all users" : group ? "its group" : "all users";
}

// An ancestor: owned by root or the user; shared with others only with the sticky bit.
void check_ancestor(const struct stat& status, const fs::path& shown, uid_t owner) {
  if (!root_or(status.st_uid, owner)) {
    throw UntrustedPathError(fmt::format(
        "{} is owned by {}, not by {} or root: its owner could replace what dlx reads and runs "
        "below it (an administrator should make root own it, or move dlx's storage; see "
        "docs/security.md)",
        shown.string(), user_name_of(status.st_uid), user_name_of(owner)));
  }
  if (writable_by_others(status) && !sticky(status)) {
    throw UntrustedPathError(fmt::format(
        "{} (mode {:04o}) is writable by {} without the sticky bit: any of them could rename what "
        "dlx reads and runs below it (an administrator can fix it: chmod +t {}, or chmod go-w {})",
        shown.string(), status.st_mode & 07777, writers_of(status), shown.string(), shown.string()));
  }
}

// The directory or file itself: the user's own, and only theirs to change.
void check_owned(const struct stat& status, const fs::path& shown, uid_t owner) {
  const char* what = S_ISDIR(status.st_mode) ? "directory" : "file";
  if (status.st_uid != owner) {
    throw UntrustedPathError(fmt::format(
        "{} is owned by {}, not by {}: dlx runs only what the submitting user's own {} holds "
        "(if another user made it, have it removed: an administrator can create it for you with "
        "mkdir -m 0750 and chown; see docs/security.md)",
        shown.string(), user_name_of(status.st_uid), user_name_of(owner), what));
  }
  if (writable_by_others(status)) {
    throw UntrustedPathError(fmt::format(
        "{} (mode {:04o}) is writable by {}, so another user could change what dlx reads and runs "
        "from it (chmod go-w {})",
        shown.string(), status.st_mode & 07777, writers_of(status), shown.string()));
  }
}

// An entry of a shared sticky directory is safe from others only if they do not own it.
void check_entry_of_shared(const struct stat& parent, const struct stat& entry, const fs::path& shown,
                           uid_t owner) {
  if (writable_by_others(parent) && !root_or(entry.st_uid, owner)) {
    throw UntrustedPathError(fmt::format(
        "{} is owned by {}, not by {} or root, in a directory every user can write to, so dlx will "
        "not act on what it holds for {} (if it was made in {}'s place, have it removed: an "
        "administrator can create it with mkdir -m 0750 and chown; see docs/security.md)",
        shown.string(), user_name_of(entry.st_uid), user_name_of(owner), user_name_of(owner),
        user_name_of(owner)));
  }
}

std::string read_link(int link_fd, const fs::path& shown) {
  std::vector<char> buffer(PATH_MAX + 1);
  const ssize_t length = ::readlinkat(link_fd, "", buffer.data(), buffer.size());
  if (length < 0) throw SystemError(fmt::format("cannot read the symbolic link {}", shown.string()), errno);
  if (static_cast<std::size_t>(length) >= buffer.size()) {
    throw SystemError(fmt::format("cannot follow the symbolic link {}", shown.string()), ENAMETOOLONG);
  }
  return std::string(buffer.data(), static_cast<std::size_t>(length));
}

void push_components(std::deque<std::string>& pending, const fs::path& path) {
  std::vector<std::string> parts;
  for (const auto& part : path.relative_path()) {
    if (!part.empty() && part != ".") parts.push_back(part.string());
  }
  pending.insert(pending.begin(), parts.begin(), parts.end());
}

// One directory reached by the walk: open with O_PATH, its status and its path as walked.
struct Step {
  UniqueFd fd;
  struct stat status {};
  fs::path shown;
};

// The walk described in trusted_path.hpp. With `owned_target`, the last component must be the
// user's own real directory; otherwise only a trusted ancestor.
Step walk(const fs::path& path, uid_t owner, bool owned_target) {
  if (!path.is_absolute()) {
    throw UntrustedPathError(fmt::format("{}: not an absolute path", path.string()));
  }
  std::vector<Step> stack;
  Step root;
  root.fd = UniqueFd(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.fd) throw SystemError("cannot open /", errno);
  root.status = stat_of(root.fd.get(), "/");
  root.shown = "/";
  check_ancestor(root.status, root.shown, owner);
  stack.push_back(std::move(root));

  std::deque<std::string> pending;
  push_components(pending, path);
  int links = 0;
  while (!pending.empty()) {
    const std::string name = pending.front();
    pending.pop_front();
    if (name == "..") {
      if (stack.size() > 1) stack.pop_back();
      continue;
    }
    const bool last = pending.empty();
    const Step& parent = stack.back();
    const fs::path shown = parent.shown / name;
    UniqueFd fd(::openat(parent.fd.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) throw SystemError(fmt::format("cannot open {}", shown.string()), errno);
    const struct stat status = stat_of(fd.get(), shown);
    check_entry_of_shared(parent.status, status, shown, owner);
    if (S_ISLNK(status.st_mode)) {
      if (last && owned_target) {
        throw UntrustedPathError(fmt::format(
            "{} is a symbolic link: dlx uses an experiment directory only as a real directory "
            "(give the directory it points to, or have it recreated)",
            shown.string()));
      }
      if (++links > kMaxSymbolicLinks) {
        throw SystemError(fmt::format("cannot follow {}", path.string()), ELOOP);
      }
      const fs::path target = read_link(fd.get(), shown);
      if (target.is_absolute()) stack.resize(1);
      push_components(pending, target);
      continue;
    }
    if (!S_ISDIR(status.st_mode)) {
      throw SystemError(fmt::format("{} is {}, not a directory", shown.string(), describe_file_kind(status.st_mode)),
                        ENOTDIR);
    }
    if (last && owned_target) {
      check_owned(status, shown, owner);
    } else {
      check_ancestor(status, shown, owner);
    }
    stack.push_back(Step{std::move(fd), status, shown});
  }
  if (owned_target && stack.size() == 1) check_owned(stack.back().status, "/", owner);
  return std::move(stack.back());
}

// A directory opened O_PATH, reopened for reading (fsync, getdents, fchmod need a real open).
UniqueFd reopen_directory(const Step& step) {
  UniqueFd fd(::openat(step.fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw SystemError(fmt::format("cannot open {}", step.shown.string()), errno);
  return fd;
}

// Why openat(O_NOFOLLOW | O_DIRECTORY) refused `name`: a symbolic link, or not a directory.
[[noreturn]] void explain_not_directory(int parent, const std::string& name, const fs::path& shown, int error) {
  struct stat status {};
  if (::fstatat(parent, name.c_str(), &status, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(status.st_mode)) {
      throw UntrustedPathError(fmt::format(
          "{} is a symbolic link: dlx creates and uses it only as a real directory (if you did not "
          "make it, someone else did: remove it)",
          shown.string()));
    }
    throw SystemError::with_message(
        fmt::format("{} is {}, not a directory (remove or rename it)", shown.string(),
                    describe_file_kind(status.st_mode)),
        ENOTDIR);
  }
  throw SystemError(fmt::format("cannot open {}", shown.string()), error);
}

}  // namespace

UniqueFd open_trusted_directory(const fs::path& directory, uid_t owner) {
  return reopen_directory(walk(directory, owner, /*owned_target=*/true));
}

UniqueFd open_trusted_ancestor(const fs::path& directory, uid_t owner) {
  return std::move(walk(directory, owner, /*owned_target=*/false).fd);
}

UniqueFd open_owned_directory_at(int parent, const std::string& name, uid_t owner, bool create, mode_t mode,
                                 const fs::path& shown, bool* created) {
  bool made = false;
  if (create) {
    if (::mkdirat(parent, name.c_str(), mode) == 0) {
      made = true;
    } else if (errno != EEXIST) {
      throw SystemError(fmt::format("cannot create directory {}", shown.string()), errno);
    }
  }
  if (created) *created = made;
  UniqueFd fd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    const int error = errno;
    if (error == ELOOP || error == ENOTDIR) explain_not_directory(parent, name, shown, error);
    throw SystemError(fmt::format("cannot open {}", shown.string()), error);
  }
  // mkdir's mode is masked by the umask (0775 under umask 002 would let the group plant files):
  // the layout's modes are exact.
  if (made && ::fchmod(fd.get(), mode) != 0) {
    throw SystemError(fmt::format("cannot set the mode of {}", shown.string()), errno);
  }
  check_owned(stat_of(fd.get(), shown), shown, owner);
  return fd;
}

UniqueFd open_owned_file_at(int directory, const std::string& name, uid_t owner, const fs::path& shown) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  UniqueFd fd(::openat(directory, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    const int error = errno;
    if (error == ELOOP) {
      throw UntrustedPathError(fmt::format(
          "{} is a symbolic link: dlx reads it only as a regular file of the experiment's owner",
          shown.string()));
    }
    throw SystemError(fmt::format("cannot open {}", shown.string()), error);
  }
  const struct stat status = stat_of(fd.get(), shown);
  if (!S_ISREG(status.st_mode)) {
    throw SystemError::with_message(fmt::format("{} is {}, not a regular file (remove it; dlx wrote a "
                                                "regular file there)",
                                                shown.string(), describe_file_kind(status.st_mode)),
                                    EINVAL);
  }
  check_owned(status, shown, owner);
  return fd;
}

std::string read_open_file(int fd, std::size_t max_bytes, const fs::path& shown) {
  std::string contents;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError(fmt::format("cannot read {}", shown.string()), errno);
    }
    if (n == 0) break;
    contents.append(buffer, static_cast<std::size_t>(n));
    if (contents.size() > max_bytes) {
      throw Error(fmt::format("{}: larger than the {} byte limit", shown.string(), max_bytes));
    }
  }
  return contents;
}

}  // namespace dlx
