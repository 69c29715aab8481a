// Copying the code snapshot: at submission from the plan's list (write_code_snapshot), and on a
// node from the finished snapshot (copy_code_tree). Data moves with copy_file_data (common/:
// copy_file_range with a read/write fallback); the submission's copy is
// made durable with one syncfs at the end instead of an fsync per file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "dlx/common/directories.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/common/file_copy.hpp"
#include "dlx/common/unique_fd.hpp"
#include "dlx/store/code_info.hpp"

namespace dlx::store {

namespace fs = std::filesystem;

namespace {

UniqueFd open_or_throw(const fs::path& path, int flags, mode_t mode = 0) {
  UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC, mode));
  if (!fd) throw SystemError("open " + path.string(), errno);
  return fd;
}

// Copies `from` (a regular file, never through a link) to the new file `to`; read-only in the copy,
// with the owner's execute bit kept. Returns the bytes copied.
std::uint64_t copy_regular_file(const fs::path& from, const fs::path& to) {
  auto in = open_or_throw(from, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  struct stat info {};
  if (::fstat(in.get(), &info) != 0) throw SystemError("stat " + from.string(), errno);
  if (!S_ISREG(info.st_mode)) {
    throw SystemError::with_message(fmt::format("{} is no longer a regular file", from.string()), EINVAL);
  }
  const mode_t mode = (info.st_mode & S_IXUSR) ? 0550 : 0440;
  auto out = open_or_throw(to, O_WRONLY | O_CREAT | O_EXCL, mode);
  const auto copied = copy_file_data(in.get(), out.get(), from, to);
  if (::fchmod(out.get(), mode) != 0) throw SystemError("chmod " + to.string(), errno);  // whatever the umask
  return copied;
}

void copy_link(const fs::path& from, const fs::path& to) {
  std::error_code error;
  const auto target = fs::read_symlink(from, error);
  if (error) throw SystemError("readlink " + from.string(), error.value());
  if (::symlink(target.c_str(), to.c_str()) != 0) throw SystemError("symlink " + to.string(), errno);
}

// Creates the directories of `relative`'s parent below `base` once each.
class DirectoryMaker {
 public:
  explicit DirectoryMaker(fs::path base) : base_(std::move(base)) {}
  void make_parent(const fs::path& relative) {
    const auto parent = relative.parent_path();
    if (parent.empty() || made_.contains(parent.string())) return;
    create_directories_with_mode(base_ / parent, 0750);
    for (auto path = parent; !path.empty(); path = path.parent_path()) made_.insert(path.string());
  }

 private:
  fs::path base_;
  std::set<std::string> made_;
};

void sync_file_system(const fs::path& directory) {
  auto fd = open_or_throw(directory, O_RDONLY | O_DIRECTORY);
  if (::syncfs(fd.get()) != 0) throw SystemError("syncfs " + directory.string(), errno);
}

}  // namespace

void write_code_snapshot(const CodePlan& plan, const fs::path& experiment_dir) {
  const auto started = std::chrono::steady_clock::now();
  const fs::path final_dir = experiment_dir / kCodeDirName;
  const fs::path staging = temporary_path_for(final_dir);
  try {
    create_directories_with_mode(staging, 0750);
    DirectoryMaker directories(staging);
    std::uint64_t bytes = 0;
    for (const auto& entry : plan.files) {
      directories.make_parent(entry.path);
      if (entry.symlink) {
        copy_link(plan.root / entry.path, staging / entry.path);
      } else {
        bytes += copy_regular_file(plan.root / entry.path, staging / entry.path);
      }
    }
    sync_file_system(staging);  // every file and directory of the copy, in one call
    if (::rename(staging.c_str(), final_dir.c_str()) != 0) throw SystemError("rename to " + final_dir.string(), errno);
    fsync_directory(experiment_dir);
    if (plan.git && !plan.git->commit.empty()) {
      write_file_durably(experiment_dir / kCodeDiffFileName, plan.git->diff, 0440);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    write_file_durably(experiment_dir / kCodeInfoFileName, code_info_json(plan, bytes, seconds).dump(2) + "\n", 0440);
  } catch (const std::exception& e) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    throw CodeSnapshotError(fmt::format("code snapshot: cannot copy {} into {}: {}", plan.root.string(),
                                        final_dir.string(), e.what()));
  }
}

std::uint64_t copy_code_tree(const fs::path& from, const fs::path& to) {
  create_directories_with_mode(to, 0700);
  std::uint64_t bytes = 0;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(from, error); !error && it != fs::recursive_directory_iterator();
       it.increment(error)) {
    const auto relative = it->path().lexically_relative(from);
    const auto status = it->symlink_status(error);
    if (error) break;
    if (fs::is_symlink(status)) {
      copy_link(it->path(), to / relative);
    } else if (fs::is_directory(status)) {
      create_directories_with_mode(to / relative, 0700);
    } else if (fs::is_regular_file(status)) {
      bytes += copy_regular_file(it->path(), to / relative);
    }
  }
  if (error) throw SystemError("list " + from.string(), error.value());
  return bytes;
}

}  // namespace dlx::store
