// SPDX-License-Identifier: Apache-2.0
#include "dlx/slurm/array_tasks.hpp"

#include <algorithm>
#include <iterator>
#include <sstream>

#include <fmt/format.h>

#include "dlx/common/bounded_command.hpp"

namespace dlx::slurm {

bool task_has_ended(const ArrayTask& task) {
  static constexpr std::string_view kEnded[] = {"COMPLETED", "CANCELLED", "FAILED",        "TIMEOUT",
                                                "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL",
                                                "DEADLINE",  "REVOKED",   "LAUNCH_FAILED"};
  return std::find(std::begin(kEnded), std::end(kEnded), task.state) != std::end(kEnded);
}

ArrayTaskListing ask_array_tasks(const std::string& array_job_id, std::string_view states,
                                 std::chrono::milliseconds timeout) {
  ArrayTaskListing listing;
  if (array_job_id.empty() || array_job_id.size() > 10 ||
      array_job_id.find_first_not_of("0123456789") != std::string::npos) {
    listing.why_unknown = fmt::format("{} is not a Slurm job id", array_job_id);
    return listing;
  }
  CommandLimits limits;
  limits.timeout = timeout;
  limits.max_output = std::size_t{64} << 20;
  try {
    const auto result = run_bounded({"squeue", "-h", "-r", "-t", std::string(states), "-j", array_job_id, "-O",
                                     "ArrayTaskID:16,State:24,Reason:64,RestartCnt:10"},
                                    limits, {{"LC_ALL", "C"}});
    if (result.exit_code != 0) {
      listing.forgotten = result.err.find("Invalid job id") != std::string::npos;
      if (!listing.forgotten) listing.why_unknown = fmt::format("squeue failed (exit {})", result.exit_code);
      return listing;
    }
    listing.tasks = parse_array_tasks(result.out, true);
  } catch (const CommandError& error) {
    listing.why_unknown = error.what();
  }
  return listing;
}

std::map<int, ArrayTask> parse_array_tasks(std::string_view squeue_output, bool with_state,
                                           std::string_view state_of_all) {
  std::map<int, ArrayTask> tasks;
  std::istringstream lines{std::string(squeue_output)};
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string id;
    ArrayTask task{std::string(state_of_all), "", 0};
    if (!(fields >> id)) continue;
    if (with_state && !(fields >> task.state)) continue;
    if (!(fields >> task.reason >> task.restarts)) continue;
    if (id.empty() || id.size() > 9 || id.find_first_not_of("0123456789") != std::string::npos) continue;
    tasks[std::stoi(id)] = task;
  }
  return tasks;
}

}  // namespace dlx::slurm
