// SPDX-License-Identifier: Apache-2.0
#include "status_slurm.hpp"

#include <chrono>
#include <sstream>

#include <fmt/format.h>

#include "dlx/common/bounded_command.hpp"
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
  CommandLimits limits;
  limits.timeout = std::chrono::seconds(20);
  limits.max_output = std::size_t{64} << 20;
  try {
    const auto result = run_bounded({"squeue", "-h", "-r", "-t", "all", "-j", view.job_id, "-O",
                                     "ArrayTaskID:16,State:24,Reason:64,RestartCnt:10"},
                                    limits, {{"LC_ALL", "C"}});
    if (result.exit_code != 0) {
      // squeue says so for a job slurmctld has forgotten (MinJobAge after it ended).
      if (result.err.find("Invalid job id") != std::string::npos) {
        view.gone = true;
      } else {
        view.why_unknown = fmt::format("squeue failed (exit {})", result.exit_code);
      }
      return view;
    }
    view.tasks = slurm::parse_array_tasks(result.out, true);
    // An empty answer for a job squeue accepted: every task ended and was forgotten.
    if (view.tasks.empty()) view.gone = true;
  } catch (const CommandError& e) {
    view.why_unknown = e.what();
    return view;
  }
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
