// SPDX-License-Identifier: Apache-2.0
#include "tree_walk.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "dlx/common/unique_fd.hpp"
#include "dlx/data/stage.hpp"

namespace dlx::data {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void walk_failed(const char* what, const fs::path& shown, int error) {
  throw DataError(fmt::format("cannot {} {}: {}", what, shown.string(), std::strerror(error)));
}

struct stat status_of(int fd, const fs::path& shown) {
  struct stat status {};
  if (::fstat(fd, &status) != 0) walk_failed("look at", shown, errno);
  return status;
}

}  // namespace

std::vector<std::string> list_names(int fd, const fs::path& shown) {
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) walk_failed("list", shown, errno);
  std::unique_ptr<DIR, int (*)(DIR*)> stream(::fdopendir(copy), ::closedir);
  if (!stream) {
    const int error = errno;
    ::close(copy);
    walk_failed("list", shown, error);
  }
  // A duplicate shares the directory's read position with `fd`: start from the first entry.
  ::rewinddir(stream.get());
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* entry = ::readdir(stream.get())) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
    errno = 0;
  }
  if (errno != 0) walk_failed("list", shown, errno);
  return names;
}

namespace {

// One directory on the way down: how it is named in its parent, who it is, what is left in it.
struct Frame {
  std::string name;
  dev_t device = 0;
  ino_t inode = 0;
  fs::path shown;
  std::vector<std::string> pending;
};

UniqueFd open_child(int parent, const std::string& name, const fs::path& shown, bool open_up) {
  UniqueFd child(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!child && errno == EACCES) {
    if (!open_up) return child;
    // AT_SYMLINK_NOFOLLOW: glibc changes the mode through an O_PATH | O_NOFOLLOW descriptor.
    if (::fchmodat(parent, name.c_str(), 0700, AT_SYMLINK_NOFOLLOW) != 0) walk_failed("open up", shown, errno);
    child = UniqueFd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  }
  if (!child) walk_failed("open", shown, errno);
  return child;
}

}  // namespace

void walk_tree(int top, const fs::path& shown, const TreeVisitor& visitor) {
  UniqueFd current(::fcntl(top, F_DUPFD_CLOEXEC, 0));
  if (!current) walk_failed("open", shown, errno);
  if (visitor.enter) visitor.enter(current.get(), shown);
  std::vector<Frame> stack;
  const struct stat top_status = status_of(current.get(), shown);
  stack.push_back(Frame{"", top_status.st_dev, top_status.st_ino, shown, list_names(current.get(), shown)});
  while (true) {
    if (stack.back().pending.empty()) {
      if (stack.size() == 1) return;
      // Climb: ".." of a directory is its real parent; check it is the one we came from.
      UniqueFd parent(::openat(current.get(), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      const Frame& above = stack[stack.size() - 2];
      if (!parent) walk_failed("open", above.shown, errno);
      const struct stat arrived = status_of(parent.get(), above.shown);
      if (arrived.st_dev != above.device || arrived.st_ino != above.inode) {
        throw DataError(fmt::format("{} changed while dlx walked it (it is the user's own private directory: "
                                    "did another process of yours move it?)", above.shown.string()));
      }
      const Frame done = std::move(stack.back());
      stack.pop_back();
      current = std::move(parent);
      if (visitor.leave) visitor.leave(current.get(), done.name, done.shown);
      continue;
    }
    const std::string name = std::move(stack.back().pending.back());
    stack.back().pending.pop_back();
    const fs::path child_shown = stack.back().shown / name;
    struct stat status {};
    if (::fstatat(current.get(), name.c_str(), &status, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      walk_failed("look at", child_shown, errno);
    }
    if (!S_ISDIR(status.st_mode)) {
      if (visitor.entry) visitor.entry(current.get(), name, status, child_shown);
      continue;
    }
    UniqueFd child = open_child(current.get(), name, child_shown, visitor.open_up);
    if (!child) continue;  // unreadable, and the visitor does not open it up
    const struct stat opened = status_of(child.get(), child_shown);
    if (opened.st_dev != status.st_dev || opened.st_ino != status.st_ino) {
      throw DataError(fmt::format("{} changed while dlx walked it", child_shown.string()));
    }
    if (visitor.enter) visitor.enter(child.get(), child_shown);
    Frame next{name, opened.st_dev, opened.st_ino, child_shown, list_names(child.get(), child_shown)};
    current = std::move(child);
    stack.push_back(std::move(next));
  }
}

}  // namespace dlx::data
