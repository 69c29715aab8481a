// SPDX-License-Identifier: Apache-2.0
#include "metrics_pipeline.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <limits>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "dlx/common/clock.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/common/error.hpp"
#include "metric_line_printer.hpp"
#include "metric_log.hpp"

namespace dlx::detail {
namespace {

using record::MetricTableId;
using Clock = std::chrono::steady_clock;

double unix_time_now() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

std::int64_t environment_number(const char* name, std::int64_t low, std::int64_t high,
                                std::int64_t fallback, const char* unit) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  const std::string_view value(text);
  std::int64_t number = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (error != std::errc() || end != value.data() + value.size() || number < low || number > high)
    throw TrialError(fmt::format("dlx: {}='{}' is not a whole number of {} from {} to {}; unset it "
                                 "for the default ({})", name, value.substr(0, 40), unit, low, high, fallback));
  return number;
}

}  // namespace

MetricsPipelineOptions MetricsPipelineOptions::from_environment() {
  MetricsPipelineOptions options;
  options.flush_interval = std::chrono::milliseconds(
      environment_number("DLX_METRICS_FLUSH_MS", 1, 60000, options.flush_interval.count(), "milliseconds"));
  options.min_compaction_interval = std::chrono::seconds(environment_number(
      "DLX_METRICS_COMPACT_S", 0, 86400,
      std::chrono::duration_cast<std::chrono::seconds>(options.min_compaction_interval).count(), "seconds"));
  options.print_stats = environment_number("DLX_METRICS_STATS", 0, 1, 0, "(0 or 1)") == 1;
  return options;
}

MetricsPipeline::MetricsPipeline(std::filesystem::path record_path, record::TrialRecord record,
                                 MetricsPipelineOptions options)
    : record_path_(std::move(record_path)), options_(options), record_(std::move(record)), writer_(record_path_) {
  // The record has every log up to its metrics_log applied: continue in that generation, with
  // the whole record written once; from then on trial.h5 is extended, and only the rows it lacks
  // are kept here.
  generation_ = record_.metrics_log - 1;
  {
    std::lock_guard file(file_mutex_);
    start_new_generation();
  }
  record_.metrics_log = generation_;
  record_.updated_unix = unix_seconds_now();
  writer_.write(record_);
  record::retire_metrics_logs(record_path_.parent_path(), record_.metrics_log);
  for (auto id : {MetricTableId::training, MetricTableId::validation}) {
    auto& table = id == MetricTableId::training ? record_.training : record_.validation;
    if (!table.empty()) saved_[static_cast<std::size_t>(id)].last_step = table.steps().back();
    table.clear_rows();
  }
  last_compaction_ = Clock::now();
  if (options_.print_as_trial) printer_ = std::make_unique<MetricLinePrinter>(STDOUT_FILENO);
  flusher_ = std::thread([this] { flusher_loop(); });
  compactor_ = std::thread([this] { compactor_loop(); });
}

MetricsPipeline::~MetricsPipeline() {
  try {
    commit(nullptr);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "dlx: metrics reported last may be lost: %s\n", error.what());
  }
  {
    std::lock_guard lock(control_mutex_);
    stopping_ = true;
  }
  control_changed_.notify_all();
  flusher_.join();
  compactor_.join();
  if (options_.print_stats) {
    const auto& s = stats_;
    std::fprintf(stderr,
                 "dlx-metrics-stats: {\"reports\": %llu, \"flushes\": %llu, \"max_lag_s\": %.6f, "
                 "\"mean_lag_s\": %.6f, \"compactions\": %llu, \"compaction_s\": %.6f, "
                 "\"max_compaction_s\": %.6f, \"backpressure_waits\": %llu, \"backpressure_s\": %.6f}\n",
                 static_cast<unsigned long long>(s.reports), static_cast<unsigned long long>(s.flushes),
                 s.max_lag_seconds, s.flushes ? s.lag_seconds_sum / static_cast<double>(s.flushes) : 0.0,
                 static_cast<unsigned long long>(s.compactions), s.compaction_seconds, s.max_compaction_seconds,
                 static_cast<unsigned long long>(backpressure_waits_), backpressure_seconds_);
  }
}

