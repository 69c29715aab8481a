// SPDX-License-Identifier: Apache-2.0
#include "dlx/checkpoint/discovery.hpp"

#include <system_error>

#include "dlx/common/durable_file.hpp"
#include "dlx/store/experiment_layout.hpp"

namespace dlx::checkpoint {
namespace {

// The step in a step-<N>.h5 name, when the name has that form.
std::optional<std::int64_t> step_in_name(const std::filesystem::path& path) {
  for (const auto& entry : store::list_checkpoints(path.parent_path()))
    if (entry.path.filename() == path.filename()) return entry.step;
  return std::nullopt;
}

// What discovery requires of the files it finds: dlx writes its checkpoints as regular files, so
// a symbolic link named step-<N>.h5 was put there by hand and is skipped, not followed.
Expectation in_directory(Expectation expect) {
  expect.follow_symlink = false;
  return expect;
}

std::vector<SkippedCheckpoint> temporary_files(const std::filesystem::path& checkpoint_dir) {
  std::vector<SkippedCheckpoint> out;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(checkpoint_dir, error))
    if (is_temporary_name(entry.path().filename().string()))
      out.push_back({entry.path(), "temporary file of an unfinished save"});
  return out;
}

}  // namespace

LoadedLatest load_latest_valid(const std::filesystem::path& checkpoint_dir,
                               const Expectation& expectation, const Deferral& defer) {
  const auto expect = in_directory(expectation);
  LoadedLatest out;
  out.skipped = temporary_files(checkpoint_dir);
  auto entries = store::list_checkpoints(checkpoint_dir);
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    try {
      auto loaded = load_checkpoint(it->path, expect, defer);
      if (loaded.metadata.step != it->step) {
        out.skipped.push_back({it->path, "holds step " + std::to_string(loaded.metadata.step) +
                                             ", not the step in its name"});
        continue;
      }
      out.path = it->path;
      out.checkpoint = std::move(loaded);
      return out;
    } catch (const DeviceLoadError&) {
      throw;  // the device failed, not the file: an older file would fail the same way
    } catch (const Error& e) {
      out.skipped.push_back({it->path, e.what()});
    }
  }
  return out;
}

LatestValid find_latest_valid(const std::filesystem::path& checkpoint_dir,
                              const Expectation& expectation, Verification verification) {
  const auto expect = in_directory(expectation);
  LatestValid out;
  out.skipped = temporary_files(checkpoint_dir);
  auto entries = store::list_checkpoints(checkpoint_dir);
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    try {
      auto summary = verification == Verification::full
                         ? verify_checkpoint(it->path, expect)
                         : read_checkpoint_summary(it->path, expect);
      if (summary.metadata.step != it->step) {
        out.skipped.push_back({it->path, "holds step " + std::to_string(summary.metadata.step) +
                                             ", not the step in its name"});
        continue;
      }
      out.path = it->path;
      out.summary = std::move(summary);
      return out;
    } catch (const Error& e) {
      out.skipped.push_back({it->path, e.what()});
    }
  }
  return out;
}

bool is_valid_checkpoint(const std::filesystem::path& path, const Expectation& expect) {
  try {
    auto summary = verify_checkpoint(path, expect);
    auto step = step_in_name(path);
    return !step || *step == summary.metadata.step;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace dlx::checkpoint
