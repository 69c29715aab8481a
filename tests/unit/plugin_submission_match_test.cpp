// SPDX-License-Identifier: Apache-2.0
// Whether the user's jobs may hold the one an sbatch submitted (spank-plugin/submission_match.hpp):
// the answer that lets the plugin remove an experiment directory Slurm refused errs towards yes.
// The cluster test: cluster.bad_input (a partition that does not exist, --test-only).
#include <catch2/catch.hpp>

#include <vector>

#include "submission_match.hpp"

using dlx::spank::JobRecord;
using dlx::spank::kClockSlack;
using dlx::spank::may_hold_submitted_job;
using dlx::spank::Submitter;

TEST_CASE("a job of the same user, session or name, since the directory, may be the submitted one",
          "[plugin][cleanup]") {
  const Submitter submitter{1000, 4242, 1'000'000, "exp.2"};
  CHECK_FALSE(may_hold_submitted_job({}, submitter));
  // The session's job, submitted a moment later (or a little earlier, by slurmctld's clock).
  CHECK(may_hold_submitted_job({{1000, 4242, 1'000'001, "renamed-by-job-submit"}}, submitter));
  CHECK(may_hold_submitted_job({{1000, 4242, 1'000'000 - kClockSlack, "x"}}, submitter));
  // Another session, the same job name (a second terminal's sbatch, say).
  CHECK(may_hold_submitted_job({{1000, 7, 1'000'002, "exp.2"}}, submitter));
  // None of these: an older job of the session, another session's other job, another user's.
  const std::vector<JobRecord> others{{1000, 4242, 1'000'000 - kClockSlack - 1, "exp.2"},
                                      {1000, 7, 1'000'005, "other"},
                                      {1001, 4242, 1'000'005, "exp.2"}};
  CHECK_FALSE(may_hold_submitted_job(others, submitter));
}