std::uint32_t MetricsPipeline::id_of(const std::string& name) {
  const auto found = ids_.find(name);
  if (found != ids_.end()) return found->second;
  const auto id = static_cast<std::uint32_t>(ids_.size());
  ids_.emplace(name, id);
  if (pending_.new_names.empty()) pending_.first_new_id = id;
  pending_.new_names.push_back(name);
  return id;
}

void MetricsPipeline::note_first_entry() {
  if (pending_.entries.empty())
    pending_since_ns_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
}

void MetricsPipeline::keep_up_with_flusher(std::unique_lock<std::mutex>& lock) {
  // A batch this large is written now rather than at the interval: a flush stays short, so the
  // lag stays near the interval even at a million reports a second.
  if (pending_.values.size() >= kEarlyFlushValues && !early_flush_.exchange(true)) control_changed_.notify_all();
  // The clock is read every 16th entry: at a report a second that is a check every 16 s, and a
  // program that slow never outruns the flusher; one reporting fast enough to do so gets here
  // many times an interval.
  if ((pending_.entries.size() & 15) != 0 && pending_.values.size() < 2 * kEarlyFlushValues) return;
  const auto start = Clock::now();
  auto waiting_for = behind(start);
  if (waiting_for == Behind::none) return;
  early_flush_ = true;
  control_changed_.notify_all();
  pending_taken_.wait_until(lock, start + kLongestBackpressureWait,
                            [&] { return (waiting_for = behind(Clock::now())) == Behind::none; });
  backpressure_waits_ += 1;
  backpressure_seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
  if (waiting_for == Behind::none) return;
  // Storage that hangs rather than lags: the reports go on, held in memory, as they did before
  // they waited; the next wait comes once that thread moves again.
  const bool flusher = waiting_for == Behind::flusher;
  (flusher ? flusher_stalled_ : compactor_stalled_) = true;
  std::fprintf(stderr,
               "dlx: %s %s has not %s for %lld s (slow or hung storage?): reports go on without "
               "waiting for it, held in memory, and a kill now may lose more than the last second "
               "of them\n",
               flusher ? "the metrics log beside" : "the rewrite of", record_path_.c_str(),
               flusher ? "taken a write" : "ended", static_cast<long long>(kLongestBackpressureWait.count()));
}

MetricsPipeline::Behind MetricsPipeline::behind(Clock::time_point now) {
  // The flusher: it takes the buffer one interval after its first report, or at once past
  // kEarlyFlushValues; twice as many values mean it is still writing the previous one (whose
  // length this bounds: a write of at most a few tens of MiB).
  if (!flusher_stalled_) {
    if (pending_.values.size() >= 2 * kEarlyFlushValues) return Behind::flusher;
    if (const auto since = pending_since_ns_.load(std::memory_order_relaxed);
        since != 0 && now - Clock::time_point(Clock::duration(since)) >= kBackpressureIntervals * options_.flush_interval)
      return Behind::flusher;
  }
  // The compactor: one is due at kCompactionCells, so twice as many while one runs means it is
  // still writing. None running (a failed one waits for its next try, a failing flusher starts
  // none): nothing to wait for.
  if (!compactor_stalled_ && uncompacted_cells_.load(std::memory_order_relaxed) >= 2 * kCompactionCells) {
    std::lock_guard control(control_mutex_);
    if (compacting_) return Behind::compactor;
  }
  return Behind::none;
}

void MetricsPipeline::compaction_ended() {
  {
    std::lock_guard lock(pending_mutex_);
    compactor_stalled_ = false;
  }
  pending_taken_.notify_all();
}

void MetricsPipeline::set_uncompacted_cells() {
  uncompacted_cells_.store(record_.training.cell_count() + record_.validation.cell_count(),
                           std::memory_order_relaxed);
}

void MetricsPipeline::report(MetricTableId table, std::int64_t step, const Metrics& metrics) {
  const double wall_time = unix_time_now();
  std::unique_lock lock(pending_mutex_);
  note_first_entry();
  // Most programs report the same names every step: compare with the previous report's names
  // instead of looking each one up.
  if (!has_names(metrics, last_names_)) {
    last_names_.clear();
    last_ids_.clear();
    for (const auto& [name, value] : metrics) {
      last_names_.push_back(name);
      last_ids_.push_back(id_of(name));
    }
  }
  Entry entry;
  entry.table = table;
  entry.step = step;
  entry.wall_time = wall_time;
  entry.first_value = static_cast<std::uint32_t>(pending_.values.size());
  entry.value_count = static_cast<std::uint32_t>(metrics.size());
  std::size_t i = 0;
  for (const auto& [name, value] : metrics) pending_.values.emplace_back(last_ids_[i++], value);
  pending_.entries.push_back(entry);
  keep_up_with_flusher(lock);
}

