// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/restored_outputs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "dlx/common/byte_size.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/common/error.hpp"
#include "dlx/common/file_copy.hpp"
#include "dlx/common/unique_fd.hpp"

namespace dlx::launch {

namespace fs = std::filesystem;

namespace {

// The kept files, in path order: regular files only, no temporaries of an interrupted keep.
std::vector<TrainerFile> kept_files(const fs::path& outputs, std::vector<LeftFile>& left) {
  std::vector<TrainerFile> files;
  std::error_code error;
  auto it = fs::recursive_directory_iterator(outputs, fs::directory_options::none, error);
  for (; !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    std::error_code status_error;
    const auto status = it->symlink_status(status_error);
    if (status_error || !fs::is_regular_file(status) || is_temporary_name(it->path().filename().string())) continue;
    std::error_code size_error;
    const auto bytes = it->file_size(size_error);
    if (!size_error) files.push_back({it->path().lexically_relative(outputs), bytes});
  }
  if (error && error != std::errc::no_such_file_or_directory) {
    left.push_back({{".", 0}, "cannot list all of " + outputs.string() + ": " + error.message()});
  }
  std::sort(files.begin(), files.end(), [](const TrainerFile& a, const TrainerFile& b) { return a.relative < b.relative; });
  return files;
}

// mkdir -p of `relative` below `top`: each part a real directory (the snapshot's, or made 0750),
// never a link.
void make_real_directories(const fs::path& top, const fs::path& relative) {
  fs::path made = top;
  for (const auto& part : relative) {
    made /= part;
    struct stat status {};
    if (::lstat(made.c_str(), &status) == 0) {
      if (!S_ISDIR(status.st_mode)) {
        throw Error(fmt::format("{} is {} in the code snapshot", made.lexically_relative(top).string(),
                                S_ISLNK(status.st_mode) ? "a link" : "a file"));
      }
    } else if (::mkdir(made.c_str(), 0750) != 0) {
      throw SystemError("mkdir " + made.string(), errno);
    }
  }
}

void restore_one(const fs::path& outputs, const fs::path& copy, const fs::path& relative) {
  const fs::path from = outputs / relative;
  struct stat source {};
  const UniqueFd in = open_regular_file(from, source);
  make_real_directories(copy, relative.parent_path());
  const fs::path to = copy / relative;
  struct stat existing {};
  if (::lstat(to.c_str(), &existing) == 0) {
    if (!S_ISREG(existing.st_mode)) throw Error(relative.string() + " is a directory or a link in the code snapshot");
    if (::unlink(to.c_str()) != 0) throw SystemError("unlink " + to.string(), errno);  // the snapshot's, read-only
  }
  UniqueFd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!out) throw SystemError("create " + to.string(), errno);
  try {
    copy_file_data(in.get(), out.get(), from, to);
    if (::fchmod(out.get(), (source.st_mode & 0750) | 0600) != 0) throw SystemError("chmod " + to.string(), errno);
    const struct timespec times[2] = {source.st_atim, source.st_mtim};
    if (::futimens(out.get(), times) != 0) throw SystemError("set the time of " + to.string(), errno);
  } catch (...) {
    ::unlink(to.c_str());
    throw;
  }
}

}  // namespace

RestoredOutputs restore_kept_outputs(const fs::path& outputs, const fs::path& copy, std::uint64_t max_bytes,
                                     std::size_t max_files) {
  RestoredOutputs result;
  if (max_bytes == 0) return result;
  const auto files = kept_files(outputs, result.left);
  const std::string over = fmt::format("over code.keep_outputs ({}), which bounds what is restored too",
                                       format_byte_size(max_bytes));
  for (const auto& file : files) {
    if (file.bytes > max_bytes - result.bytes) {
      result.left.push_back({file, over});
    } else if (result.restored.size() == max_files) {
      result.left.push_back({file, fmt::format("over {} files", max_files)});
    } else {
      try {
        restore_one(outputs, copy, file.relative);
        result.restored.push_back(file);
        result.bytes += file.bytes;
      } catch (const std::exception& error) {
        result.left.push_back({file, error.what()});
      }
    }
  }
  return result;
}

bool restored_unchanged(const fs::path& outputs_file, std::uint64_t size, fs::file_time_type written) {
  std::error_code error;
  const auto status = fs::symlink_status(outputs_file, error);
  if (error || !fs::is_regular_file(status)) return false;
  const auto kept_size = fs::file_size(outputs_file, error);
  if (error || kept_size != size) return false;
  const auto kept_written = fs::last_write_time(outputs_file, error);
  return !error && kept_written == written;
}

void print_restored_outputs(std::FILE* log, const RestoredOutputs& restored, const fs::path& outputs) {
  if (!log) return;
  if (!restored.restored.empty()) {
    fmt::print(log, "dlx-launch: restored {} ({}) that earlier attempts kept in {}/ into the working directory: {}\n",
               file_count(restored.restored.size()), format_byte_size(restored.bytes), outputs.string(),
               named_files(restored.restored));
  }
  for (const auto& left : restored.left) {
    fmt::print(log, "dlx-launch: not restored into the working directory: {} ({}): {}\n", left.file.relative.string(),
               format_byte_size(left.file.bytes), left.why);
  }
}

}  // namespace dlx::launch
