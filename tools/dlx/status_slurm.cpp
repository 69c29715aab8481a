// SPDX-License-Identifier: Apache-2.0
#include "status_slurm.hpp"

#include <chrono>
#include <utility>

#include <fmt/format.h>

#include "dlx/slurm/array_tasks.hpp"
#include "logs_job.hpp"
#include "logs_slurm.hpp"

namespace dlx::cli {

SlurmView ask_slurm(const std::string& job_id) {
  SlurmView view;
  view.job_id = job_id.substr(0, job_id.find('_'));
  if (!is_job_id(view.job_id)) {
    view.why_unknown = fmt::format("{} is not a Slurm job id", job_id);
    return view;
  }
  auto listing = slurm::ask_array_tasks(view.job_id, "all", std::chrono::seconds(20));
  view.why_unknown = std::move(listing.why_unknown);
  if (!view.why_unknown.empty()) return view;
  view.tasks = std::move(listing.tasks);
  // Forgotten (MinJobAge after it ended), or an empty answer for a job squeue accepted: every task
  // ended and was forgotten.
  view.gone = listing.forgotten || view.tasks.empty();
  if (view.gone) return view;
  // A launch that failed: where Slurm tried to write the task's output (the usual cause).
  for (const auto& [id, task] : view.tasks) {
    if (!launch_failed(task)) continue;
    std::string why_not;
    if (const auto files = slurm_output_files(fmt::format("{}_{}", view.job_id, id), why_not)) {
      view.output = files->stdout_path.string();
    }
    break;
  }
  return view;
}

std::optional<std::string> experiment_job(const std::filesystem::path& directory, const std::string& given) {
  if (is_job_id(given)) return given.substr(0, given.find('_'));
  return array_job_of(directory);
}

}  // namespace dlx::cli
