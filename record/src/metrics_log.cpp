// SPDX-License-Identifier: Apache-2.0
// The metrics log's records (format and protocol: dlx/record/metrics_log.hpp).
#include "dlx/record/metrics_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "dlx/common/crc32c.hpp"
#include "dlx/common/file_kind.hpp"
#include "dlx/common/unique_fd.hpp"
#include "layout.hpp"

namespace dlx::record {
namespace {

constexpr std::array<char, 8> kMagic = {'D', 'L', 'X', 'M', 'L', 'O', 'G', '\0'};
constexpr std::uint32_t kLogFormatVersion = 1;
constexpr std::string_view kPrefix = "metrics.", kSuffix = ".log";
constexpr std::uint8_t kName = 1, kRow = 2, kDrop = 3;
constexpr std::size_t kRowFixedBytes = 1 + 1 + 8 + 8, kValueBytes = 4 + 8;
constexpr std::uint32_t kUnmapped = std::numeric_limits<std::uint32_t>::max();

template <typename T>
void put(std::vector<std::byte>& out, T value) {
  const auto at = out.size();
  out.resize(at + sizeof value);
  std::memcpy(out.data() + at, &value, sizeof value);
}

template <typename T>
T get(const std::byte* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

// Reserves the record header, returns where the payload starts; finish_record fills it in.
std::size_t begin_record(std::vector<std::byte>& out, std::uint8_t type) {
  const auto start = out.size();
  out.resize(start + kMetricsLogRecordHeaderBytes);
  put(out, type);
  return start;
}

void finish_record(std::vector<std::byte>& out, std::size_t start) {
  const auto payload = std::span(out).subspan(start + kMetricsLogRecordHeaderBytes);
  const auto size = static_cast<std::uint32_t>(payload.size());
  const std::uint32_t crc = dlx::crc32c(payload);
  std::memcpy(out.data() + start, &size, sizeof size);
  std::memcpy(out.data() + start + sizeof size, &crc, sizeof crc);
}

bool valid_table(std::uint8_t table, bool both_allowed) {
  return table <= static_cast<std::uint8_t>(both_allowed ? MetricTableId::both : MetricTableId::validation);
}

// One record's payload applied; false when it makes no sense (treated as the end of the log).
bool apply_payload(std::span<const std::byte> payload, MetricRowApplier& applier,
                   std::vector<std::pair<std::uint32_t, double>>& values) {
  const auto type = static_cast<std::uint8_t>(payload[0]);
  const std::byte* at = payload.data() + 1;
  const std::size_t rest = payload.size() - 1;
  if (type == kName) {
    if (rest < 4 + 1) return false;
    applier.define(get<std::uint32_t>(at),
                   std::string(reinterpret_cast<const char*>(at + 4), rest - 4));
    return true;
  }
  if (type == kRow) {
    if (rest < kRowFixedBytes - 1 || (rest - (kRowFixedBytes - 1)) % kValueBytes != 0) return false;
    const auto table = get<std::uint8_t>(at);
    if (!valid_table(table, false)) return false;
    const auto step = get<std::int64_t>(at + 1);
    const auto wall_time = get<double>(at + 9);
    values.clear();
    for (const std::byte* value = at + 17; value < payload.data() + payload.size(); value += kValueBytes)
      values.emplace_back(get<std::uint32_t>(value), get<double>(value + 4));
    applier.row(static_cast<MetricTableId>(table), step, wall_time, values);
    return true;
  }
  if (type == kDrop) {
    if (rest != 1 + 8) return false;
    const auto table = get<std::uint8_t>(at);
    if (!valid_table(table, true)) return false;
    applier.drop(static_cast<MetricTableId>(table), get<std::int64_t>(at + 1));
    return true;
  }
  return false;
}

}  // namespace

std::string metrics_log_name(std::uint64_t generation) {
  return fmt::format("{}{}{}", kPrefix, generation, kSuffix);
}

std::optional<std::uint64_t> metrics_log_generation(std::string_view file_name) {
  if (!file_name.starts_with(kPrefix) || !file_name.ends_with(kSuffix)) return std::nullopt;
  const auto digits = file_name.substr(kPrefix.size(), file_name.size() - kPrefix.size() - kSuffix.size());
  std::uint64_t generation = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), generation);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() || generation == 0 ||
      digits.front() == '0')
    return std::nullopt;
  return generation;
}

void append_metrics_log_header(std::vector<std::byte>& out) {
  for (char c : kMagic) out.push_back(static_cast<std::byte>(c));
  put(out, kLogFormatVersion);
  put(out, std::uint32_t{0});
}

