// SPDX-License-Identifier: Apache-2.0
// dlx logs' reading of Slurm's description of a job (`scontrol show job`) and of Slurm's filename
// patterns (logs_slurm.hpp); an experiment's job found by its name (slurm_job_name.hpp).
#include <catch2/catch.hpp>

#include <string>

#include "logs_slurm.hpp"
#include "slurm_job_name.hpp"

using dlx::cli::expand_output_pattern;
using dlx::cli::JobFields;
using dlx::cli::parse_scontrol_text;

namespace {

// Trimmed from Slurm 22.05's `scontrol show job 40_5` (array task 5 of job 40, job id 45): StdOut,
// StdErr, WorkDir and UserId each start a line of their own.
std::string text_job(const std::string& name) {
  return "JobId=45 ArrayJobId=40 ArrayTaskId=5 JobName=" + name + "\n"
         "   UserId=alice(1001) GroupId=alice(1001) MCS_label=N/A\n"
         "   JobState=RUNNING Reason=None Dependency=(null)\n"
         "   NodeList=n[2-3]\n"
         "   BatchHost=n2\n"
         "   WorkDir=/home/alice/runs\n"
         "   StdErr=/home/alice/runs/slurm-40_5.out\n"
         "   StdIn=/dev/null\n"
         "   StdOut=/home/alice/runs/slurm-40_5.out\n"
         "   Power=\n";
}

}  // namespace

TEST_CASE("logs: a job's fields from scontrol show job", "[logs]") {
  const auto job = parse_scontrol_text(text_job("my job.sh"));
  REQUIRE(job);
  CHECK(job->at("JobId") == "45");
  CHECK(job->at("ArrayJobId") == "40");
  CHECK(job->at("ArrayTaskId") == "5");
  CHECK(job->at("JobName") == "my job.sh");
  CHECK(job->at("UserId") == "alice(1001)");
  CHECK(dlx::cli::job_uid(*job) == 1001u);
  CHECK(job->at("StdOut") == "/home/alice/runs/slurm-40_5.out");
  CHECK(job->at("StdErr") == "/home/alice/runs/slurm-40_5.out");
  CHECK(job->at("WorkDir") == "/home/alice/runs");
  CHECK(job->at("BatchHost") == "n2");
}

// Issue 31, finding 7b: a job name that reads as a field (`-J 'x StdOut=/etc/shadow'`) made the
// one-line output's first StdOut= the name's. Only the lines StdOut, StdErr, WorkDir and UserId
// start count, and a value with a line break (Slurm 22.05 takes `-J $'y\n   StdOut=/etc/shadow'`)
// that starts another such line makes the whole answer unusable.
TEST_CASE("logs: a job name that looks like a field is never taken for one", "[logs]") {
  const auto job = parse_scontrol_text(text_job("x StdOut=/etc/shadow UserId=root(0) WorkDir=/etc"));
  REQUIRE(job);
  CHECK(job->at("StdOut") == "/home/alice/runs/slurm-40_5.out");
  CHECK(job->at("UserId") == "alice(1001)");
  CHECK(job->at("WorkDir") == "/home/alice/runs");
  CHECK(job->at("JobName") == "x");  // cut at the next " Key=": only %x would use it
  for (const char* forged : {"y\n   StdOut=/etc/shadow", "y\n   UserId=root(0)", "y\n   WorkDir=/etc",
                             "y\n   StdErr=/etc/shadow"}) {
    INFO(forged);
    CHECK_FALSE(parse_scontrol_text(text_job(forged)));
  }
  CHECK_FALSE(parse_scontrol_text("JobId=45 JobName=x\n   UserId=alice(1001)\n"));  // no StdOut at all
  CHECK_FALSE(parse_scontrol_text(""));
}

TEST_CASE("logs: the job's uid", "[logs]") {
  CHECK(dlx::cli::job_uid(JobFields{{"UserId", "alice(1001)"}}) == 1001u);
  CHECK(dlx::cli::job_uid(JobFields{{"UserId", "we(i)rd(0)"}}) == 0u);
  CHECK_FALSE(dlx::cli::job_uid(JobFields{{"UserId", "alice"}}));
  CHECK_FALSE(dlx::cli::job_uid(JobFields{{"UserId", "alice(x1)"}}));
  CHECK_FALSE(dlx::cli::job_uid(JobFields{{"UserId", "alice(99999999999)"}}));
  CHECK_FALSE(dlx::cli::job_uid(JobFields{}));
}

TEST_CASE("logs: Slurm's filename patterns", "[logs]") {
  const auto job = parse_scontrol_text(text_job("my job.sh"));
  REQUIRE(job);
  CHECK(expand_output_pattern("/o/%A_%a.out", *job) == "/o/40_5.out");
  CHECK(expand_output_pattern("/o/%j-%x-%u-%N.%3a", *job) == "/o/45-my job.sh-alice-n2.005");
  CHECK(expand_output_pattern("/o/%%j %s %n %t %J %q", *job) == "/o/%j batch 0 0 45.batch %q");
  CHECK(expand_output_pattern("out/%A.log", *job) == "/home/alice/runs/out/40.log");  // relative: WorkDir
  CHECK(expand_output_pattern("/o/lit\\eral-%j", *job) == "/o/literal-%j");         // a backslash: as is
  CHECK(expand_output_pattern("/o/trailing%", *job) == "/o/trailing%");
}

TEST_CASE("logs: only job ids reach scontrol", "[logs]") {
  CHECK(dlx::cli::is_job_id("45"));
  CHECK(dlx::cli::is_job_id("40_5"));
  CHECK_FALSE(dlx::cli::is_job_id(""));
  CHECK_FALSE(dlx::cli::is_job_id("40_"));
  CHECK_FALSE(dlx::cli::is_job_id("45; rm -rf ~"));
  CHECK_FALSE(dlx::cli::is_job_id("12345678901"));
}

TEST_CASE("status: the newest array job among squeue's lines", "[logs][status]") {
  using dlx::cli::newest_job_id;
  // squeue -O ArrayJobID:20 pads with spaces; one line per pending group or running task.
  CHECK(newest_job_id("41                  \n41                  \n139                 \n") == "139");
  CHECK(newest_job_id("9\n10\n") == "10");  // by number, not by text
  CHECK_FALSE(newest_job_id(""));
  CHECK_FALSE(newest_job_id("N/A\n"));
  CHECK(newest_job_id("N/A\n7\n") == "7");
}

TEST_CASE("status: a job's name names an experiment directory only when it can", "[logs][status]") {
  using dlx::cli::experiment_name_of;
  CHECK(experiment_name_of("mnist.2\nmnist.2\n") == "mnist.2");
  CHECK(experiment_name_of("logreg-asha\n") == "logreg-asha");
  CHECK_FALSE(experiment_name_of(""));
  // A name with a line break in it prints lines that differ: never half of it.
  CHECK_FALSE(experiment_name_of("x\nStdOut=/etc/shadow\n"));
  CHECK_FALSE(experiment_name_of("../bob\n"));
  CHECK_FALSE(experiment_name_of(".jobs\n"));
  CHECK_FALSE(experiment_name_of("a/b\n"));
  CHECK_FALSE(experiment_name_of("a,b\n"));  // squeue -n would take it for two names
  CHECK_FALSE(experiment_name_of("tab\there\n"));
}