std::vector<std::uint32_t> MetricsPipeline::ids_of(const std::vector<std::string>& names) {
  std::lock_guard lock(pending_mutex_);
  std::vector<std::uint32_t> ids;
  ids.reserve(names.size());
  for (const auto& name : names) ids.push_back(id_of(name));
  return ids;
}

void MetricsPipeline::report_values(MetricTableId table, std::int64_t step, std::span<const std::uint32_t> ids,
                                    std::span<const double> values) {
  const double wall_time = unix_time_now();
  std::unique_lock lock(pending_mutex_);
  note_first_entry();
  Entry entry;
  entry.table = table;
  entry.step = step;
  entry.wall_time = wall_time;
  entry.first_value = static_cast<std::uint32_t>(pending_.values.size());
  entry.value_count = static_cast<std::uint32_t>(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) pending_.values.emplace_back(ids[i], values[i]);
  pending_.entries.push_back(entry);
  keep_up_with_flusher(lock);
}

void MetricsPipeline::drop_from(std::int64_t step) {
  std::lock_guard lock(pending_mutex_);
  note_first_entry();
  Entry entry;
  entry.drop = true;
  entry.table = MetricTableId::both;
  entry.step = step;
  pending_.entries.push_back(entry);
}

void MetricsPipeline::flush_soon() {
  {
    std::lock_guard lock(control_mutex_);
    ++flush_requests_;
    compaction_requested_ = true;
  }
  control_changed_.notify_all();
}

void MetricsPipeline::flush() {
  std::unique_lock lock(control_mutex_);
  const auto ticket = ++flush_requests_;
  control_changed_.notify_all();
  control_changed_.wait(lock, [&] { return flushes_done_ >= ticket; });
  if (!error_.empty()) throw TrialError(error_);
}

void MetricsPipeline::commit(const std::function<void(record::TrialRecord&)>& edit) {
  flush();
  {
    std::unique_lock lock(control_mutex_);
    control_changed_.wait(lock, [&] { return !compacting_; });
    compacting_ = true;
  }
  std::string failure;
  try {
    write_snapshot(rotate_and_snapshot(edit));
  } catch (const std::exception& error) {
    failure = error.what();
  }
  {
    std::lock_guard lock(control_mutex_);
    compacting_ = false;
    rows_since_compaction_ = false;
    last_compaction_ = Clock::now();
  }
  control_changed_.notify_all();
  compaction_ended();
  if (!failure.empty()) throw TrialError(failure);
}

void MetricsPipeline::flusher_loop() {
  for (;;) {
    std::uint64_t target = 0;
    bool stop = false;
    {
      // One interval after the buffer's first report, not after the last flush ended: a report
      // made during a long write waits no longer for the next one than the interval.
      auto wake = Clock::now() + options_.flush_interval;
      if (const auto since = pending_since_ns_.load(std::memory_order_relaxed); since != 0)
        wake = std::min(wake, Clock::time_point(Clock::duration(since)) + options_.flush_interval);
      std::unique_lock lock(control_mutex_);
      control_changed_.wait_until(lock, wake, [&] {
        return stopping_ || flush_requests_ > flushes_done_ || early_flush_.load();
      });
      target = flush_requests_;
      stop = stopping_;
    }
    std::string failure;
    try {
      flush_once();
    } catch (const std::exception& error) {
      failure = error.what();
    }
    if (compaction_due_after(failure, stop)) start_compaction();
    {
      std::lock_guard lock(control_mutex_);
      flushes_done_ = std::max(flushes_done_, target);
    }
    control_changed_.notify_all();
    if (stop) return;
  }
}

