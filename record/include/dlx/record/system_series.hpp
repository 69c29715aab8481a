// SPDX-License-Identifier: Apache-2.0
#pragma once
// A trial's system metrics: what its processes used of the node while it trained (CPU, memory,
// I/O), sampled by each rank's dlx-launch (launcher/launch: system_sampler.hpp) and kept beside
// the trial's record:
//   trials/<id>/system/<node>.rank-<R>.attempt-<A>.<P>.log
// files per rank and attempt (A: the trial's restart count when that run began), each of at most
// kSystemRowsPerPart samples (P = 0, 1, ...: a reader that wants the latest sample reads the last
// part, never the whole history), written by that rank's dlx-launch alone, in the metrics log's format (metrics_log.hpp: a header, then name
// and row records with CRCs; appended and fdatasync'ed after every sample, so a kill -9 loses at
// most the sample being written, and a reader ignores a torn last record). A row is one sample:
// step = the sample's number in the run (from 0, continued across parts), its wall time, and
// the values below.
// Separate files and not trial.h5: trial.h5 has one writer (the trainer's rank 0), and every
// rank's sampler runs in its own process on its own node.
//
// Series (docs/file-format.md):
//   cpu_percent         CPU time of the trainer's processes over the interval / its wall time,
//                       x 100 (100: one core busy)
//   memory_bytes        resident memory: the step's cgroup's memory.current, else the sum of
//                       the processes' RSS (pages shared between them counted in each)
//   memory_peak_bytes   the cgroup's memory.peak (cgroups only)
//   read_bytes_per_s    bytes read from / written to storage over the interval (the cgroup's
//   write_bytes_per_s   io.stat, else the processes' /proc/<pid>/io; written = dirtied)
//   processes           the trainer and its descendants (process tree only)
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlx/common/unique_fd.hpp"
#include "dlx/record/metric_table.hpp"

namespace dlx::record {

inline constexpr const char* kSystemDirName = "system";
// An hour of samples at the default period: ~150 KB.
inline constexpr std::int64_t kSystemRowsPerPart = 3600;

struct SystemLogName {
  std::string node;
  int rank = 0;
  int attempt = 0;
  int part = 0;
  bool operator==(const SystemLogName&) const = default;
};

// "<node>.rank-<R>.attempt-<A>.<P>.log"; nullopt for a node name that cannot name a file (empty, a
// '/', a leading '.', a control character, over 255 bytes in all).
std::optional<std::string> system_log_file_name(const SystemLogName& name);
std::optional<SystemLogName> parse_system_log_file_name(std::string_view file_name);

// Appends samples to one rank's system log of one run, starting its next part every
// kSystemRowsPerPart samples (each file created, never reopened: a run that cannot create its
// first samples nothing). Not thread-safe; one writer per file.
class SystemLogWriter {
 public:
  // Creates trial_dir/system/ (0750) and the first part (0640, O_EXCL). Throws RecordError
  // naming the file (it exists: another run took this attempt number).
  SystemLogWriter(const std::filesystem::path& trial_dir, const SystemLogName& name);

  // Appends one row and makes it durable (write + fdatasync). Names are defined on first use.
  // Throws RecordError when the write fails.
  void append(double wall_time, const std::map<std::string, double>& values);

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  void open_part();

  std::filesystem::path directory_;
  SystemLogName name_;
  std::filesystem::path path_;
  UniqueFd fd_;
  std::map<std::string, std::uint32_t, std::less<>> ids_;
  std::int64_t next_step_ = 0;
};

struct SystemSeries {
  SystemLogName name;   // part: the last one read
  MetricTable samples;  // rows: step = the sample's number, its wall time, the series above
};

// Every rank's samples of every run of the trial (its parts joined), ordered by attempt, then
// rank; a file that is no system log by its name is skipped, one that cannot be read throws
// RecordError naming it.
std::vector<SystemSeries> load_system_series(const std::filesystem::path& trial_dir);

// The latest run's ranks, each with its last part only (at most kSystemRowsPerPart samples):
// what `dlx status` shows of a running trial.
std::vector<SystemSeries> load_latest_system_samples(const std::filesystem::path& trial_dir);

}  // namespace dlx::record
