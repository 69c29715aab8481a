// SPDX-License-Identifier: Apache-2.0
#pragma once
// What Slurm says of an experiment's array job, for `dlx status` and `dlx report`
// (status/trial_status.hpp decides what it means for each trial). Asked only when the experiment's
// job is known: the job id the user gave, else the newest <storage_root>/<user>/.jobs/<id> link
// that names the experiment directory (logs_job.hpp). One `squeue -h -r -t all -j JOB` (every
// array task, pending ones each on its own line, finished ones until Slurm forgets them after
// MinJobAge), bounded in time and output; `scontrol show job` only for a task whose launch failed,
// for its output file (logs_slurm.hpp).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "status/trial_status.hpp"

namespace dlx::cli {

// What Slurm says of array job `job_id` ("42"; a task id "42_3" is taken as its job).
SlurmView ask_slurm(const std::string& job_id);

// The experiment's array job: `given` when it is a job id, else its newest .jobs link; nullopt
// when neither names one (a directory given by hand, a run outside Slurm).
std::optional<std::string> experiment_job(const std::filesystem::path& directory, const std::string& given);

}  // namespace dlx::cli