bool MetricsPipeline::compaction_due_after(const std::string& failure, bool stopping) {
  std::lock_guard lock(control_mutex_);
  if (!failure.empty()) {
    if (error_ != failure) std::fprintf(stderr, "dlx: %s (retrying every flush)\n", failure.c_str());
    error_ = failure;
  } else {
    error_.clear();
  }
  // A checkpoint asks for a compaction now, but even those keep 50 rewrites' durations apart:
  // a program that checkpoints every second must not spend its flusher rewriting trial.h5.
  const auto since = Clock::now() - last_compaction_;
  const auto cost_spacing = 50 * last_compaction_took_;
  const auto spacing = std::max<Clock::duration>(options_.min_compaction_interval, cost_spacing);
  // Past kCompactionCells a compaction is due at once: the rows wait in memory until one.
  const bool full = uncompacted_cells_.load(std::memory_order_relaxed) >= kCompactionCells;
  const bool compact = error_.empty() && !compacting_ && !stopping &&
                       ((compaction_requested_ && since >= cost_spacing) ||
                        (rows_since_compaction_ && (since >= spacing || full)));
  if (compact) {
    compacting_ = true;
    compaction_requested_ = false;
  }
  return compact;
}

void MetricsPipeline::start_compaction() {
  std::optional<Snapshot> copy;
  try {
    copy = rotate_and_snapshot(nullptr);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "dlx: cannot start a new metrics log: %s\n", error.what());
  }
  {
    std::lock_guard lock(control_mutex_);
    if (copy) {
      to_compact_ = std::move(copy);
      rows_since_compaction_ = false;
      return;
    }
    compacting_ = false;
  }
  compaction_ended();
}

void MetricsPipeline::compactor_loop() {
  for (;;) {
    std::optional<Snapshot> snapshot;
    {
      std::unique_lock lock(control_mutex_);
      control_changed_.wait(lock, [&] { return stopping_ || to_compact_.has_value(); });
      if (!to_compact_) return;
      snapshot = std::move(to_compact_);
      to_compact_.reset();
    }
    const auto start = Clock::now();
    bool failed = false;
    try {
      write_snapshot(std::move(*snapshot));
    } catch (const std::exception& error) {
      // The log chain still holds everything (trial.h5 names the older generation, which is
      // kept), and record_ the rows: a later compaction tries again, each one twice as far apart,
      // so that a file system refusing trial.h5 for hours leaves a short chain of logs.
      std::fprintf(stderr, "dlx: cannot compact the metrics into %s: %s\n", record_path_.c_str(), error.what());
      failed = true;
    }
    {
      std::lock_guard lock(control_mutex_);
      compacting_ = false;
      last_compaction_ = Clock::now();
      last_compaction_took_ = failed ? std::max<Clock::duration>(2 * last_compaction_took_, std::chrono::seconds(1))
                                     : last_compaction_ - start;
      const double seconds = std::chrono::duration<double>(last_compaction_took_).count();
      stats_.compactions += 1;
      stats_.compaction_seconds += seconds;
      stats_.max_compaction_seconds = std::max(stats_.max_compaction_seconds, seconds);
    }
    control_changed_.notify_all();
    compaction_ended();
  }
}

void MetricsPipeline::flush_once() {
  // The flusher's batch goes back as the next buffer: its vectors keep their capacity, so that a
  // report seldom allocates (and never faults in fresh pages) once the rate is steady.
  Batch& batch = spare_;
  batch.entries.clear();
  batch.values.clear();
  batch.new_names.clear();
  {
    std::lock_guard lock(pending_mutex_);
    std::swap(batch, pending_);
    early_flush_ = false;
    pending_since_ns_.store(0, std::memory_order_relaxed);
    batches_taken_ += 1;
    flusher_stalled_ = false;
  }
  pending_taken_.notify_all();
  std::lock_guard file(file_mutex_);
  if (batch.empty() && unwritten_.empty()) return;
  // Encode, write and fdatasync first (the report is durable then), apply to the record after:
  // the record only feeds compactions, which wait for every byte to be written.
  encode_batch(batch);
  std::exception_ptr write_failure;
  try {
    write_unwritten();
  } catch (...) {
    write_failure = std::current_exception();  // the bytes stay in unwritten_ for the next try
  }
  apply_to_record(batch);
  account_flush(batch, /*written=*/!write_failure);
  if (write_failure) std::rethrow_exception(write_failure);
  print_lines(batch);
}

void MetricsPipeline::encode_batch(const Batch& batch) {
  names_.insert(names_.end(), batch.new_names.begin(), batch.new_names.end());
  named_in_log_.resize(names_.size(), false);
  for (const auto& entry : batch.entries) {
    if (entry.drop) {
      record::append_metric_drop_record(unwritten_, entry.table, entry.step);
      continue;
    }
    const auto values = std::span(batch.values).subspan(entry.first_value, entry.value_count);
    for (const auto& [id, value] : values) {
      if (named_in_log_[id]) continue;
      record::append_metric_name_record(unwritten_, id, names_[id]);
      named_in_log_[id] = true;
    }
    record::append_metric_row_record(unwritten_, entry.table, entry.step, entry.wall_time, values);
  }
}

