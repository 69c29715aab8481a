// SPDX-License-Identifier: Apache-2.0
#include "dlx/checkpoint/retention.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "dlx/common/durable_file.hpp"
#include "dlx/store/experiment_layout.hpp"

namespace dlx::checkpoint {
namespace {

namespace fs = std::filesystem;

void keep(CheckpointStatus& file, const char* rule) {
  if (std::find(file.kept_by.begin(), file.kept_by.end(), rule) == file.kept_by.end())
    file.kept_by.emplace_back(rule);
}

// The valid files with a metric value, best first (ties: newer first).
std::vector<CheckpointStatus*> ranked(std::vector<CheckpointStatus*> files, bool smaller_is_better) {
  std::erase_if(files, [](const CheckpointStatus* f) { return !f->valid || !f->metric_value; });
  std::stable_sort(files.begin(), files.end(), [&](const CheckpointStatus* a, const CheckpointStatus* b) {
    if (*a->metric_value != *b->metric_value)
      return smaller_is_better ? *a->metric_value < *b->metric_value
                               : *a->metric_value > *b->metric_value;
    return a->step > b->step;
  });
  return files;
}

ReferencedSteps without_reasons(const std::set<std::int64_t>& steps) {
  ReferencedSteps out;
  for (auto step : steps) out.emplace(step, "");
  return out;
}

fs::path experiment_of(const fs::path& checkpoint_dir) {
  // <experiment>/trials/<id>/checkpoints
  return checkpoint_dir.parent_path().parent_path().parent_path();
}

std::set<CheckpointKey> experiment_best(std::map<std::int64_t, std::vector<CheckpointStatus>>& trials,
                                   const RetentionPolicy& policy) {
  std::set<CheckpointKey> best;
  if (policy.keep_experiment_best <= 0 || policy.metric.empty()) return best;
  std::vector<CheckpointStatus*> all;
  for (auto& [id, files] : trials)
    for (auto& f : files) all.push_back(&f);
  auto order = ranked(all, policy.smaller_is_better);
  for (std::size_t i = 0; i < order.size() && i < static_cast<std::size_t>(policy.keep_experiment_best); ++i)
    best.insert({order[i]->trial_id, order[i]->step});
  return best;
}

}  // namespace

std::vector<CheckpointStatus> scan_checkpoints(const fs::path& checkpoint_dir,
                                               const Expectation& expect,
                                               const std::string& metric) {
  std::vector<CheckpointStatus> out;
  for (const auto& entry : store::list_checkpoints(checkpoint_dir)) {
    CheckpointStatus status;
    status.path = entry.path;
    status.step = entry.step;
    status.trial_id = expect.trial_id.value_or(0);
    std::error_code error;
    const auto type = fs::symlink_status(entry.path, error).type();
    if (error) continue;  // deleted meanwhile
    // The size of the entry itself (a link's own, a FIFO's 0): never what a link points at.
    status.file_bytes = type == fs::file_type::regular ? fs::file_size(entry.path, error) : 0;
    if (error) continue;
    try {
      // dlx writes checkpoints as regular files: a link named like one is judged invalid, never
      // followed (it may lead out of the experiment, e.g. into another user's).
      Expectation own_files_only = expect;
      own_files_only.follow_symlink = false;
      auto summary = read_checkpoint_summary(entry.path, own_files_only);
      status.trial_id = summary.metadata.trial_id;
      if (summary.metadata.step != entry.step) {
        status.problem = fmt::format("holds step {}, not the step in its name",
                                     summary.metadata.step);
      } else {
        status.valid = true;
        if (!metric.empty() && summary.metadata.metric_name == metric)
          status.metric_value = summary.metadata.metric_value;
      }
    } catch (const Error& e) {
      status.problem = e.what();
    }
    out.push_back(std::move(status));
  }
  return out;
}

void decide_retention(std::vector<CheckpointStatus>& files, const RetentionPolicy& policy,
                      const std::set<std::int64_t>& referenced_steps,
                      const std::set<CheckpointKey>& experiment_best_keys) {
  decide_retention(files, policy, without_reasons(referenced_steps), experiment_best_keys);
}

void decide_retention(std::vector<CheckpointStatus>& files, const RetentionPolicy& policy,
                      const ReferencedSteps& referenced_steps,
                      const std::set<CheckpointKey>& experiment_best_keys) {
  std::vector<CheckpointStatus*> valid_newest_first;
  for (auto it = files.rbegin(); it != files.rend(); ++it)
    if (it->valid) valid_newest_first.push_back(&*it);
  if (!valid_newest_first.empty()) keep(*valid_newest_first.front(), "newest-valid");
  for (std::size_t i = 0;
       i < valid_newest_first.size() && i < static_cast<std::size_t>(std::max(0, policy.keep_latest)); ++i)
    keep(*valid_newest_first[i], "latest");
  if (!policy.metric.empty()) {
    auto order = ranked(valid_newest_first, policy.smaller_is_better);
    for (std::size_t i = 0; i < order.size() && i < static_cast<std::size_t>(std::max(0, policy.keep_best)); ++i)
      keep(*order[i], "best");
  }
  for (auto& f : files) {
    if (experiment_best_keys.contains({f.trial_id, f.step})) keep(f, "experiment-best");
    if (auto it = referenced_steps.find(f.step); it != referenced_steps.end()) {
      keep(f, "referenced");
      f.referenced_by = it->second;
    }
  }
}

std::map<std::int64_t, std::vector<CheckpointStatus>> plan_experiment_retention(
    const fs::path& experiment_dir, const RetentionPolicy& policy,
    const std::map<std::int64_t, std::set<std::int64_t>>& referenced) {
  std::map<std::int64_t, ReferencedSteps> with_reasons;
  for (const auto& [id, steps] : referenced) with_reasons[id] = without_reasons(steps);
  return plan_experiment_retention(experiment_dir, policy, with_reasons);
}

std::map<std::int64_t, std::vector<CheckpointStatus>> plan_experiment_retention(
    const fs::path& experiment_dir, const RetentionPolicy& policy,
    const std::map<std::int64_t, ReferencedSteps>& referenced) {
  std::map<std::int64_t, std::vector<CheckpointStatus>> trials;
  for (int id : store::trial_ids_on_disk(experiment_dir))
    trials[id] = scan_checkpoints(store::checkpoint_dir(experiment_dir, id), Expectation{std::nullopt, id},
                                  policy.metric);
  auto best = experiment_best(trials, policy);
  static const ReferencedSteps none;
  for (auto& [id, files] : trials) {
    auto it = referenced.find(id);
    decide_retention(files, policy, it == referenced.end() ? none : it->second, best);
  }
  return trials;
}

std::vector<fs::path> delete_unkept(const std::vector<CheckpointStatus>& files) {
  std::vector<fs::path> deleted;
  std::set<fs::path> directories;
  for (const auto& f : files) {
    if (!f.valid || !f.kept_by.empty()) continue;
    if (::unlink(f.path.c_str()) != 0 && errno != ENOENT) {
      int error = errno;
      throw CheckpointError(fmt::format("cannot delete checkpoint {} (retention): {}",
                                        f.path.string(), std::strerror(error)),
                            error);
    }
    deleted.push_back(f.path);
    directories.insert(f.path.parent_path());
  }
  try {
    for (const auto& directory : directories) fsync_directory(directory);
  } catch (const SystemError& e) {
    throw CheckpointError(e.what(), e.error_number());
  }
  return deleted;
}

std::vector<fs::path> apply_retention(const fs::path& checkpoint_dir, const RetentionPolicy& policy,
                                      const Expectation& expect,
                                      const std::set<std::int64_t>& referenced_steps) {
  return apply_retention(checkpoint_dir, policy, expect, without_reasons(referenced_steps));
}

std::vector<fs::path> apply_retention(const fs::path& checkpoint_dir, const RetentionPolicy& policy,
                                      const Expectation& expect,
                                      const ReferencedSteps& referenced_steps) {
  auto files = scan_checkpoints(checkpoint_dir, expect, policy.metric);
  std::set<CheckpointKey> best;
  if (policy.keep_experiment_best > 0 && !policy.metric.empty()) {
    std::map<std::int64_t, std::vector<CheckpointStatus>> trials;
    auto experiment = experiment_of(checkpoint_dir);
    for (int id : store::trial_ids_on_disk(experiment))
      trials[id] = scan_checkpoints(store::checkpoint_dir(experiment, id), Expectation{std::nullopt, id},
                                    policy.metric);
    best = experiment_best(trials, policy);
  }
  decide_retention(files, policy, referenced_steps, best);
  return delete_unkept(files);
}

}  // namespace dlx::checkpoint
