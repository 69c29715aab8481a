// SPDX-License-Identifier: Apache-2.0
#include "dlx/store/experiment_layout.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <system_error>

#include <fmt/format.h>

#include "dlx/common/durable_file.hpp"
#include "dlx/common/error.hpp"
#include "dlx/common/unique_fd.hpp"

namespace dlx::store {

namespace {

// "step-120.h5" -> 120; nullopt for anything else.
std::optional<long long> step_of(const std::string& name) {
  constexpr std::string_view prefix = "step-", suffix = ".h5";
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) || !name.ends_with(suffix)) {
    return std::nullopt;
  }
  long long step = 0;
  const char* begin = name.data() + prefix.size();
  const char* end = name.data() + name.size() - suffix.size();
  auto [stop, error] = std::from_chars(begin, end, step);
  if (error != std::errc{} || stop != end) return std::nullopt;
  return step;
}

}  // namespace

fs::path trial_dir(const fs::path& experiment_dir, int trial_id) {
  return experiment_dir / "trials" / std::to_string(trial_id);
}

fs::path trial_record_path(const fs::path& experiment_dir, int trial_id) {
  return trial_dir(experiment_dir, trial_id) / "trial.h5";
}

fs::path checkpoint_dir(const fs::path& experiment_dir, int trial_id) {
  return trial_dir(experiment_dir, trial_id) / "checkpoints";
}

fs::path job_link_path(const fs::path& user_root, const std::string& job_id) {
  return user_root / ".jobs" / job_id;
}

std::vector<CheckpointEntry> list_checkpoints(const fs::path& checkpoint_dir) {
  std::vector<CheckpointEntry> entries;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(checkpoint_dir, error)) {
    auto name = entry.path().filename().string();
    if (is_temporary_name(name)) continue;
    if (auto step = step_of(name)) entries.push_back({*step, entry.path()});
  }
  std::sort(entries.begin(), entries.end(),
            [](const CheckpointEntry& a, const CheckpointEntry& b) { return a.step < b.step; });
  return entries;
}

std::optional<fs::path> latest_checkpoint(const fs::path& checkpoint_dir,
                                          const CheckpointValidator& valid) {
  auto entries = list_checkpoints(checkpoint_dir);
  for (auto it = entries.rbegin(); it != entries.rend(); ++it)
    if (!valid || valid(it->path)) return it->path;
  return std::nullopt;
}

std::vector<int> trial_ids_on_disk(const fs::path& experiment_dir) {
  std::vector<int> ids;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(experiment_dir / "trials", error)) {
    auto name = entry.path().filename().string();
    // A trial directory is a real directory: a link named like one may lead out of the
    // experiment (e.g. to another user's trial, for `dlx ckpt gc` run as root to delete).
    std::error_code type_error;
    if (entry.symlink_status(type_error).type() != fs::file_type::directory) continue;
    int id = 0;
    auto [stop, parse_error] = std::from_chars(name.data(), name.data() + name.size(), id);
    if (parse_error == std::errc{} && stop == name.data() + name.size()) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

bool remove_file_below(const fs::path& experiment_dir, const fs::path& path) {
  const fs::path relative = path.lexically_normal().lexically_relative(experiment_dir.lexically_normal());
  if (relative.empty() || relative.begin()->string() == ".." || relative.is_absolute()) {
    throw Error(fmt::format("{} is not inside the experiment directory {}: not removed", path.string(),
                            experiment_dir.string()));
  }
  UniqueFd directory(::open(experiment_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!directory) throw SystemError(fmt::format("cannot open {}", experiment_dir.string()), errno);
  fs::path walked = experiment_dir;
  const std::string file = relative.filename().string();
  for (const auto& part : relative.parent_path()) {
    walked /= part;
    UniqueFd next(::openat(directory.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) {
      const int error = errno;
      if (error == ELOOP || error == ENOTDIR) {
        throw Error(fmt::format("{} is not a directory of the experiment (a symbolic link?): {} not removed",
                                walked.string(), path.string()));
      }
      if (error == ENOENT) return false;
      throw SystemError(fmt::format("cannot open {}", walked.string()), error);
    }
    directory = std::move(next);
  }
  // unlinkat never follows a link in the last component: a link is removed, not its target.
  if (::unlinkat(directory.get(), file.c_str(), 0) != 0) {
    if (errno == ENOENT) return false;
    throw SystemError(fmt::format("cannot delete {}", path.string()), errno);
  }
  if (::fsync(directory.get()) != 0) throw SystemError(fmt::format("cannot fsync {}", walked.string()), errno);
  return true;
}

}  // namespace dlx::store