void append_metric_name_record(std::vector<std::byte>& out, std::uint32_t id, std::string_view name) {
  const auto start = begin_record(out, kName);
  put(out, id);
  const auto at = out.size();
  out.resize(at + name.size());
  std::memcpy(out.data() + at, name.data(), name.size());
  finish_record(out, start);
}

void append_metric_row_record(std::vector<std::byte>& out, MetricTableId table, std::int64_t step,
                              double wall_time,
                              std::span<const std::pair<std::uint32_t, double>> values) {
  // The hot one (a record per report, written by the flusher): sized once, filled in place.
  const auto start = out.size();
  const auto payload = kRowFixedBytes + values.size() * kValueBytes;
  out.resize(start + kMetricsLogRecordHeaderBytes + payload);
  std::byte* at = out.data() + start + kMetricsLogRecordHeaderBytes;
  auto store = [&at](const auto& value) {
    std::memcpy(at, &value, sizeof value);
    at += sizeof value;
  };
  store(kRow);
  store(static_cast<std::uint8_t>(table));
  store(step);
  store(wall_time);
  for (const auto& [id, value] : values) {
    store(id);
    store(value);
  }
  finish_record(out, start);
}

void append_metric_drop_record(std::vector<std::byte>& out, MetricTableId table, std::int64_t from_step) {
  const auto start = begin_record(out, kDrop);
  put(out, static_cast<std::uint8_t>(table));
  put(out, from_step);
  finish_record(out, start);
}

std::optional<std::string> metric_name_problem(std::string_view name) {
  if (name.empty()) return std::string("a metric name is empty");
  if (name == "." || name == layout::kStepsDataset || name == layout::kWallTimeDataset)
    return fmt::format("'{}' is a name trial.h5 keeps for itself; rename the metric", name);
  if (name.find(layout::kSlashInDatasetNames) != std::string_view::npos)
    return fmt::format("metric name '{}' contains U+2215 (a division slash), which trial.h5 keeps for the '/' of "
                       "metric names; write '/' itself", name);
  if (name.find('\0') != std::string_view::npos)
    return std::string("a metric name contains a NUL character");
  if (name.size() > kMaxMetricNameBytes)
    return fmt::format("a metric name of {} bytes is over the {}-byte limit", name.size(), kMaxMetricNameBytes);
  return std::nullopt;
}

void MetricRowApplier::define(std::uint32_t id, std::string name) {
  if (auto problem = metric_name_problem(name)) throw RecordError(*problem);
  if (id >= kMaxMetricNames * 2)  // ids are dense from 0; two tables' worth is plenty
    throw RecordError(fmt::format("metric id {} is over the limit of {} names", id, kMaxMetricNames));
  if (id < names_.size() && !names_[id].empty())
    throw RecordError(fmt::format("metric id {} is defined twice", id));
  if (id >= names_.size()) {
    names_.resize(id + 1);
    for (auto& metrics : metrics_) metrics.resize(id + 1, kUnmapped);
  }
  names_[id] = std::move(name);
}

MetricTable& MetricRowApplier::table(MetricTableId id) {
  return id == MetricTableId::training ? record_->training : record_->validation;
}

std::uint32_t MetricRowApplier::metric(MetricTable& table, std::size_t table_index, std::uint32_t id) {
  if (id >= names_.size() || names_[id].empty())
    throw RecordError(fmt::format("metric id {} is used before it is named", id));
  auto& mapped = metrics_[table_index][id];
  if (mapped == kUnmapped) mapped = table.add_name(names_[id]);
  return mapped;
}

void MetricRowApplier::row(MetricTableId id, std::int64_t step, double wall_time,
                           std::span<const std::pair<std::uint32_t, double>> values) {
  auto& target = table(id);
  const auto index = static_cast<std::size_t>(id);
  target.open_row(step, wall_time);
  for (const auto& [metric_id, value] : values) target.set(metric(target, index, metric_id), value);
}

void MetricRowApplier::drop(MetricTableId id, std::int64_t from_step) {
  if (id != MetricTableId::validation) record_->training.drop_from(from_step);
  if (id != MetricTableId::training) record_->validation.drop_from(from_step);
}

