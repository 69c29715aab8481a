// SPDX-License-Identifier: Apache-2.0
// libFuzzer target over the trial.h5 reader (what `dlx status`, dlx-launch and the SDK read) on
// valid HDF5 files of hostile structure (h5_fuzz_mutate.hpp says why structure-aware). Each
// input is:
//   record  a trial record written by dlx's own save_trial_record: up to 3 hyperparameters, two
//           metric tables of up to 15 rows and 3 metrics, up to 3 restart events
//   edits   a program of edits (h5_fuzz_mutate.hpp)
//   log     (half the inputs) the metrics log that continues the record: a valid header, a name
//           and up to 3 rows, then up to 255 bytes of the input as they come
// load_trial_record must return a consistent record or throw dlx::Error: never crash, hang,
// leak, allocate by what the file declares (-malloc_limit_mb in scripts/fuzz.sh), or throw
// anything else.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "dlx/h5/handle.hpp"
#include "dlx/record/metrics_log.hpp"
#include "dlx/record/trial_record.hpp"
#include "h5_fuzz_input.hpp"
#include "h5_fuzz_mutate.hpp"

namespace {

using namespace dlx::record;
using dlx::fuzz::ByteReader;
namespace h5 = dlx::h5;
namespace fs = std::filesystem;

constexpr const char* kMetrics[] = {"loss", "accuracy", "val_loss"};

MetricTable read_table(ByteReader& in) {
  MetricTable table;
  const auto rows = in.pick(16), metrics = in.pick(4);
  for (std::size_t r = 0; r < rows; ++r) {
    std::map<std::string, double> values;
    for (std::size_t m = 0; m < metrics; ++m)
      if (in.pick(4) != 0) values[kMetrics[m]] = static_cast<double>(in.u16()) / 7;
    table.append(static_cast<std::int64_t>(r * 10 + in.pick(10)), values);
  }
  return table;
}

TrialRecord read_record(ByteReader& in) {
  TrialRecord record;
  record.experiment = "fuzz";
  record.trial_id = in.pick(8);
  record.state = in.pick(2) == 0 ? "running" : "completed";
  record.stop_reason = in.bytes(in.pick(16));
  record.hparams = nlohmann::ordered_json::object();
  const auto hparams = in.pick(4);
  for (std::size_t i = 0; i < hparams; ++i) {
    const std::string name = i == 0 ? "lr" : i == 1 ? "batch_size" : "arch";
    switch (in.pick(3)) {
      case 0: record.hparams[name] = static_cast<double>(in.u16()) / 1000; break;
      case 1: record.hparams[name] = static_cast<std::int64_t>(in.u16()); break;
      default: record.hparams[name] = "resnet"; break;
    }
  }
  record.training = read_table(in);
  record.validation = read_table(in);
  const auto restarts = in.pick(4);
  for (std::size_t i = 0; i < restarts; ++i)
    record.restart_events.push_back({.cause = "preempted", .reason = "fuzz", .unix_time = 1,
                                     .resumed_step = static_cast<std::int64_t>(in.u8()),
                                     .steps_lost = 0, .seconds_lost = 0, .downtime_seconds = 0, .previous_nodes = "n1"});
  if (in.pick(2) == 0) record.started_from = StartCheckpoint{1, 10, "trials/1/checkpoints/step-10.h5"};
  return record;
}

dlx::fuzz::Tree tree_of(const TrialRecord& record) {
  dlx::fuzz::Tree tree;
  tree.groups = {"/", "/hparams", "/metrics", "/metrics/training", "/metrics/validation"};
  if (!record.restart_events.empty()) tree.groups.push_back("/restart_events");
  for (std::size_t i = 1; i <= record.restart_events.size(); ++i)
    tree.groups.push_back("/restart_events/" + std::to_string(i));
  for (const char* table : {"training", "validation"}) {
    const std::string group = std::string("/metrics/") + table;
    tree.datasets.push_back(group + "/steps");
    tree.datasets.push_back(group + "/wall_time");
    const auto& t = std::string(table) == "training" ? record.training : record.validation;
    for (const auto& name : t.names()) tree.datasets.push_back(group + "/" + name);
  }
  return tree;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dlx::fuzz::quiet_hdf5();
  dlx::fuzz::Scratch::get();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ByteReader in(data, size);
  const auto path = dlx::fuzz::Scratch::get().dir / kTrialFileName;
  fs::remove(path);
  const auto record = read_record(in);
  save_trial_record(record, path);
  {
    h5::Handle file(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
    if (!file) std::abort();
    auto tree = tree_of(record);
    std::map<std::string, dlx::fuzz::ModelTensor> unused;
    dlx::fuzz::mutate(file.get(), path, in, tree, unused);
    H5Eclear2(H5E_DEFAULT);
  }
  // The metrics log that continues the record: a valid header and a few well-formed records,
  // then the rest of the input as it comes (records, torn tails, garbage).
  const auto log = dlx::fuzz::Scratch::get().dir / metrics_log_name(record.metrics_log);
  fs::remove(log);
  if (in.pick(2) == 0) {
    std::vector<std::byte> bytes;
    append_metrics_log_header(bytes);
    append_metric_name_record(bytes, 0, kMetrics[in.pick(3)]);
    const auto rows = in.pick(4);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::pair<std::uint32_t, double> value{static_cast<std::uint32_t>(in.pick(2)), in.u16() / 3.0};
      append_metric_row_record(bytes, static_cast<MetricTableId>(in.pick(2)), in.u8(), in.u16(),
                               std::span(&value, 1));
    }
    for (char c : in.bytes(in.pick(256))) bytes.push_back(static_cast<std::byte>(c));
    std::ofstream(log, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                               static_cast<std::streamsize>(bytes.size()));
  }
  static const bool show = std::getenv("DLX_FUZZ_SHOW") != nullptr;  // what the reader said
  try {
    auto loaded = load_trial_record(path);
    for (const auto* table : {&loaded.training, &loaded.validation}) {
      if (table->wall_times().size() != table->rows()) std::abort();
      // Rows in strictly increasing step order, as the reader rebuilds them.
      for (std::size_t row = 1; row < table->rows(); ++row)
        if (table->steps()[row] <= table->steps()[row - 1]) std::abort();
    }
    if (show) std::fprintf(stderr, "load_trial_record: ok\n");
  } catch (const dlx::Error& e) {
    // the expected outcome for a file that is not an intact trial record
    if (show) std::fprintf(stderr, "load_trial_record: %s\n", e.what());
  }
  return 0;
}
