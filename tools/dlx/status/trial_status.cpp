// SPDX-License-Identifier: Apache-2.0
#include "trial_status.hpp"

#include <fmt/format.h>

namespace dlx::cli {

namespace {

bool pending(const SlurmTask& task) { return task.state == "PENDING" || task.state == "REQUEUED"; }

std::string slurm_words(const SlurmTask& task) {
  if (task.reason.empty() || task.reason == "None") return fmt::format("Slurm: {}", task.state);
  return fmt::format("Slurm: {} ({})", task.state, task.reason);
}

// The trial is not running and nothing in Slurm will run it.
bool abandoned(const SlurmTask* task, const SlurmView* slurm) {
  if (slurm == nullptr || !slurm->why_unknown.empty()) return false;
  if (slurm->gone) return true;
  return task != nullptr && slurm::task_has_ended(*task);
}

std::string ended_words(const SlurmTask* task, const SlurmView& slurm) {
  if (slurm.gone) return fmt::format("Slurm no longer knows job {}", slurm.job_id);
  return fmt::format("its array task in job {} ended ({})", slurm.job_id, task ? task->state : "?");
}

// A trial without a record whose task has ended. A task that ran its job script to the end
// (COMPLETED, FAILED) without dlx-launch leaving a log of the trial most often ran the trainer
// itself (`python3 train.py`, so `import dlx` fails, or `dlx-launch` without srun); the one thing
// to look at is that task's output.
std::string not_started_words(std::optional<bool> launched, const SlurmTask* task, const SlurmView& slurm) {
  auto words = fmt::format("not started: {}", ended_words(task, slurm));
  const bool ran = task && (task->state == "COMPLETED" || task->state == "FAILED");
  if (!ran || !launched) return words;
  // No trial id in the words: trials that say the same share one line under the table.
  if (*launched) {
    return words + fmt::format(" before its trainer opened the trial (`dlx logs {} TRIAL` shows why)", slurm.job_id);
  }
  return words + fmt::format(", and dlx-launch kept no log of the trial: does the job script run the trainer "
                             "through `srun dlx-launch` (examples/job.sh), not by itself? `dlx logs {} TRIAL` "
                             "shows what the task printed",
                             slurm.job_id);
}

}  // namespace

bool launch_failed(const SlurmTask& task) {
  return task.reason.find("launch_failed") != std::string::npos || task.reason == "JobLaunchFailure" ||
         task.state == "BOOT_FAIL" || task.state == "LAUNCH_FAILED";
}

ShownState trial_status(const RecordFacts& record, const SlurmTask* task, const SlurmView* slurm, int max_restarts,
                        std::optional<bool> launched) {
  const std::string restart = fmt::format("{} of {}", record.failures, max_restarts);
  if (record.state.empty()) {
    if (task && launch_failed(*task)) {
      std::string detail = fmt::format("launch failed: {}: Slurm could not start the batch script", slurm_words(*task));
      if (slurm && !slurm->output.empty()) {
        detail += fmt::format(" (can it write its output file {}?)", slurm->output);
      }
      return {"launch failed", "", detail};
    }
    if (task && (task->state == "RUNNING" || task->state == "CONFIGURING")) return {"starting", "", ""};
    if (abandoned(task, slurm)) return {"not started", "", not_started_words(launched, task, *slurm)};
    return {"pending", "", ""};
  }
  if (record.state != "running") return {record.state, "", ""};
  if (abandoned(task, slurm)) {
    // A task that ended COMPLETED ran its trainer to exit 0: it never finished the trial.
    const bool exited = task && task->state == "COMPLETED";
    return {"lost", "",
            fmt::format("lost: trial.h5 says running, but {}: no run will continue it ({}; "
                        "`dlx logs` shows its last output)", ended_words(task, *slurm),
                        exited ? "its trainer exited without calling finish()" : "killed, or its node lost")};
  }
  const bool waiting = task && pending(*task);
  const std::string why_waiting = waiting ? fmt::format("; {}", slurm_words(*task)) : "";
  if (record.stop_reason.starts_with("crash")) {
    const bool looping = record.same_failures >= 2;
    return {looping ? "crash-looping" : "restarting", restart,
            fmt::format("{}: {}{}", looping ? "crash-looping" : "restarting", record.stop_reason, why_waiting)};
  }
  if (record.stop_reason.starts_with("requeue")) {
    return {"requeued", "", fmt::format("requeued: {}{}", record.stop_reason, why_waiting)};
  }
  if (waiting && task->restarts > 0) {
    return {"requeued", "", fmt::format("requeued without recording why (killed, or its node lost){}", why_waiting)};
  }
  if (record.failures > 0) return {"running", fmt::format("restart {}", restart), ""};
  return {"running", "", ""};
}

}  // namespace dlx::cli
