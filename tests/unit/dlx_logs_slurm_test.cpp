// dlx logs' reading of `scontrol show job -o` and Slurm's filename patterns (logs_slurm.hpp).
#include <catch2/catch.hpp>

#include "logs_slurm.hpp"

using dlx::cli::expand_output_pattern;
using dlx::cli::parse_scontrol_fields;

namespace {

// Trimmed from a real line of Slurm 22.05 for array task 5 of job 40 (job id 45).
const char* const kLine =
    "JobId=45 ArrayJobId=40 ArrayTaskId=5 JobName=my job.sh UserId=alice(1001) GroupId=alice(1001) "
    "JobState=RUNNING NodeList=n[2-3] BatchHost=n2 WorkDir=/home/alice/runs "
    "StdErr=/home/alice/runs/slurm-40_5.out StdIn=/dev/null StdOut=/home/alice/runs/slurm-40_5.out Power=\n";

}  // namespace

TEST_CASE("logs: scontrol fields, values with spaces included", "[logs]") {
  const auto job = parse_scontrol_fields(kLine);
  CHECK(job.at("JobId") == "45");
  CHECK(job.at("JobName") == "my job.sh");
  CHECK(job.at("StdOut") == "/home/alice/runs/slurm-40_5.out");
  CHECK(job.at("Power").empty());
}

TEST_CASE("logs: Slurm's filename patterns", "[logs]") {
  const auto job = parse_scontrol_fields(kLine);
  CHECK(expand_output_pattern("/o/%A_%a.out", job) == "/o/40_5.out");
  CHECK(expand_output_pattern("/o/%j-%x-%u-%N.%3a", job) == "/o/45-my job.sh-alice-n2.005");
  CHECK(expand_output_pattern("/o/%%j %s %n %t %J %q", job) == "/o/%j batch 0 0 45.batch %q");
  CHECK(expand_output_pattern("out/%A.log", job) == "/home/alice/runs/out/40.log");  // relative: WorkDir
  CHECK(expand_output_pattern("/o/lit\\eral-%j", job) == "/o/literal-%j");         // a backslash: as is
  CHECK(expand_output_pattern("/o/trailing%", job) == "/o/trailing%");
}

TEST_CASE("logs: only job ids reach scontrol", "[logs]") {
  CHECK(dlx::cli::is_job_id("45"));
  CHECK(dlx::cli::is_job_id("40_5"));
  CHECK_FALSE(dlx::cli::is_job_id(""));
  CHECK_FALSE(dlx::cli::is_job_id("40_"));
  CHECK_FALSE(dlx::cli::is_job_id("45; rm -rf ~"));
  CHECK_FALSE(dlx::cli::is_job_id("12345678901"));
}
