// SPDX-License-Identifier: Apache-2.0
#include "dlx/record/system_series.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "dlx/record/error.hpp"
#include "dlx/record/metrics_log.hpp"
#include "dlx/record/trial_record.hpp"

namespace dlx::record {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kSystemRankPart = ".rank-";
constexpr std::string_view kSystemAttemptPart = ".attempt-";
constexpr std::string_view kSystemLogSuffix = ".log";
constexpr std::size_t kMaxSystemLogFileName = 255;

bool node_name_ok(std::string_view node) {
  if (node.empty() || node.front() == '.') return false;
  return std::none_of(node.begin(), node.end(),
                      [](char c) { return c == '/' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

std::optional<int> number(std::string_view text) {
  int value = 0;
  if (text.empty() || text.size() > 9 || (text.size() > 1 && text.front() == '0')) return std::nullopt;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

void write_all(int fd, const std::vector<std::byte>& bytes, const fs::path& path) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const auto n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw RecordError(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
    done += static_cast<std::size_t>(n);
  }
  if (::fdatasync(fd) != 0) throw RecordError(fmt::format("cannot sync {}: {}", path.string(), std::strerror(errno)));
}

}  // namespace

std::optional<std::string> system_log_file_name(const SystemLogName& name) {
  if (!node_name_ok(name.node) || name.rank < 0 || name.attempt < 0) return std::nullopt;
  std::string file = fmt::format("{}{}{}{}{}{}", name.node, kSystemRankPart, name.rank, kSystemAttemptPart, name.attempt, kSystemLogSuffix);
  if (file.size() > kMaxSystemLogFileName) return std::nullopt;
  return file;
}

std::optional<SystemLogName> parse_system_log_file_name(std::string_view file) {
  if (!file.ends_with(kSystemLogSuffix)) return std::nullopt;
  file.remove_suffix(kSystemLogSuffix.size());
  const auto attempt_at = file.rfind(kSystemAttemptPart);
  if (attempt_at == std::string_view::npos) return std::nullopt;
  const auto rank_at = file.substr(0, attempt_at).rfind(kSystemRankPart);
  if (rank_at == std::string_view::npos) return std::nullopt;
  SystemLogName name;
  name.node = std::string(file.substr(0, rank_at));
  const auto rank = number(file.substr(rank_at + kSystemRankPart.size(), attempt_at - rank_at - kSystemRankPart.size()));
  const auto attempt = number(file.substr(attempt_at + kSystemAttemptPart.size()));
  if (!rank || !attempt || !node_name_ok(name.node)) return std::nullopt;
  name.rank = *rank;
  name.attempt = *attempt;
  return name;
}

SystemLogWriter::SystemLogWriter(const fs::path& trial_dir, const SystemLogName& name) {
  const auto file = system_log_file_name(name);
  if (!file) throw RecordError(fmt::format("node name '{}' cannot name a system log file", name.node));
  const fs::path directory = trial_dir / kSystemDirName;
  path_ = directory / *file;
  if (::mkdir(directory.c_str(), 0750) != 0 && errno != EEXIST) {
    throw RecordError(fmt::format("cannot create {}: {}", directory.string(), std::strerror(errno)));
  }
  // The directory itself, never a link put in its place: the log is created inside it.
  UniqueFd dir(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) throw RecordError(fmt::format("cannot open {}: {}", directory.string(), std::strerror(errno)));
  fd_ = UniqueFd(::openat(dir.get(), file->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                          kMetricsLogFileMode));
  if (!fd_) throw RecordError(fmt::format("cannot create {}: {}", path_.string(), std::strerror(errno)));
  ::fchmod(fd_.get(), kMetricsLogFileMode);  // whatever the umask: whoever reads trial.h5 reads this
  std::vector<std::byte> header;
  append_metrics_log_header(header);
  write_all(fd_.get(), header, path_);
}

void SystemLogWriter::append(double wall_time, const std::map<std::string, double>& values) {
  std::vector<std::byte> bytes;
  std::vector<std::pair<std::uint32_t, double>> row;
  row.reserve(values.size());
  for (const auto& [name, value] : values) {
    auto found = ids_.find(name);
    if (found == ids_.end()) {
      const auto id = static_cast<std::uint32_t>(ids_.size());
      append_metric_name_record(bytes, id, name);
      found = ids_.emplace(name, id).first;
    }
    row.emplace_back(found->second, value);
  }
  append_metric_row_record(bytes, MetricTableId::training, next_step_, wall_time, row);
  write_all(fd_.get(), bytes, path_);
  ++next_step_;
}

std::vector<SystemSeries> load_system_series(const fs::path& trial_dir) {
  std::vector<SystemSeries> all;
  const fs::path directory = trial_dir / kSystemDirName;
  std::error_code error;
  if (!fs::is_directory(fs::symlink_status(directory, error))) return all;  // no samples (yet)
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    const auto name = parse_system_log_file_name(entry.path().filename().string());
    if (!name) continue;
    auto bytes = read_metrics_log_bytes(entry.path());
    if (!bytes) continue;  // gone since the listing
    TrialRecord record;
    apply_metrics_log(*bytes, record, entry.path());
    all.push_back(SystemSeries{*name, std::move(record.training)});
  }
  std::sort(all.begin(), all.end(), [](const SystemSeries& a, const SystemSeries& b) {
    return std::tie(a.name.attempt, a.name.rank, a.name.node) < std::tie(b.name.attempt, b.name.rank, b.name.node);
  });
  return all;
}

}  // namespace dlx::record
