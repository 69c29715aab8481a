// SPDX-License-Identifier: Apache-2.0
#include "dlx/env/notice_marker.hpp"

#include <nlohmann/json.hpp>

#include "dlx/common/durable_file.hpp"
#include "dlx/common/error.hpp"

namespace dlx::env {

namespace {

constexpr std::size_t kMaxMarkerBytes = 4096;

}  // namespace

void write_notice_marker(const std::filesystem::path& trial_dir, const NoticeMarker& marker) {
  const nlohmann::json json{{"slurm_job_id", marker.slurm_job_id},
                            {"restarts", marker.restarts},
                            {"signal", marker.signal_number},
                            {"unix_time", marker.unix_time},
                            {"job_end", marker.job_end}};
  write_file_durably(trial_dir / kNoticeMarkerName, json.dump() + "\n");
}

std::optional<NoticeMarker> read_notice_marker(const std::filesystem::path& trial_dir) {
  try {
    const auto path = trial_dir / kNoticeMarkerName;
    std::error_code missing;
    if (!std::filesystem::exists(path, missing)) return std::nullopt;
    const auto json = nlohmann::json::parse(read_small_file(path, kMaxMarkerBytes));
    NoticeMarker marker;
    marker.slurm_job_id = json.at("slurm_job_id").get<std::string>();
    marker.restarts = json.at("restarts").get<int>();
    marker.signal_number = json.at("signal").get<int>();
    marker.unix_time = json.at("unix_time").get<std::int64_t>();
    marker.job_end = json.at("job_end").get<std::string>();
    return marker;
  } catch (const std::exception&) {
    return std::nullopt;  // unreadable, damaged or of another form: the restart stays "unknown"
  }
}

}  // namespace dlx::env
