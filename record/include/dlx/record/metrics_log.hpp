// SPDX-License-Identifier: Apache-2.0
#pragma once
// The metrics log: what a running trial reported since trial.h5 was last written.
//
// Protocol (one writer per trial: its rank 0, or dlx-launch once the trainer has exited).
//   trials/<id>/trial.h5          the record, rewritten whole (temp + fsync + rename) now and
//                                 then ("compaction"); its attribute metrics_log names the
//                                 generation G of the log that continues it ("metrics.G.log").
//   trials/<id>/metrics.G.log     append-only records, written by a background thread and
//                                 fdatasync'ed at least once a second; G = 1, 2, ...
// A report costs an append to a buffer in memory; the log makes it durable within a second; a
// compaction folds the log into a new trial.h5 so that HDF5 tools see it:
//   1. the writer starts appending to metrics.(G+1).log (created, header fsynced);
//   2. it writes trial.h5 holding everything up to the end of metrics.G.log and naming G+1;
//   3. it unlinks metrics.G.log (and anything older).
// Readers take trial.h5, then apply metrics.G.log, metrics.(G+1).log, ... while they exist: a
// kill -9 between any two steps leaves a chain that holds every record exactly once (a record is
// either in trial.h5 or in a log it leads to, never both: step 2 names G+1, whose records came
// after everything step 2 wrote). A reader that finds its trial.h5 replaced while it read the
// logs (step 3 may have unlinked a log it needed) reads again (load_trial_record).
// What this relies on, also on NFS: rename is atomic and a file's data is on the server after
// fdatasync returns (close-to-open consistency); a reader on another node sees a log up to some
// record boundary or a torn last record, which it ignores. Nothing relies on the order in which
// another node sees unsynced writes (unlike HDF5 SWMR).
//
// Log file: a 16-byte header ("DLXMLOG" NUL, uint32 format version 1, uint32 0), then records:
//   uint32 payload size, uint32 CRC-32C of the payload, payload (at most kMaxPayloadBytes);
// payload: uint8 type, then (little-endian)
//   name (1):  uint32 id, the metric's name (the rest): ids are per file, defined before use
//   row (2):   uint8 table (0 training, 1 validation), int64 step, float64 unix wall time, then
//              (uint32 id, float64 value) per metric reported
//   drop (3):  uint8 table (0, 1, or 2 for both), int64 step: rows at or after step are dropped
//              (the trainer resumed from an earlier checkpoint and reports them again)
// A reader stops at the first record that is short, oversized, fails its CRC, or makes no sense
// (the torn tail of a killed writer); the writer's next run starts a new file.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dlx/record/trial_record.hpp"

namespace dlx::record {

static_assert(std::endian::native == std::endian::little, "the metrics log is little-endian");

enum class MetricTableId : std::uint8_t { training = 0, validation = 1, both = 2 };

inline constexpr std::size_t kMetricsLogHeaderBytes = 16;
// A log's mode whatever the umask: trial.h5's (h5::kFileMode), since whoever reads one needs both.
inline constexpr unsigned kMetricsLogFileMode = 0640;
inline constexpr std::size_t kMetricsLogRecordHeaderBytes = 8;
inline constexpr std::uint32_t kMaxMetricsLogPayloadBytes = 1u << 20;
inline constexpr std::uint64_t kMaxMetricsLogBytes = std::uint64_t{1} << 30;
inline constexpr std::size_t kMaxMetricNameBytes = 1024;

// "metrics.<generation>.log"; the generation of such a name, nullopt for any other name.
std::string metrics_log_name(std::uint64_t generation);
std::optional<std::uint64_t> metrics_log_generation(std::string_view file_name);

// Appends records to `out` (the bytes to write to the log as they are).
void append_metrics_log_header(std::vector<std::byte>& out);
void append_metric_name_record(std::vector<std::byte>& out, std::uint32_t id, std::string_view name);
void append_metric_row_record(std::vector<std::byte>& out, MetricTableId table, std::int64_t step,
                              double wall_time,
                              std::span<const std::pair<std::uint32_t, double>> values);
void append_metric_drop_record(std::vector<std::byte>& out, MetricTableId table,
                               std::int64_t from_step);

// A reported metric name that trial.h5 cannot hold, or nullopt when it can: empty, ".", the
// table's own datasets ("steps", "wall_time"), a '/', or over kMaxMetricNameBytes.
std::optional<std::string> metric_name_problem(std::string_view name);

// Applies rows of metric ids to a record's tables, each id mapped to a table's metric once: what
// a reader does with a log, and what the writer does to its own copy of the record. Every record
// costs O(1) plus O(1) per value, and a replayed step finds its cut by binary search
// (MetricTable), so a log of any content costs time and memory in proportion to its bytes.
class MetricRowApplier {
 public:
  explicit MetricRowApplier(TrialRecord& record) : record_(&record) {}

  // Throws RecordError for a name metric_name_problem refuses or an id defined twice.
  void define(std::uint32_t id, std::string name);
  // A row; a step at or before the table's last one first drops the rows it replaces. Throws
  // RecordError for an undefined id, and for a table past kMaxMetricNames names.
  void row(MetricTableId table, std::int64_t step, double wall_time,
           std::span<const std::pair<std::uint32_t, double>> values);
  void drop(MetricTableId table, std::int64_t from_step);

 private:
  MetricTable& table(MetricTableId id);
  std::uint32_t metric(MetricTable& table, std::size_t table_index, std::uint32_t id);

  TrialRecord* record_;
  std::vector<std::string> names_;             // by id
  std::vector<std::uint32_t> metrics_[2];      // by id, per table: its index there (max: not yet)
};

struct MetricsLogReplay {
  std::uint64_t records = 0;        // applied
  std::uint64_t valid_bytes = 0;    // header + the records applied
  std::uint64_t ignored_bytes = 0;  // after them: a torn or damaged tail
};

// Applies the records of one log's bytes (header included) to `record`. Throws RecordError
// naming `shown` when the header is not a metrics log of a version this dlx reads.
MetricsLogReplay apply_metrics_log(std::span<const std::byte> bytes, TrialRecord& record,
                                   const std::filesystem::path& shown);

// The bytes of the log at `path`, nullopt when there is none. Input like any other: a link, a
// FIFO or anything but a regular file is refused without being waited on, and so is a file over
// kMaxMetricsLogBytes. Throws RecordError naming the file.
std::optional<std::vector<std::byte>> read_metrics_log_bytes(const std::filesystem::path& path);

// Reads `directory`/metrics.G.log for G = from, from + 1, ... while they exist and applies them
// to `record`; returns the first generation not found. The files are input like any other: a
// link, a FIFO or anything but a regular file in a log's place is refused without being waited
// on. Throws RecordError naming the file.
std::uint64_t apply_metrics_logs(const std::filesystem::path& directory, std::uint64_t from,
                                 TrialRecord& record);

// Unlinks directory/metrics.G.log for every G below `generation` (a writer's step 3, and the
// clean-up after a writer killed between steps 1 and 3). Best effort: returns how many it removed.
int retire_metrics_logs(const std::filesystem::path& directory, std::uint64_t generation);

}  // namespace dlx::record
