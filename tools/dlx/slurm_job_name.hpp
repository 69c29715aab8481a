// SPDX-License-Identifier: Apache-2.0
#pragma once
// An experiment's array job found by its name, for an experiment none of whose tasks has started:
// the <storage_root>/<user>/.jobs/<id> link (logs_job.hpp) is made by the first task, so a job
// whose launch failed (an unwritable --output: JobLaunchFailure) or that still waits has none.
// The plugin names the job after the experiment directory (<name>, <name>.2, ...: unique among
// the user's experiments) unless the user chose a name, so the user's own jobs of that name are
// the experiment's. Only the user's own jobs are asked for (squeue --me): another user's job of
// the same name must never lead to, or from, this user's experiment.
#include <optional>
#include <string>
#include <string_view>

namespace dlx::cli {

// The highest job id among squeue's `-O ArrayJobID` lines; lines that are not a job id are
// skipped. nullopt when there is none.
std::optional<std::string> newest_job_id(std::string_view squeue_lines);

// The one name every `-o %j` line gives, when it can name an experiment directory (not empty,
// hidden, a path, with a comma or a control byte: a name with a line break gives lines that differ);
// nullopt otherwise.
std::optional<std::string> experiment_name_of(std::string_view squeue_lines);

// The newest of this user's array jobs named `name` that Slurm still knows (pending, running, or
// ended less than MinJobAge ago); nullopt when there is none or squeue cannot answer.
std::optional<std::string> own_array_job_named(const std::string& name);

// The name of this user's job `job_id` ("42" or "42_3") when it can name an experiment directory;
// nullopt when Slurm does not know it, it is another user's, or squeue cannot answer.
std::optional<std::string> own_job_name(const std::string& job_id);

}  // namespace dlx::cli
