// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one writer of a trial.h5 (its rank 0's MetricsPipeline), extending the file it wrote last
// instead of writing every row again. A compaction then costs memory and HDF5 work in proportion
// to the rows reported since the last one, not to the whole table.
//
// Append protocol (as crash-safe as the whole-file write it replaces: docs/file-format.md):
//   1. copy the file this writer published last (kept open: the very inode it renamed into place,
//      whatever has been put at the path since) to a temporary name beside it: copy_file_range,
//      so a reflink (XFS, btrfs) or a server-side copy (NFS 4.2) where the file system has one,
//      otherwise the kernel's sequential copy; no byte passes through the writer's memory;
//   2. open the copy with HDF5 and extend it: each metric table's datasets (chunked, extendible:
//      format 3) first drop the rows a resume replaced (their cut found by binary search over the
//      file's steps), then grow by the new rows; the root attributes and restart events are
//      written again (a few hundred bytes);
//   3. close, fsync, rename over trial.h5, fsync the directory (publish_file), and keep the new
//      file open for the next append.
// A kill -9 at any point leaves the previous trial.h5 whole (only the temporary copy was written)
// and the metrics log chain holding every row since it (dlx/record/metrics_log.hpp); any
// failure removes the temporary copy and throws, leaving the previous file in place, and the
// caller keeps the rows for the next try.
#include <cstdint>
#include <filesystem>
#include <optional>

#include "dlx/record/metric_table.hpp"
#include "dlx/record/trial_record.hpp"
#include "dlx/common/unique_fd.hpp"

namespace dlx::record {

// What trial.h5 lacks of one metric table since its writer last wrote it.
struct MetricTableChanges {
  std::optional<std::int64_t> drop_from;  // first, the file's rows at or after this step go
  MetricTable rows;                       // then these are appended (names: every metric seen)
};

class TrialRecordWriter {
 public:
  explicit TrialRecordWriter(std::filesystem::path path) : path_(std::move(path)) {}

  // The whole record, as save_trial_record. Throws RecordError.
  void write(const TrialRecord& record);
  // Everything of `head` but its metric tables, and the file's tables extended by `training` and
  // `validation` (the append protocol above). Requires a file this writer wrote (can_append).
  // Throws RecordError.
  void append(const TrialRecord& head, const MetricTableChanges& training,
              const MetricTableChanges& validation);
  bool can_append() const noexcept { return static_cast<bool>(written_); }
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  // temp + fsync + rename of `temporary` into path_, keeping it open as written_.
  void publish(const std::filesystem::path& temporary);

  std::filesystem::path path_;
  UniqueFd written_;  // the file this writer published last, read-only
};

}  // namespace dlx::record