void MetricsPipeline::apply_to_record(const Batch& batch) {
  std::lock_guard record(record_mutex_);
  for (std::size_t i = 0; i < batch.new_names.size(); ++i)
    applier_.define(batch.first_new_id + static_cast<std::uint32_t>(i), batch.new_names[i]);
  for (const auto& entry : batch.entries) {
    // What trial.h5 (and a compaction in flight) holds from this step on is replaced too.
    for (auto id : {MetricTableId::training, MetricTableId::validation})
      if (entry.table == id || (entry.drop && entry.table == MetricTableId::both))
        saved_[static_cast<std::size_t>(id)].replace_from(entry.step);
    if (entry.drop) {
      applier_.drop(entry.table, entry.step);
    } else {
      applier_.row(entry.table, entry.step, entry.wall_time,
                   std::span(batch.values).subspan(entry.first_value, entry.value_count));
    }
  }
  in_flight_[0] = std::min(in_flight_[0], record_.training.rows());
  in_flight_[1] = std::min(in_flight_[1], record_.validation.rows());
  set_uncompacted_cells();
}

void MetricsPipeline::account_flush(const Batch& batch, bool written) {
  double oldest = 0;
  std::uint64_t rows = 0;
  for (const auto& entry : batch.entries) {
    if (entry.drop) continue;
    if (rows++ == 0 || entry.wall_time < oldest) oldest = entry.wall_time;
  }
  const double lag = unix_time_now() - oldest;
  std::lock_guard lock(control_mutex_);
  if (!batch.entries.empty()) rows_since_compaction_ = true;
  if (written && rows > 0) {
    stats_.reports += rows;
    stats_.flushes += 1;
    stats_.max_lag_seconds = std::max(stats_.max_lag_seconds, lag);
    stats_.lag_seconds_sum += lag;
  }
}

void MetricsPipeline::write_unwritten() {
  std::size_t done = 0;
  while (done < unwritten_.size()) {
    const auto n = ::write(log_.get(), unwritten_.data() + done, unwritten_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int code = n < 0 ? errno : EIO;
      // A partial record would end the log for readers: cut it off, keep the bytes for a retry.
      if (::ftruncate(log_.get(), static_cast<off_t>(log_bytes_)) != 0 ||
          ::lseek(log_.get(), static_cast<off_t>(log_bytes_), SEEK_SET) < 0) {
        throw SystemError(fmt::format("cannot write the metrics log {} and cannot cut its torn end",
                                      (record_path_.parent_path() / record::metrics_log_name(generation_)).string()),
                          errno);
      }
      throw SystemError(fmt::format("cannot write the metrics log {}",
                                    (record_path_.parent_path() / record::metrics_log_name(generation_)).string()),
                        code);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fdatasync(log_.get()) != 0)
    throw SystemError(fmt::format("cannot fdatasync the metrics log {}",
                                  (record_path_.parent_path() / record::metrics_log_name(generation_)).string()),
                      errno);
  log_bytes_ += unwritten_.size();
  unwritten_.clear();
}

void MetricsPipeline::SavedRows::replace_from(std::int64_t step) {
  if (!last_step || step > *last_step) return;
  drop_from = std::min(drop_from.value_or(step), step);
  // Its rows are all before `step` now.
  last_step = step == std::numeric_limits<std::int64_t>::min() ? std::nullopt : std::optional(step - 1);
}

void MetricsPipeline::start_new_generation() {
  const auto directory = record_path_.parent_path();
  const auto next = generation_ + 1;
  const auto path = directory / record::metrics_log_name(next);
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                     record::kMetricsLogFileMode));
  if (!fd) {
    throw SystemError(fmt::format("cannot create the metrics log {}{}", path.string(),
                                  errno == EEXIST ? " (it exists: another writer of this trial is running, "
                                                    "or a file was put there; move it away)"
                                                  : ""),
                      errno);
  }
  // 0640 whatever the umask, as trial.h5: whoever may read trial.h5 (the experiment's group,
  // `dlx status`) must be able to read the log that continues it.
  std::vector<std::byte> header;
  record::append_metrics_log_header(header);
  if (::fchmod(fd.get(), record::kMetricsLogFileMode) != 0 ||
      ::write(fd.get(), header.data(), header.size()) != static_cast<ssize_t>(header.size()) ||
      ::fsync(fd.get()) != 0) {
    const int code = errno;
    ::unlink(path.c_str());
    throw SystemError(fmt::format("cannot write the metrics log {}", path.string()), code);
  }
  fsync_directory(directory);  // the new name is durable before anything depends on it
  log_ = std::move(fd);
  generation_ = next;
  log_bytes_ = header.size();
  named_in_log_.assign(names_.size(), false);
}

