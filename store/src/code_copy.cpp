// SPDX-License-Identifier: Apache-2.0
// Copying the code snapshot: at submission from the plan's list (write_code_snapshot), and on a
// node from the finished snapshot (copy_code_tree). Data moves with copy_file_data (common/:
// copy_file_range, in-kernel with reflinks where the file system has them, with a read/write
// fallback); the submission's copy is made durable with one syncfs at the end instead of an fsync
// per file. The submission's copy runs on a few threads: a small file's copy is mostly system
// calls (two opens, the copy, the mode, two closes) that wait on the file system, not on a core.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <map>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "dlx/common/directories.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/common/file_copy.hpp"
#include "dlx/common/parallel_for.hpp"
#include "dlx/common/unique_fd.hpp"
#include "dlx/common/usable_cpus.hpp"
#include "dlx/store/code_info.hpp"

namespace dlx::store {

namespace fs = std::filesystem;

namespace {

UniqueFd open_or_throw(const fs::path& path, int flags, mode_t mode = 0) {
  UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC, mode));
  if (!fd) throw SystemError("open " + path.string(), errno);
  return fd;
}

// Copies `from` (a regular file, never through a link) to the new file `to`, with copied_file_mode
// (read-only, never more open than the source). With `start_writeback`, the copy's pages start
// going to disk at once (sync_file_range, no waiting), so that the sync at the end finds less to
// write. Returns the bytes copied.
std::uint64_t copy_regular_file(const fs::path& from, const fs::path& to, bool start_writeback = false) {
  auto in = open_or_throw(from, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  struct stat info {};
  if (::fstat(in.get(), &info) != 0) throw SystemError("stat " + from.string(), errno);
  if (!S_ISREG(info.st_mode)) {
    throw SystemError::with_message(fmt::format("{} is no longer a regular file", from.string()), EINVAL);
  }
  const mode_t mode = copied_file_mode(info.st_mode);
  auto out = open_or_throw(to, O_WRONLY | O_CREAT | O_EXCL, mode);
  const auto copied = copy_file_data(in.get(), out.get(), from, to);
  if (::fchmod(out.get(), mode) != 0) throw SystemError("chmod " + to.string(), errno);  // whatever the umask
  if (start_writeback && copied > 0) ::sync_file_range(out.get(), 0, 0, SYNC_FILE_RANGE_WRITE);  // a hint only
  return copied;
}

// Creates `path` (which must not exist) holding `contents`, with exactly `mode`; not synced.
void write_new_file(const fs::path& path, std::string_view contents, mode_t mode) {
  auto out = open_or_throw(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
  while (!contents.empty()) {
    const ssize_t wrote = ::write(out.get(), contents.data(), contents.size());
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0) throw SystemError("write " + path.string(), errno);
    contents.remove_prefix(static_cast<std::size_t>(wrote));
  }
  if (::fchmod(out.get(), mode) != 0) throw SystemError("chmod " + path.string(), errno);  // whatever the umask
}

void copy_link(const fs::path& from, const fs::path& to) {
  std::error_code error;
  const auto target = fs::read_symlink(from, error);
  if (error) throw SystemError("readlink " + from.string(), error.value());
  if (::symlink(target.c_str(), to.c_str()) != 0) throw SystemError("symlink " + to.string(), errno);
}

// The mode of a directory's source (followed: the plan checked that no directory on a path is a
// link), for copied_directory_mode.
mode_t source_mode(const fs::path& directory) {
  struct stat info {};
  if (::stat(directory.c_str(), &info) != 0) throw SystemError("stat " + directory.string(), errno);
  return info.st_mode;
}

// Creates the directories of `relative`'s parent below `base` once each, each with its source's
// mode as copied_directory_mode has it, and keeps whether the group could read every file it is
// told of, as the source's modes say (for code.diff's mode).
class DirectoryMaker {
 public:
  DirectoryMaker(fs::path source, fs::path base) : source_(std::move(source)), base_(std::move(base)) {
    group_enters_[""] = (source_mode(source_) & S_IXGRP) != 0;
  }
  void make_parent(const fs::path& relative) {
    std::string path;
    for (const auto& part : relative.parent_path()) {
      const std::string parent = path;
      path = path.empty() ? part.string() : path + "/" + part.string();
      if (group_enters_.contains(path)) continue;
      const mode_t source = source_mode(source_ / path);
      const mode_t mode = copied_directory_mode(source);
      const auto made = base_ / path;
      if (::mkdir(made.c_str(), mode) != 0) throw SystemError("mkdir " + made.string(), errno);
      if (::chmod(made.c_str(), mode) != 0) throw SystemError("chmod " + made.string(), errno);  // whatever the umask
      group_enters_[path] = group_enters_[parent] && (source & S_IXGRP) != 0;
    }
  }
  // A file of the plan (its parent made): whether the group could read it at its source.
  void note_file(const CodeEntry& entry) {
    if (entry.symlink) return;
    const auto parent = fs::path(entry.path).parent_path().string();
    group_reads_all_ = group_reads_all_ && group_enters_[parent] && (entry.mode & S_IRGRP) != 0;
  }
  bool group_reads_all() const { return group_reads_all_; }

 private:
  fs::path source_;
  fs::path base_;
  std::map<std::string, bool> group_enters_;  // relative directory -> the group could enter it and all above
  bool group_reads_all_ = true;
};

// Threads for copying the entries: one per 128 files, at most kMaxCopyThreads and the CPUs this
// process may run on (a Slurm step bound to two CPUs copies on two threads).
constexpr std::size_t kFilesPerThread = 128;
constexpr std::size_t kMaxCopyThreads = 4;

// Copies every entry of `files` (their directories made already) from `root` to `staging`, the
// entries shared out through one counter; returns the bytes copied. The first failure stops every
// thread and is rethrown.
std::uint64_t copy_entries(const std::vector<CodeEntry>& files, const fs::path& root, const fs::path& staging) {
  const std::size_t cores = usable_cpus();
  const std::size_t threads =
      std::clamp<std::size_t>(files.size() / kFilesPerThread, 1, std::min(kMaxCopyThreads, cores));
  std::atomic<std::uint64_t> bytes{0};
  parallel_for(files.size(), threads, [&](std::size_t index) {
    const auto& entry = files[index];
    if (entry.symlink) {
      copy_link(root / entry.path, staging / entry.path);
    } else {
      bytes += copy_regular_file(root / entry.path, staging / entry.path, true);
    }
  });
  return bytes;
}

void sync_file_system(const fs::path& directory) {
  auto fd = open_or_throw(directory, O_RDONLY | O_DIRECTORY);
  if (::syncfs(fd.get()) != 0) throw SystemError("syncfs " + directory.string(), errno);
}

}  // namespace

