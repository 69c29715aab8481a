// SPDX-License-Identifier: Apache-2.0
// libFuzzer target over the metrics log reader (record/src/metrics_log.cpp): what `dlx status`,
// `dlx report`, `dlx export`, dlx-launch and every trainer's start apply to trial.h5, from a file
// another user of the trial's group could have written (issue 31, finding 4). Any log must end in
// a table or a CheckpointError, and cost the reader's heap at most a small multiple of its bytes:
// the target counts the heap (tests/checkpoint/heap_meter.cpp) and aborts past
// 4 x the log's bytes + 2 MiB, the unit tests' budget. -timeout catches a quadratic replay.
//
// Input: a small program that writes a log with dlx's own encoder, so that mutations reach the
// replay instead of failing a checksum; a few bytes can make a large log (bursts of names, rows
// repeated thousands of times), up to 4 MiB. Each op is one byte, then its operands:
//   0 name     u16 id, u8 length, the name's bytes
//   1 row      u8 table (0-2: 2 is refused), u16 step, u8 count, then count x (u16 id, u16 value)
//   2 drop     u8 table (0-3: 3 is refused), u16 step
//   3 repeat   u16 times: the previous record again (steps as written: replays of one step)
//   4 names    u16 first id, u16 count: "m<id>" for each
//   5 wide row u8 table, u16 step: a row of every id named so far
//   6 rows     u16 count, u8 step stride (0: the same step each time): empty rows
//   7 raw      u8 length, the bytes (a torn or damaged tail, or garbage between records)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "dlx/record/metrics_log.hpp"
#include "dlx/record/trial_record.hpp"
#include "dlx/common/error.hpp"
#include "h5_fuzz_input.hpp"
#include "heap_meter.hpp"

namespace {

using namespace dlx::record;
using dlx::fuzz::ByteReader;
using Values = std::vector<std::pair<std::uint32_t, double>>;

constexpr std::size_t kMaxLogBytes = std::size_t{4} << 20;

std::vector<std::byte> build_log(ByteReader& in) {
  std::vector<std::byte> log;
  append_metrics_log_header(log);
  std::vector<std::byte> previous;  // the last record, for "repeat"
  std::uint32_t named = 0;          // ids 0..named-1 were defined by a "names" op
  auto add = [&](std::vector<std::byte> record) {
    if (log.size() + record.size() > kMaxLogBytes) return false;
    log.insert(log.end(), record.begin(), record.end());
    previous = std::move(record);
    return true;
  };
  while (!in.done() && log.size() < kMaxLogBytes) {
    std::vector<std::byte> record;
    switch (in.pick(8)) {
      case 0: {
        const auto id = in.u16();
        append_metric_name_record(record, id, in.bytes(in.u8()));
        add(std::move(record));
        break;
      }
      case 1: {
        const auto table = static_cast<MetricTableId>(in.pick(3));
        const auto step = static_cast<std::int64_t>(in.u16());
        Values values(in.u8());
        for (auto& [id, value] : values) {
          id = in.u16();
          value = static_cast<double>(in.u16()) / 3;
        }
        append_metric_row_record(record, table, step, step, values);
        add(std::move(record));
        break;
      }
      case 2: {
        append_metric_drop_record(record, static_cast<MetricTableId>(in.pick(4)), in.u16());
        add(std::move(record));
        break;
      }
      case 3: {
        for (auto times = in.u16(); times > 0 && !previous.empty(); --times) {
          if (log.size() + previous.size() > kMaxLogBytes) break;
          log.insert(log.end(), previous.begin(), previous.end());
        }
        break;
      }
      case 4: {
        const std::uint32_t first = in.u16(), count = in.u16() % 9000;
        for (std::uint32_t id = first; id < first + count && log.size() < kMaxLogBytes; ++id)
          append_metric_name_record(log, id, "m" + std::to_string(id));
        named = std::max(named, first + count);
        break;
      }
      case 5: {
        const auto table = static_cast<MetricTableId>(in.pick(2));
        const auto step = static_cast<std::int64_t>(in.u16());
        Values values;
        for (std::uint32_t id = 0; id < named && values.size() < 80000; ++id) values.emplace_back(id, id);
        append_metric_row_record(record, table, step, 0, values);
        add(std::move(record));
        break;
      }
      case 6: {
        const auto count = in.u16();
        const auto stride = in.u8();
        std::int64_t step = in.u16();
        for (std::uint32_t i = 0; i < count && log.size() < kMaxLogBytes; ++i, step += stride)
          append_metric_row_record(log, MetricTableId::training, step, 0, Values{});
        break;
      }
      default: {
        for (char c : in.bytes(in.u8())) log.push_back(static_cast<std::byte>(c));
        break;
      }
    }
  }
  return log;
}

void check_table(const MetricTable& table) {
  if (table.wall_times().size() != table.rows()) std::abort();
  for (std::size_t row = 1; row < table.rows(); ++row)
    if (table.steps()[row] <= table.steps()[row - 1]) std::abort();  // drops keep them increasing
  std::size_t cells = 0;
  for (std::size_t row = 0; row < table.rows(); ++row) cells += table.cells(row).size();
  if (cells != table.cell_count()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ByteReader in(data, size);
  const auto log = build_log(in);
  static const bool show = std::getenv("DLX_FUZZ_SHOW") != nullptr;  // what the reader said
  TrialRecord record;
  std::string refused;
  const auto peak = dlx::testing::peak_heap_bytes_during([&] {
    try {
      apply_metrics_log(log, record, "fuzz.log");
    } catch (const dlx::Error& e) {  // the expected outcome for a log that makes no sense
      refused = e.what();
    }
  });
  check_table(record.training);
  check_table(record.validation);
  if (show)
    std::fprintf(stderr, "apply_metrics_log: %zu bytes, heap peak %zu: %s\n", log.size(), peak,
                 refused.empty() ? "ok" : refused.c_str());
  const std::size_t budget = 4 * log.size() + (std::size_t{2} << 20);
  if (peak > budget) {
    std::fprintf(stderr, "metrics log of %zu bytes held %zu heap bytes at its peak, over the budget of %zu\n",
                 log.size(), peak, budget);
    std::abort();
  }
  return 0;
}
