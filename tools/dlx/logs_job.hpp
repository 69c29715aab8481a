// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which Slurm job ran a trial last, for `dlx logs` when dlx-launch kept no copy of its output:
//   1. trial.h5's slurm_job_id (written by libdlx, or by dlx-launch for a crashed trainer);
//   2. else the array task of the trial's last ticket (the searcher's journal, read as `dlx
//      status` reads it; without one, the trial's own id where every trial is one ticket) in the
//      experiment's array job: the job id the user gave, or the <storage_root>/<user>/.jobs/<id>
//      link that names the experiment directory. With resources.max_array_tasks or packed trials
//      a task runs several tickets: the one that runs this ticket.
#include <filesystem>
#include <optional>
#include <string>

namespace dlx::cli {

struct TrialJob {
  std::string job_id;  // "57" or "40_3"
  std::string how;     // "trial.h5", "ticket 3 of job 40"
};

// The newest array job whose <storage_root>/<user>/.jobs/<id> link names `experiment_dir`
// (resubmissions are new directories); nullopt when none does.
std::optional<std::string> array_job_of(const std::filesystem::path& experiment_dir);

// nullopt with `why_not` set when neither says.
std::optional<TrialJob> trial_job(const std::filesystem::path& experiment_dir, int trial,
                                  const std::string& given, std::string& why_not);

}  // namespace dlx::cli