MetricsPipeline::Snapshot MetricsPipeline::rotate_and_snapshot(
    const std::function<void(record::TrialRecord&)>& edit) {
  std::lock_guard file(file_mutex_);
  if (!unwritten_.empty())
    throw TrialError("dlx: the metrics log has reports it could not write yet; trial.h5 is not rewritten");
  start_new_generation();
  std::lock_guard record(record_mutex_);
  if (edit) edit(record_);
  record_.metrics_log = generation_;
  record_.updated_unix = unix_seconds_now();
  // The rows trial.h5 lacks (O(rows since the last compaction)), and its drops: from now on a
  // replay that reaches these rows counts as reaching trial.h5's.
  Snapshot snapshot{record_, {}, {record_.training.rows(), record_.validation.rows()}};
  for (std::size_t t = 0; t < 2; ++t) {
    auto& saved = saved_[t];
    const auto& table = t == 0 ? record_.training : record_.validation;
    snapshot.drop_from[t] = std::exchange(saved.drop_from, std::nullopt);
    if (!table.empty()) saved.last_step = std::max(saved.last_step.value_or(table.steps().back()), table.steps().back());
    in_flight_[t] = snapshot.rows[t];
  }
  return snapshot;
}

void MetricsPipeline::write_snapshot(Snapshot snapshot) {
  const auto generation = snapshot.head.metrics_log;
  try {
    record::MetricTableChanges training{snapshot.drop_from[0], std::move(snapshot.head.training)};
    record::MetricTableChanges validation{snapshot.drop_from[1], std::move(snapshot.head.validation)};
    writer_.append(snapshot.head, training, validation);
  } catch (...) {
    // Not written: the rows stay (they are still record_'s first ones), and so do the drops.
    std::lock_guard record(record_mutex_);
    for (std::size_t t = 0; t < 2; ++t) {
      if (snapshot.drop_from[t])
        saved_[t].drop_from = std::min(saved_[t].drop_from.value_or(*snapshot.drop_from[t]), *snapshot.drop_from[t]);
      in_flight_[t] = 0;
    }
    throw;
  }
  {
    std::lock_guard record(record_mutex_);
    record_.training.drop_first_rows(in_flight_[0]);
    record_.validation.drop_first_rows(in_flight_[1]);
    in_flight_[0] = in_flight_[1] = 0;
    set_uncompacted_cells();
  }
  record::retire_metrics_logs(record_path_.parent_path(), generation);
}

void MetricsPipeline::print_lines(const Batch& batch) {
  if (!printer_) return;
  // Every validation row, and of the training rows the newest, at most once a second: a program
  // that reports its loss every step would otherwise fill its output file with them.
  const Entry* newest_training = nullptr;
  if (Clock::now() - last_training_line_ >= std::chrono::seconds(1)) {
    for (const auto& entry : batch.entries)
      if (!entry.drop && entry.table == MetricTableId::training) newest_training = &entry;
    if (newest_training != nullptr) last_training_line_ = Clock::now();
  }
  std::string lines;  // written at once, so that the program's own output comes between lines
  for (const auto& entry : batch.entries) {
    if (entry.drop || (entry.table == MetricTableId::training && &entry != newest_training)) continue;
    Metrics metrics;
    for (const auto& [id, value] : std::span(batch.values).subspan(entry.first_value, entry.value_count))
      metrics.emplace(names_[id], value);
    const char* kind = entry.table == MetricTableId::validation ? "validation" : "training";
    lines += format_metric_line(options_.print_as_trial, entry.step, kind, metrics);
    lines += '\n';
  }
  printer_->print(std::move(lines));  // never waits for the output's reader
}

}  // namespace dlx::detail
