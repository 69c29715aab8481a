// SPDX-License-Identifier: Apache-2.0
#pragma once
// `dlx logs` when dlx-launch kept no copy of a trial's output (an older dlx-launch, DLX_LOG_MAX_MB=0,
// a terminal): Slurm's own output files, as Slurm reports them for the job that ran the trial last
// (trial.h5's slurm_job_id). Slurm expands most filename patterns itself; those it leaves (%A %a
// %j %J %x %u %N %n %s %t %%, with an optional zero-padding width) are expanded here the way sbatch
// documents them, and a relative path is taken from the job's WorkDir.
//
// Where the fields come from matters: the job's name, comment, working directory and output path
// are the user's to choose, and `scontrol show job -o` prints every field on one line with nothing
// to tell a value from the next key (a job named "x StdOut=/etc/shadow" had root read /etc/shadow).
// Slurm 22.05's scontrol has no JSON output (`--json` is squeue's, which then ignores its job
// filter and dumps every job). So the fields come from `scontrol show job` (several lines), where
// StdOut, StdErr, WorkDir and UserId each start a line of their own: a value with a line break in
// it (Slurm accepts one in a job name) can start another such line, and then the answer is not
// used at all, never its first or last match.
#include <sys/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace dlx::cli {

// The job's fields under scontrol's text names (JobId, ArrayJobId, ArrayTaskId, JobName, UserId
// "name(uid)", NodeList, BatchHost, WorkDir, StdOut, StdErr), as expand_output_pattern takes them.
using JobFields = std::map<std::string, std::string>;

// `scontrol show job ID` (several lines) as fields: StdOut, StdErr, WorkDir and UserId from the
// lines they start, the rest of the first line's fields (JobId, ArrayJobId, ArrayTaskId, JobName:
// for the filename patterns only), NodeList and BatchHost. nullopt when one of StdOut, StdErr,
// WorkDir and UserId does not start exactly one line.
std::optional<JobFields> parse_scontrol_text(std::string_view text);

// `pattern` with Slurm's filename patterns replaced from the job's fields; relative paths are
// under WorkDir.
std::string expand_output_pattern(std::string_view pattern, const JobFields& job);

// The uid in a UserId field "name(uid)"; nullopt when there is none.
std::optional<uid_t> job_uid(const JobFields& job);

struct SlurmOutput {
  std::string job_id;
  uid_t uid = 0;  // the user the job ran as: the files must be theirs
  std::string user;
  std::filesystem::path stdout_path;
  std::optional<std::filesystem::path> stderr_path;  // only when not the same file
};

// Whether `text` is a Slurm job id dlx passes to scontrol: "123" or "123_4".
bool is_job_id(std::string_view text);

// The job's output files as Slurm reports them; nullopt, with `why_not` set, when Slurm does not
// know the job (it forgets finished jobs after MinJobAge), scontrol cannot run, or its answer
// cannot be read unambiguously.
std::optional<SlurmOutput> slurm_output_files(const std::string& job_id, std::string& why_not);

}  // namespace dlx::cli