mode_t copied_file_mode(mode_t source) { return (source & 0550) | 0400; }

mode_t copied_directory_mode(mode_t source) { return (source & 0750) | 0700; }

void write_code_snapshot(CodePlan& plan, const fs::path& experiment_dir) {
  const auto started = std::chrono::steady_clock::now();
  const fs::path final_dir = experiment_dir / kCodeDirName;
  const fs::path staging = temporary_path_for(final_dir);
  std::uint64_t bytes = 0;
  try {
    create_directories_with_mode(staging, copied_directory_mode(source_mode(plan.root)));
    DirectoryMaker directories(plan.root, staging);
    for (const auto& entry : plan.files) {
      directories.make_parent(entry.path);
      directories.note_file(entry);
    }
    bytes = copy_entries(plan.files, plan.root, staging);
    finish_git_state(plan);  // read meanwhile; its own message when a git command failed
    // code.diff at its final name, made durable by the sync below with the copy: until code.json
    // exists nothing reads it. It holds the changed lines of the tracked files: the group may read
    // it only when it could read every file of the snapshot at its source.
    if (plan.git && !plan.git->commit.empty()) {
      write_new_file(experiment_dir / kCodeDiffFileName, plan.git->diff, directories.group_reads_all() ? 0440 : 0400);
    }
    sync_file_system(staging);  // every file and directory of the copy, and code.diff, in one call
    if (::rename(staging.c_str(), final_dir.c_str()) != 0) throw SystemError("rename to " + final_dir.string(), errno);
    fsync_directory(experiment_dir);
    // Written last, once everything above is durable: the completion marker.
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    write_file_durably(experiment_dir / kCodeInfoFileName, code_info_json(plan, bytes, seconds).dump(2) + "\n", 0440);
  } catch (const CodeSnapshotError&) {  // git's
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    throw;
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