MetricsLogReplay apply_metrics_log(std::span<const std::byte> bytes, TrialRecord& record,
                                   const std::filesystem::path& shown) {
  if (bytes.size() < kMetricsLogHeaderBytes ||
      std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0) {
    // A writer killed between creating the file and its header's fsync leaves it short.
    if (bytes.size() < kMetricsLogHeaderBytes &&
        std::memcmp(bytes.data(), kMagic.data(), std::min(bytes.size(), kMagic.size())) == 0)
      return {0, 0, bytes.size()};
    throw RecordError(fmt::format("{} is not a dlx metrics log (its first bytes are not "
                                      "\"DLXMLOG\"); move it out of the trial directory", shown.string()));
  }
  const auto version = get<std::uint32_t>(bytes.data() + kMagic.size());
  if (version > kLogFormatVersion)
    throw RecordError(fmt::format("{} is metrics log format {}, newer than this dlx reads ({}); "
                                      "read it with the dlx that wrote it", shown.string(), version,
                                      kLogFormatVersion));
  MetricRowApplier applier(record);
  std::vector<std::pair<std::uint32_t, double>> values;
  MetricsLogReplay replay;
  std::size_t at = kMetricsLogHeaderBytes;
  while (bytes.size() - at >= kMetricsLogRecordHeaderBytes) {
    const auto size = get<std::uint32_t>(bytes.data() + at);
    const auto crc = get<std::uint32_t>(bytes.data() + at + 4);
    if (size == 0 || size > kMaxMetricsLogPayloadBytes ||
        size > bytes.size() - at - kMetricsLogRecordHeaderBytes)
      break;
    const auto payload = bytes.subspan(at + kMetricsLogRecordHeaderBytes, size);
    if (dlx::crc32c(payload) != crc) break;
    try {
      if (!apply_payload(payload, applier, values)) break;
    } catch (const RecordError& error) {
      throw RecordError(fmt::format("{}, record at byte {}: {}", shown.string(), at, error.what()));
    }
    at += kMetricsLogRecordHeaderBytes + size;
    ++replay.records;
  }
  replay.valid_bytes = at;
  replay.ignored_bytes = bytes.size() - at;
  return replay;
}

std::optional<std::vector<std::byte>> read_metrics_log_bytes(const std::filesystem::path& path) {
  // O_NONBLOCK: a FIFO in the log's place is refused below instead of waited on.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return std::nullopt;
    throw RecordError(fmt::format("cannot open {}: {}{}", path.string(), std::strerror(errno),
                                  errno == ELOOP ? " (a symbolic link where dlx writes a file)" : ""));
  }
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0)
    throw RecordError(fmt::format("cannot stat {}: {}", path.string(), std::strerror(errno)));
  if (!S_ISREG(status.st_mode))
    throw RecordError(fmt::format("{} is {}, not a metrics log; move it out of the trial directory", path.string(),
                                  describe_file_kind(status.st_mode)));
  if (static_cast<std::uint64_t>(status.st_size) > kMaxMetricsLogBytes)
    throw RecordError(fmt::format("{} is {} bytes, over the {}-byte limit of a metrics log (the "
                                  "trial's writer compacts it into trial.h5 long before)",
                                  path.string(), status.st_size, kMaxMetricsLogBytes));
  std::vector<std::byte> bytes(static_cast<std::size_t>(status.st_size));
  std::size_t filled = 0;
  while (filled < bytes.size()) {
    const auto n = ::read(fd.get(), bytes.data() + filled, bytes.size() - filled);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw RecordError(fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
    if (n == 0) break;  // shorter than it was a moment ago: read what is there
    filled += static_cast<std::size_t>(n);
  }
  bytes.resize(filled);
  return bytes;
}

std::uint64_t apply_metrics_logs(const std::filesystem::path& directory, std::uint64_t from,
                                 TrialRecord& record) {
  // A writer leaves two generations after trial.h5 (one being compacted, one being written), a
  // few more while trial.h5 cannot be written (it backs off: MetricsPipeline); a long chain was
  // made by hand, and is refused rather than walked.
  constexpr std::uint64_t kMaxChain = 1024;
  for (std::uint64_t generation = from;; ++generation) {
    if (generation - from == kMaxChain)
      throw RecordError(fmt::format("{} and the {} metrics logs after it: dlx writes at most a "
                                        "few; remove the ones trial.h5 does not need",
                                        (directory / metrics_log_name(from)).string(), kMaxChain - 1));
    const auto path = directory / metrics_log_name(generation);
    auto bytes = read_metrics_log_bytes(path);
    if (!bytes) return generation;
    apply_metrics_log(*bytes, record, path);
  }
}

int retire_metrics_logs(const std::filesystem::path& directory, std::uint64_t generation) {
  int removed = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    const auto found = metrics_log_generation(entry.path().filename().string());
    if (found && *found < generation && ::unlink(entry.path().c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace dlx::record
