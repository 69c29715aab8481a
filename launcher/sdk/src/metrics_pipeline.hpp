// SPDX-License-Identifier: Apache-2.0
#pragma once
// Rank 0's metrics: a report is an append to a buffer in memory (O(1), no I/O, no lock held by
// anything slow); a flusher thread writes the buffer to the trial's metrics log and fdatasyncs it
// at least every flush interval (0.5 s); a compactor thread folds the log into trial.h5 now and
// then, so that HDF5 tools see the metrics too. The files and the protocol readers rely on:
// dlx/record/metrics_log.hpp.
//
// Memory and compaction are O(rows since the last compaction), not O(rows): the constructor
// writes the whole record once, then keeps only the rows trial.h5 lacks (record_'s tables) and,
// per table, what trial.h5 holds (SavedRows: an upper bound of its last step, and the step from
// which a resume replaced its rows). A compaction takes a snapshot of those rows, and the
// TrialRecordWriter appends them to a copy of its last file (dlx/record/trial_record_writer.hpp);
// only once that is published are they dropped from record_. Rows reported meanwhile stay after
// them, and a drop meanwhile that reaches the snapshot's rows is remembered for the next write,
// so a failed compaction loses nothing: the next one writes the same rows again.
//
// Threads and locks (never two at once except in the order listed):
//   pending_mutex_  the training thread's buffer (report, drop_from) and the flusher's swap;
//   file_mutex_     the log file: the flusher's write + fdatasync, a generation change;
//   record_mutex_   record_ and saved_: the rows trial.h5 lacks as the log makes them (the
//                   flusher applies each batch; a compaction copies them and, once written,
//                   drops them; commit() edits the record's other fields);
//   control_mutex_  requests and progress between the threads (flush and compaction sequence
//                   numbers, the flusher's error).
// The training thread waits in commit() and flush() (finish(), a notice, resume, exit), and in a
// report when the flusher is behind: the flusher takes the buffer one flush interval after its
// first report; a buffer 1.5 intervals old has not been taken because the last write is still
// going (a disk slower than the reports, a machine out of CPU), and the report waits until it is.
// So a report is durable within about 1.5 intervals plus one write, and the buffer holds at most
// that much, at any rate (bench/metrics: the lag at rates the disk cannot take).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "dlx/record/metrics_log.hpp"
#include "dlx/record/trial_record.hpp"
#include "dlx/record/trial_record_writer.hpp"
#include "dlx/common/unique_fd.hpp"
#include "dlx/trial.hpp"
#include "metric_line_printer.hpp"

namespace dlx::detail {

struct MetricsPipelineOptions {
  // Half a second: a report is durable within the interval plus one write and fdatasync, so a
  // kill -9 loses at most the last second (bench/metrics measures the lag).
  std::chrono::milliseconds flush_interval{500};
  // A compaction rewrites trial.h5 (O(rows)); it runs at least this far apart, and at least 50
  // times its own duration apart, so that it takes at most ~2% of the flusher's core.
  std::chrono::milliseconds min_compaction_interval{10000};
  // Prints the reports written to the log (every validation row, the newest training row at most
  // once a second) as "dlx: trial 3 step 200 validation accuracy=0.912" lines on stdout, through
  // a thread of their own (metric_line_printer.hpp); nullopt: silent.
  std::optional<std::int64_t> print_as_trial;

  // At destruction, print what the threads did as one JSON line on stderr, prefixed
  // "dlx-metrics-stats: " (reports, flushes, compactions, the longest report-to-durable lag).
  bool print_stats = false;

  // Defaults, overridden by DLX_METRICS_FLUSH_MS, DLX_METRICS_COMPACT_S and DLX_METRICS_STATS=1
  // (docs/config-reference.md).
  static MetricsPipelineOptions from_environment();
};

class MetricsPipeline {
 public:
  // `record` is the record as load_trial_record returns it (its logs applied; metrics_log is the
  // first generation not found). The constructor writes it whole to trial.h5 naming that
  // generation, retires the older logs, keeps only its non-metric fields, then starts the
  // threads. Throws on a failed write.
  MetricsPipeline(std::filesystem::path record_path, record::TrialRecord record,
                  MetricsPipelineOptions options);
  // Flushes and compacts what is left (errors printed: a destructor cannot throw), stops the threads.
  ~MetricsPipeline();
  MetricsPipeline(const MetricsPipeline&) = delete;
  MetricsPipeline& operator=(const MetricsPipeline&) = delete;

