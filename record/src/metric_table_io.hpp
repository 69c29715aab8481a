// SPDX-License-Identifier: Apache-2.0
#pragma once
// A MetricTable as an HDF5 group: dataset `steps` (int64), `wall_time` (float64 unix seconds;
// format 2) and one float64 dataset per metric, all of the same length (zero allowed); NaN marks
// a report without that metric. Format 3 stores them chunked and extendible (appended to).
#include <cstdint>
#include <filesystem>
#include <string>

#include <hdf5.h>

#include "dlx/h5/read_guard.hpp"
#include "dlx/record/trial_record.hpp"
#include "dlx/record/trial_record_writer.hpp"

namespace dlx::record {

// Creates group `group_name` with the whole table: extendible chunked datasets (format 3), so
// that append_metric_table can extend them. Throws RecordError for a metric name that cannot
// be a dataset name.
void write_metric_table(hid_t parent, const std::string& group_name, const MetricTable& table,
                        const std::filesystem::path& file);
// Extends group `group_name` of a file this writer wrote: drops its rows at or after
// changes.drop_from (found by binary search over the file's steps), then appends changes.rows,
// every column growing with them (NaN where these rows lack a metric) and a new column for each
// new metric. HDF5 work O(columns + rows appended).
void append_metric_table(hid_t parent, const std::string& group_name, const MetricTableChanges& changes,
                         const std::filesystem::path& file);
// Reads group `group_name` below `parent` (whose path is `parent_path`): hard links to datasets
// only, contiguous (chunked too from format 3), each checked against the file before it is read
// (h5::stored_extent).
// In a format 1 record `wall_time` is a metric like any other and the wall times are NaN.
MetricTable read_metric_table(hid_t parent, const std::string& parent_path,
                              const std::string& group_name, h5::ReadGuard& guard,
                              std::int64_t format_version);

}  // namespace dlx::record
