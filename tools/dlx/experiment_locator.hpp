// SPDX-License-Identifier: Apache-2.0
#pragma once
#include <filesystem>
#include <string>

namespace dlx::cli {

// An experiment directory from what the user typed: a directory holding experiment.yaml, or a
// Slurm job id ("123" or "123_4") resolved through <storage_root>/<user>/.jobs/<id>, or, before any
// of its tasks has started, through the job's name (slurm_job_name.hpp). The storage
// root comes from $DLX_STORAGE_ROOT or from the dlx line of the cluster's plugstack.conf.
std::filesystem::path locate_experiment(const std::string& job_or_directory);

// KEY= from the dlx line of the plugstack.conf that `scontrol show config` names (storage_root,
// site_config); "" when not found.
std::string plugstack_argument(const std::string& key);

}  // namespace dlx::cli
