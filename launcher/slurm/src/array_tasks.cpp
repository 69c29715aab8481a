// SPDX-License-Identifier: Apache-2.0
#include "dlx/slurm/array_tasks.hpp"

#include <algorithm>
#include <iterator>
#include <sstream>

namespace dlx::slurm {

bool task_has_ended(const ArrayTask& task) {
  static constexpr std::string_view kEnded[] = {"COMPLETED", "CANCELLED", "FAILED",        "TIMEOUT",
                                                "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL",
                                                "DEADLINE",  "REVOKED",   "LAUNCH_FAILED"};
  return std::find(std::begin(kEnded), std::end(kEnded), task.state) != std::end(kEnded);
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
