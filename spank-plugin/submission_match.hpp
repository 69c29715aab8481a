// SPDX-License-Identifier: Apache-2.0
#pragma once
// Whether slurmctld holds the job a given sbatch submitted, told from the user's job records:
// sbatch tells its plugins neither its job id nor whether it submitted (refused_job_cleanup.hpp).
#include <sys/types.h>

#include <ctime>
#include <string>
#include <vector>

namespace dlx::spank {

// What slurmctld says of one job (job_info_t): its user, the session it was submitted from
// (AllocNode:Sid), when, and its name.
struct JobRecord {
  uid_t user = 0;
  pid_t session = 0;
  std::time_t submitted = 0;
  std::string name;
};

// The sbatch that created the experiment directory: its user and session, when it created the
// directory (before submitting) and the job's name as submitted.
struct Submitter {
  uid_t user = 0;
  pid_t session = 0;
  std::time_t created = 0;
  std::string job_name;
};

// Seconds a job's submit time (slurmctld's clock) may read before the directory's creation
// (this host's clock) and still count: the two clocks may differ by that much.
inline constexpr std::time_t kClockSlack = 60;

// Whether any of `jobs` may be the one `submitter` submitted: the same user, submitted no
// earlier than the directory's creation (less kClockSlack), from the same session or under the
// same name. Errs towards yes: a no removes an experiment directory.
bool may_hold_submitted_job(const std::vector<JobRecord>& jobs, const Submitter& submitter);

}  // namespace dlx::spank