  // O(1): buffered for the flusher (waits while the flusher is behind, above). The names are
  // checked by Trial::report beforehand.
  void report(record::MetricTableId table, std::int64_t step, const Metrics& metrics);
  // Names-once: the ids of `names` (new ones named in the log at the next flush), then reports
  // of values in their order. O(values), no name touched.
  std::vector<std::uint32_t> ids_of(const std::vector<std::string>& names);
  void report_values(record::MetricTableId table, std::int64_t step, std::span<const std::uint32_t> ids,
                     std::span<const double> values);
  // Drops the rows of both tables at or after `step` (a resume), in order with the reports.
  void drop_from(std::int64_t step);
  // Asks the flusher to write now and to compact after it (a checkpoint); does not wait.
  void flush_soon();
  // Waits until every report so far is durable in the log; throws TrialError when the flusher
  // cannot write (disk full, I/O error: it keeps retrying meanwhile).
  void flush();
  // flush(), then applies `edit` to the record and writes trial.h5 with everything, on this
  // thread. Throws what flush() or the write throws (the record keeps the edit either way).
  void commit(const std::function<void(record::TrialRecord&)>& edit);

 private:
  struct Entry {
    bool drop = false;
    record::MetricTableId table = record::MetricTableId::training;
    std::int64_t step = 0;
    double wall_time = 0;
    std::uint32_t first_value = 0, value_count = 0;
  };
  struct Batch {
    std::vector<Entry> entries;
    std::vector<std::pair<std::uint32_t, double>> values;
    std::vector<std::string> new_names;  // ids first_new_id, first_new_id + 1, ...
    std::uint32_t first_new_id = 0;
    bool empty() const noexcept { return entries.empty() && new_names.empty(); }
  };

  // What trial.h5 holds of one table, as far as this writer knows.
  struct SavedRows {
    std::optional<std::int64_t> last_step;  // its rows' steps are at most this (nullopt: none)
    std::optional<std::int64_t> drop_from;  // the next write drops its rows from this step first
    // A row or a drop at `step`: the saved rows from there are replaced, if it reaches them.
    void replace_from(std::int64_t step);
  };
  // A compaction's input: the record's fields, the rows trial.h5 lacks and the drops, taken at a
  // generation change; `rows` per table is how many of record_'s first rows it holds.
  struct Snapshot {
    record::TrialRecord head;  // its tables: the rows to append
    std::optional<std::int64_t> drop_from[2];
    std::size_t rows[2] = {0, 0};
  };

  void flusher_loop();
  void compactor_loop();
  // One batch: encoded into unwritten_, written and fdatasynced, applied to record_. Throws when
  // the write failed (the bytes stay in unwritten_ for the next try).
  void flush_once();
  void encode_batch(const Batch& batch);  // under file_mutex_: names first seen, rows, drops
  void write_unwritten();                 // under file_mutex_
  void apply_to_record(const Batch& batch);  // takes record_mutex_
  void account_flush(const Batch& batch, bool written);  // takes control_mutex_
  // The flusher's turn after a flush: notes its failure (once per new message) and says whether
  // it should start a compaction now (marked as started). Takes control_mutex_.
  bool compaction_due_after(const std::string& failure, bool stopping);
  void start_compaction();  // hands a snapshot to the compactor, or gives the turn up
  // Under file_mutex_: the next generation's file exists (header, fsync, directory fsync) and
  // the writes go there; returns what to write to trial.h5, naming it.
  Snapshot rotate_and_snapshot(const std::function<void(record::TrialRecord&)>& edit);
  void start_new_generation();  // under file_mutex_
  // Appends the snapshot to trial.h5 and retires the older logs; then drops its rows from
  // record_, or (on failure, rethrown) keeps them and its drops for the next try.
  void write_snapshot(Snapshot snapshot);
  void print_lines(const Batch& batch);
  std::uint32_t id_of(const std::string& name);  // under pending_mutex_
  // Under pending_mutex_ (held by `lock`), around an entry's append: notes when the buffer
  // started, then wakes the flusher early for a large buffer and waits for it when it is behind.
  void note_first_entry();
  void keep_up_with_flusher(std::unique_lock<std::mutex>& lock);
  // Under pending_mutex_: which thread a report would wait for now (takes control_mutex_ for
  // whether a compaction runs, only when the rows trial.h5 lacks are that many).
  enum class Behind { none, flusher, compactor };
  Behind behind(std::chrono::steady_clock::time_point now);
  void set_uncompacted_cells();  // under record_mutex_
  void compaction_ended();       // after compacting_ is false: a waiting report checks again

  const std::filesystem::path record_path_;
  const MetricsPipelineOptions options_;

