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
  if (!node_name_ok(name.node) || name.rank < 0 || name.attempt < 0 || name.part < 0) return std::nullopt;
  std::string file = fmt::format("{}{}{}{}{}.{}{}", name.node, kSystemRankPart, name.rank, kSystemAttemptPart,
                                 name.attempt, name.part, kSystemLogSuffix);
  if (file.size() > kMaxSystemLogFileName) return std::nullopt;
  return file;
}

std::optional<SystemLogName> parse_system_log_file_name(std::string_view file) {
  if (!file.ends_with(kSystemLogSuffix)) return std::nullopt;
  file.remove_suffix(kSystemLogSuffix.size());
  const auto part_at = file.rfind('.');
  if (part_at == std::string_view::npos) return std::nullopt;
  const auto part = number(file.substr(part_at + 1));
  file = file.substr(0, part_at);
  const auto attempt_at = file.rfind(kSystemAttemptPart);
  if (attempt_at == std::string_view::npos) return std::nullopt;
  const auto rank_at = file.substr(0, attempt_at).rfind(kSystemRankPart);
  if (rank_at == std::string_view::npos) return std::nullopt;
  SystemLogName name;
  name.node = std::string(file.substr(0, rank_at));
  const auto rank = number(file.substr(rank_at + kSystemRankPart.size(), attempt_at - rank_at - kSystemRankPart.size()));
  const auto attempt = number(file.substr(attempt_at + kSystemAttemptPart.size()));
  if (!rank || !attempt || !part || !node_name_ok(name.node)) return std::nullopt;
  name.rank = *rank;
  name.attempt = *attempt;
  name.part = *part;
  return name;
}

SystemLogWriter::SystemLogWriter(const fs::path& trial_dir, const SystemLogName& name)
    : directory_(trial_dir / kSystemDirName), name_(name) {
  if (::mkdir(directory_.c_str(), 0750) != 0 && errno != EEXIST) {
    throw RecordError(fmt::format("cannot create {}: {}", directory_.string(), std::strerror(errno)));
  }
  open_part();
}

void SystemLogWriter::open_part() {
  const auto file = system_log_file_name(name_);
  if (!file) throw RecordError(fmt::format("node name '{}' cannot name a system log file", name_.node));
  path_ = directory_ / *file;
  // The directory itself, never a link put in its place: the log is created inside it.
  UniqueFd dir(::open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) throw RecordError(fmt::format("cannot open {}: {}", directory_.string(), std::strerror(errno)));
  fd_ = UniqueFd(::openat(dir.get(), file->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                          kMetricsLogFileMode));
  if (!fd_) throw RecordError(fmt::format("cannot create {}: {}", path_.string(), std::strerror(errno)));
  ::fchmod(fd_.get(), kMetricsLogFileMode);  // whatever the umask: whoever reads trial.h5 reads this
  ids_.clear();  // each part defines its names again: it is read on its own
  std::vector<std::byte> header;
  append_metrics_log_header(header);
  write_all(fd_.get(), header, path_);
}

void SystemLogWriter::append(double wall_time, const std::map<std::string, double>& values) {
  if (next_step_ > 0 && next_step_ % kSystemRowsPerPart == 0) {
    ++name_.part;
    open_part();
  }
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

namespace {

// The system logs of the trial by their names, ordered by attempt, rank, node, part.
std::vector<std::pair<SystemLogName, fs::path>> system_logs(const fs::path& trial_dir) {
  std::vector<std::pair<SystemLogName, fs::path>> logs;
  const fs::path directory = trial_dir / kSystemDirName;
  std::error_code error;
  if (!fs::is_directory(fs::symlink_status(directory, error))) return logs;  // no samples (yet)
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    if (auto name = parse_system_log_file_name(entry.path().filename().string())) logs.emplace_back(*name, entry.path());
  }
  std::sort(logs.begin(), logs.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.attempt, a.first.rank, a.first.node, a.first.part) <
           std::tie(b.first.attempt, b.first.rank, b.first.node, b.first.part);
  });
  return logs;
}

bool same_run_and_rank(const SystemLogName& a, const SystemLogName& b) {
  return a.attempt == b.attempt && a.rank == b.rank && a.node == b.node;
}

// Joins the parts of each run and rank, `logs` ordered as system_logs orders them.
std::vector<SystemSeries> load(const std::vector<std::pair<SystemLogName, fs::path>>& logs) {
  std::vector<SystemSeries> all;
  for (const auto& [name, path] : logs) {
    auto bytes = read_metrics_log_bytes(path);
    if (!bytes) continue;  // gone since the listing
    TrialRecord record;
    apply_metrics_log(*bytes, record, path);
    if (all.empty() || !same_run_and_rank(all.back().name, name)) {
      all.push_back(SystemSeries{name, std::move(record.training)});
      continue;
    }
    // A later part: its rows continue the run's (their steps go on from the last part's).
    auto& samples = all.back().samples;
    const auto& part = record.training;
    for (std::size_t row = 0; row < part.rows(); ++row) {
      samples.open_row(part.steps()[row], part.wall_times()[row]);
      for (const auto& cell : part.cells(row)) samples.set(samples.add_name(part.names()[cell.metric]), cell.value);
    }
    all.back().name.part = name.part;
  }
  return all;
}

}  // namespace

std::vector<SystemSeries> load_system_series(const fs::path& trial_dir) { return load(system_logs(trial_dir)); }

std::vector<SystemSeries> load_latest_system_samples(const fs::path& trial_dir) {
  auto logs = system_logs(trial_dir);
  if (logs.empty()) return {};
  const int attempt = logs.back().first.attempt;
  std::vector<std::pair<SystemLogName, fs::path>> latest;
  for (std::size_t i = 0; i < logs.size(); ++i) {
    const bool last_part = i + 1 == logs.size() || !same_run_and_rank(logs[i + 1].first, logs[i].first);
    if (logs[i].first.attempt == attempt && last_part) latest.push_back(logs[i]);
  }
  return load(latest);
}

}  // namespace dlx::record
