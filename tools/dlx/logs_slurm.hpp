#pragma once
// `dlx logs` when dlx-launch kept no copy of a trial's output (an older dlx-launch, DLX_LOG_MAX_MB=0,
// a terminal): Slurm's own output files, as `scontrol show job -o` reports them for the job that
// ran the trial last (trial.h5's slurm_job_id). Slurm expands most filename patterns itself; those
// it leaves (%A %a %j %J %x %u %N %n %s %t %%, with an optional zero-padding width) are expanded
// here the way sbatch documents them, and a relative path is taken from the job's WorkDir.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace dlx::cli {

// One `scontrol show job -o` line as Key=Value fields. A value runs to the next " Key=" (so paths
// with spaces survive as long as no word in them looks like "Key=").
std::map<std::string, std::string> parse_scontrol_fields(std::string_view line);

// `pattern` with Slurm's filename patterns replaced from the job's fields (JobId, ArrayJobId,
// ArrayTaskId, JobName, UserId "name(uid)", NodeList); relative paths are under WorkDir.
std::string expand_output_pattern(std::string_view pattern, const std::map<std::string, std::string>& job);

struct SlurmOutput {
  std::string job_id;
  std::filesystem::path stdout_path;
  std::optional<std::filesystem::path> stderr_path;  // only when not the same file
};

// Whether `text` is a Slurm job id dlx passes to scontrol: "123" or "123_4".
bool is_job_id(std::string_view text);

// The job's output files from `scontrol show job -o JOB`; nullopt when Slurm does not know the
// job (it forgets finished jobs after MinJobAge) or scontrol cannot run.
std::optional<SlurmOutput> slurm_output_files(const std::string& job_id);

}  // namespace dlx::cli
