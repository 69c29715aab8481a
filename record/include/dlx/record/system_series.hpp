// SPDX-License-Identifier: Apache-2.0
#pragma once
// A trial's system metrics: what its processes used of the node while it trained (CPU, memory,
// I/O), sampled by each rank's dlx-launch (launcher/launch: system_sampler.hpp) and kept beside
// the trial's record:
//   trials/<id>/system/<node>.rank-<R>.attempt-<A>.log
// one file per rank and attempt (A: the trial's restart count when that run began), written by
// that rank's dlx-launch alone, in the metrics log's format (metrics_log.hpp: a header, then name
// and row records with CRCs; appended and fdatasync'ed after every sample, so a kill -9 loses at
// most the sample being written, and a reader ignores a torn last record). A row is one sample:
// step = the sample's number in the file (from 0), its wall time, and the values below.
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

struct SystemLogName {
  std::string node;
  int rank = 0;
  int attempt = 0;
  bool operator==(const SystemLogName&) const = default;
};

// "<node>.rank-<R>.attempt-<A>.log"; nullopt for a node name that cannot name a file (empty, a
// '/', a leading '.', a control character, over 255 bytes in all).
std::optional<std::string> system_log_file_name(const SystemLogName& name);
std::optional<SystemLogName> parse_system_log_file_name(std::string_view file_name);

// Appends samples to one system log (the file is created, never reopened: a run that cannot
// create it samples nothing). Not thread-safe; one writer per file.
class SystemLogWriter {
 public:
  // Creates trial_dir/system/ (0750, mode as trial.h5's directory) and the log (0640, O_EXCL).
  // Throws RecordError naming the file.
  SystemLogWriter(const std::filesystem::path& trial_dir, const SystemLogName& name);

  // Appends one row and makes it durable (write + fdatasync). Names are defined on first use.
  // Throws RecordError when the write fails.
  void append(double wall_time, const std::map<std::string, double>& values);

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  UniqueFd fd_;
  std::map<std::string, std::uint32_t, std::less<>> ids_;
  std::int64_t next_step_ = 0;
};

struct SystemSeries {
  SystemLogName name;
  MetricTable samples;  // rows: step = the sample's number, its wall time, the series above
};

// Every system log of the trial, ordered by attempt, then rank; a file that is no system log by
// its name is skipped, one that cannot be read throws RecordError naming it.
std::vector<SystemSeries> load_system_series(const std::filesystem::path& trial_dir);

}  // namespace dlx::record
