// SPDX-License-Identifier: Apache-2.0
#include "refused_job_cleanup.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <system_error>

#include <fmt/format.h>

#include "plugin_state.hpp"
#include "submission_match.hpp"

extern "C" {
#include <slurm/slurm.h>
}

namespace dlx::spank {

namespace {

// The user's jobs as slurmctld holds them, through the libslurm sbatch loaded (cluster_limits.cpp
// does the same); nullopt when slurmctld cannot be asked.
std::optional<std::vector<JobRecord>> load_user_jobs(uid_t user) {
  using Load = int (*)(job_info_msg_t**, uint32_t, uint16_t);
  using Free = void (*)(job_info_msg_t*);
  auto load = reinterpret_cast<Load>(::dlsym(RTLD_DEFAULT, "slurm_load_job_user"));
  auto release = reinterpret_cast<Free>(::dlsym(RTLD_DEFAULT, "slurm_free_job_info_msg"));
  if (!load || !release) return std::nullopt;
  job_info_msg_t* message = nullptr;
  if (load(&message, user, SHOW_ALL) != 0 || message == nullptr) return std::nullopt;
  std::vector<JobRecord> jobs;
  jobs.reserve(message->record_count);
  for (uint32_t i = 0; i < message->record_count; ++i) {
    const job_info_t& job = message->job_array[i];
    jobs.push_back(JobRecord{job.user_id, static_cast<pid_t>(job.alloc_sid), job.submit_time,
                             job.name != nullptr ? job.name : ""});
  }
  release(message);
  return jobs;
}

}  // namespace

std::vector<std::string> directory_entries(const std::filesystem::path& directory) {
  std::vector<std::string> names;
  std::error_code error;
  for (std::filesystem::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
    names.push_back(it->path().filename().string());
  }
  if (error) names.assign(1, "?unreadable");  // never equal to what was written
  std::ranges::sort(names);
  return names;
}

void remove_if_not_submitted(const CreatedExperiment& created, const SbatchOptions& sbatch) noexcept {
  try {
    if (sbatch.is_set("wait") || sbatch.is_set("clusters")) return;
    if (directory_entries(created.directory) != created.entries) return;
    const Submitter submitter{::getuid(), ::getsid(0), created.created, created.job_name};
    const auto jobs = load_user_jobs(submitter.user);
    if (!jobs) {
      report_info(fmt::format("dlx: could not ask slurmctld whether it took the job: if sbatch said it failed, "
                              "remove {} yourself",
                              created.directory.string()));
      return;
    }
    if (may_hold_submitted_job(*jobs, submitter)) return;
    std::error_code error;
    std::filesystem::remove_all(created.directory, error);
    if (error) {
      report_info(fmt::format("dlx: no job was submitted, but its experiment directory {} could not be removed "
                              "({}): remove it yourself",
                              created.directory.string(), error.message()));
      return;
    }
    report_info(fmt::format("dlx: {}: removed the experiment directory {} again",
                            sbatch.is_set("test-only") ? "--test-only submits nothing" : "Slurm did not take the job",
                            created.directory.string()));
  } catch (...) {
    report_error("dlx: exit: could not check whether the job was submitted");
  }
}

}  // namespace dlx::spank