  // Metric values buffered before the training thread wakes the flusher early (16 MiB of them,
  // a write of tens of milliseconds): only a program reporting ~100,000 rows a second gets there.
  static constexpr std::size_t kEarlyFlushValues = std::size_t{1} << 20;

  // Backpressure: a report waits for the flusher when the buffer's first report is older than
  // this many flush intervals (the flusher takes it after one: it is behind), and at most
  // kLongestBackpressureWait; a wait that long means storage that hangs rather than lags, and
  // reports go on without waiting until the flusher takes the buffer again.
  static constexpr double kBackpressureIntervals = 1.5;
  static constexpr std::chrono::seconds kLongestBackpressureWait{30};
  // The rows trial.h5 lacks, as metric values (cells), that make a compaction due at once
  // whatever its spacing (16 Mi cells: 256 MiB of them); at twice as many a report waits
  // for the running compaction. Only a program reporting hundreds of thousands of values a
  // second for minutes gets there (the spacing keeps compactions to ~2% of a core, so the rows
  // between two grow with trial.h5): this bounds its memory, at the price of compactions that
  // come oftener than the spacing says (bench/metrics: the lag at rates the disk cannot take).
  static constexpr std::size_t kCompactionCells = std::size_t{1} << 24;

  std::mutex pending_mutex_;
  Batch pending_;
  std::atomic<bool> early_flush_{false};  // set by report() once per batch past kEarlyFlushValues
  // steady_clock nanoseconds of pending_'s first entry, 0 while it is empty: the flusher wakes one
  // interval after it, and report() measures the buffer's age by it.
  std::atomic<std::int64_t> pending_since_ns_{0};
  std::condition_variable pending_taken_;  // with pending_mutex_: the flusher took pending_
  std::uint64_t batches_taken_ = 0;        // under pending_mutex_
  // Under pending_mutex_: a wait for that thread gave up; none until it moves again (the flusher
  // takes the buffer, a compaction ends).
  bool flusher_stalled_ = false, compactor_stalled_ = false;
  std::uint64_t backpressure_waits_ = 0;   // under pending_mutex_, for DLX_METRICS_STATS
  double backpressure_seconds_ = 0;
  // record_'s cells (the rows trial.h5 lacks), as of the last flush or compaction.
  std::atomic<std::size_t> uncompacted_cells_{0};
  std::map<std::string, std::uint32_t, std::less<>> ids_;  // every name reported, by id
  std::vector<std::string> last_names_;                    // the previous report's names
  std::vector<std::uint32_t> last_ids_;                    // and their ids

  Batch spare_;  // the flusher's: the batch it works on, swapped with pending_

  std::mutex file_mutex_;
  UniqueFd log_;
  std::uint64_t generation_ = 0;       // of log_
  std::vector<bool> named_in_log_;     // by id: a name record is in log_
  std::vector<std::byte> unwritten_;   // encoded, not yet durable in log_
  std::uint64_t log_bytes_ = 0;        // durable in log_

  std::mutex record_mutex_;
  record::TrialRecord record_;  // its tables: the rows trial.h5 lacks
  record::MetricRowApplier applier_{record_};
  SavedRows saved_[2];              // by MetricTableId (training, validation)
  std::size_t in_flight_[2] = {0, 0};  // record_'s first rows a running compaction writes
  record::TrialRecordWriter writer_;  // the compactor's (one write at a time: compacting_)
  std::vector<std::string> names_;  // by id, the flusher's copy (for the printed lines)
  std::chrono::steady_clock::time_point last_training_line_{};  // the flusher's
  // The printed lines' own thread (print_as_trial): the flusher hands them over and goes on.
  std::unique_ptr<MetricLinePrinter> printer_;

  std::mutex control_mutex_;
  std::condition_variable control_changed_;
  std::uint64_t flush_requests_ = 0, flushes_done_ = 0;
  bool compaction_requested_ = false, compacting_ = false, stopping_ = false;
  std::optional<Snapshot> to_compact_;
  std::string error_;  // the flusher's or compactor's last failure, "" when the last try worked
  // For DLX_METRICS_STATS: what the flusher and the compactor did (under control_mutex_).
  struct Stats {
    std::uint64_t reports = 0, flushes = 0, compactions = 0;
    double max_lag_seconds = 0;  // report to fdatasync done, the longest
    double lag_seconds_sum = 0;  // over flushes, of each flush's longest
    double compaction_seconds = 0, max_compaction_seconds = 0;
  } stats_;
  std::chrono::steady_clock::time_point last_compaction_;
  std::chrono::steady_clock::duration last_compaction_took_{};
  bool rows_since_compaction_ = false;

  std::thread flusher_, compactor_;  // last: started once everything above exists
};

}  // namespace dlx::detail
