// SPDX-License-Identifier: Apache-2.0
#include "submission_match.hpp"

#include <algorithm>

namespace dlx::spank {

bool may_hold_submitted_job(const std::vector<JobRecord>& jobs, const Submitter& submitter) {
  return std::ranges::any_of(jobs, [&](const JobRecord& job) {
    return job.user == submitter.user && job.submitted + kClockSlack >= submitter.created &&
           (job.session == submitter.session || job.name == submitter.job_name);
  });
}

}  // namespace dlx::spank
