// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/trial_outputs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include <fmt/format.h>

#include "dlx/common/byte_size.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/common/error.hpp"
#include "dlx/common/file_copy.hpp"
#include "dlx/common/unique_fd.hpp"
#include "dlx/launch/restored_outputs.hpp"

namespace dlx::launch {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kNamesShown = 5;  // files named in one log line; the rest are counted

bool unchanged_copy(const fs::path& snapshot_file, const fs::directory_entry& entry, fs::file_time_type copied_at) {
  struct stat in_snapshot {};
  if (::lstat(snapshot_file.c_str(), &in_snapshot) != 0 || !S_ISREG(in_snapshot.st_mode)) return false;
  std::error_code error;
  const auto written = entry.last_write_time(error);
  return !error && written <= copied_at;
}

bool snapshot_has_link(const fs::path& snapshot_file) {
  struct stat in_snapshot {};
  return ::lstat(snapshot_file.c_str(), &in_snapshot) == 0 && S_ISLNK(in_snapshot.st_mode);
}

// mkdir -p of `relative` below `top` (which exists), each new directory 0750.
void make_directories(const fs::path& top, const fs::path& relative) {
  fs::path made = top;
  for (const auto& part : relative) {
    made /= part;
    if (::mkdir(made.c_str(), 0750) != 0 && errno != EEXIST) throw SystemError("mkdir " + made.string(), errno);
  }
}

// Temporary files an attempt killed while copying left (durable_file.hpp's ".tmp." names).
void remove_stale_temporaries(const fs::path& outputs) {
  std::error_code error;
  std::vector<fs::path> stale;
  for (auto it = fs::recursive_directory_iterator(outputs, error); !error && it != fs::recursive_directory_iterator();
       it.increment(error)) {
    if (it->is_regular_file(error) && is_temporary_name(it->path().filename().string())) stale.push_back(it->path());
  }
  for (const auto& path : stale) fs::remove(path, error);
}

void copy_one(const fs::path& from, const fs::path& outputs, const fs::path& relative) {
  struct stat source {};
  const UniqueFd in = open_regular_file(from, source);
  make_directories(outputs, relative.parent_path());
  const fs::path to = outputs / relative;
  const fs::path temporary = temporary_path_for(to);
  UniqueFd out(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!out) throw SystemError("create " + temporary.string(), errno);
  try {
    copy_file_data(in.get(), out.get(), from, to);
    if (::fchmod(out.get(), (source.st_mode & 0750) | 0600) != 0) throw SystemError("chmod " + temporary.string(), errno);
    out.reset();
    publish_file(temporary, to);
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
}

}  // namespace

std::string named_files(const std::vector<TrainerFile>& files) {
  std::string text;
  for (std::size_t i = 0; i < files.size() && i < kNamesShown; ++i) {
    text += (i ? ", " : "") + files[i].relative.string();
  }
  if (files.size() > kNamesShown) text += fmt::format(" and {} more", files.size() - kNamesShown);
  return text;
}

std::string file_count(std::size_t count) { return fmt::format("{} file{}", count, count == 1 ? "" : "s"); }

UniqueFd open_regular_file(const fs::path& path, struct stat& status) {
  UniqueFd file(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!file) throw SystemError("open " + path.string(), errno);
  if (::fstat(file.get(), &status) != 0) throw SystemError("stat " + path.string(), errno);
  if (!S_ISREG(status.st_mode)) throw Error(path.string() + " is no longer a regular file");
  return file;
}

std::uint64_t TrainerFiles::bytes() const {
  std::uint64_t total = 0;
  for (const auto& file : files) total += file.bytes;
  return total;
}

TrainerFiles find_trainer_files(const fs::path& copy, const fs::path& snapshot, fs::file_time_type copied_at,
                                const fs::path& outputs) {
  TrainerFiles found;
  std::error_code error;
  auto it = fs::recursive_directory_iterator(copy, fs::directory_options::none, error);
  for (; !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    const auto& entry = *it;
    const fs::path relative = entry.path().lexically_relative(copy);
    std::error_code status_error;
    const auto status = entry.symlink_status(status_error);
    if (status_error) {
      found.special.push_back({{relative, 0}, status_error.message()});
    } else if (fs::is_directory(status)) {
      if (relative.filename() == "__pycache__") it.disable_recursion_pending();
    } else if (fs::is_symlink(status)) {
      if (!snapshot_has_link(snapshot / relative)) found.special.push_back({{relative, 0}, "a symbolic link"});
    } else if (!fs::is_regular_file(status)) {
      found.special.push_back({{relative, 0}, "not a regular file"});
    } else if (!unchanged_copy(snapshot / relative, entry, copied_at)) {
      std::error_code size_error, time_error;
      const auto bytes = entry.file_size(size_error);
      const auto written = entry.last_write_time(time_error);
      const bool restored = !outputs.empty() && !size_error && !time_error &&
                            restored_unchanged(outputs / relative, bytes, written);
      if (!restored) found.files.push_back({relative, size_error ? 0 : bytes});
    }
  }
  if (error) {
    // An unreadable directory (the trainer's chmod 0) ends the listing: what was found is kept.
    found.special.push_back({{".", 0}, "cannot list all of the working directory: " + error.message()});
  }
  std::sort(found.files.begin(), found.files.end(),
            [](const TrainerFile& a, const TrainerFile& b) { return a.relative < b.relative; });
  return found;
}

KeptOutputs keep_trainer_files(const fs::path& copy, const TrainerFiles& found, const fs::path& outputs,
                               std::uint64_t max_bytes, const std::function<bool()>& out_of_time,
                               std::size_t max_files) {
  KeptOutputs result;
  result.left = found.special;
  if (found.files.empty()) return result;
  try {
    make_directories(outputs.parent_path(), outputs.filename());
  } catch (const std::exception& error) {
    for (const auto& file : found.files) result.left.push_back({file, error.what()});
    return result;
  }
  remove_stale_temporaries(outputs);
  const std::string over = fmt::format("over code.keep_outputs ({} an attempt): raise it, or have the trainer write "
                                       "files this big to shared storage itself",
                                       format_byte_size(max_bytes));
  for (const auto& file : found.files) {
    if (out_of_time()) {
      result.left.push_back({file, "not copied: the step was being ended (a notice) and time ran out"});
    } else if (file.bytes > max_bytes - result.kept_bytes) {
      result.left.push_back({file, over});
    } else if (result.kept.size() == max_files) {
      result.left.push_back({file, fmt::format("over {} files an attempt: have the trainer write this many files "
                                               "to shared storage itself, or into fewer files", max_files)});
    } else {
      try {
        copy_one(copy / file.relative, outputs, file.relative);
        result.kept.push_back(file);
        result.kept_bytes += file.bytes;
      } catch (const std::exception& error) {
        result.left.push_back({file, error.what()});
      }
    }
  }
  return result;
}

void print_kept_outputs(std::FILE* log, const KeptOutputs& outputs, const fs::path& outputs_dir) {
  if (!log) return;
  if (!outputs.kept.empty()) {
    fmt::print(log, "dlx-launch: kept {} ({}) the trainer wrote in its working directory, in {}/: {}\n",
               file_count(outputs.kept.size()), format_byte_size(outputs.kept_bytes), outputs_dir.string(),
               named_files(outputs.kept));
  }
  for (std::size_t i = 0; i < outputs.left.size() && i < kNamesShown; ++i) {
    const auto& left = outputs.left[i];
    fmt::print(log, "dlx-launch: not kept from the working directory: {}{}: {}\n", left.file.relative.string(),
               left.file.bytes ? fmt::format(" ({})", format_byte_size(left.file.bytes)) : "", left.why);
  }
  if (outputs.left.size() > kNamesShown) {
    fmt::print(log, "dlx-launch: and {} more not kept\n", outputs.left.size() - kNamesShown);
  }
}

void print_unkept_node_files(std::FILE* log, const TrainerFiles& found, const std::string& node,
                             const fs::path& outputs_dir) {
  if (!log || found.files.empty()) return;
  fmt::print(log,
             "dlx-launch: {}: the trainer wrote {} ({}) in its working directory on this node, which go with its "
             "node-local copy: only the first node's are kept, in {}/ (write outputs on rank 0): {}\n",
             node, file_count(found.files.size()), format_byte_size(found.bytes()), outputs_dir.string(),
             named_files(found.files));
}

}  // namespace dlx::launch
