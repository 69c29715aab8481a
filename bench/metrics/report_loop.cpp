// SPDX-License-Identifier: Apache-2.0
// bench_metrics_report: one run of bench_metrics.py's C++ side.
//   bench_metrics_report dlx|floor DIR REPORTS METRICS
// dlx: a dlx::Trial (no communicator, trial 0 of an experiment in DIR, outside Slurm) reports
// REPORTS training rows of METRICS metrics as fast as it can, then finishes; with
// DLX_METRICS_STATS=1 its pipeline prints what it did on stderr.
// floor: the same rows encoded as the metrics log encodes them, appended with fwrite to a plain
// file in DIR with one fdatasync per second, on the same thread: the physical floor.
// Prints one JSON line: the mode, the sizes, the seconds of the loop and the mean nanoseconds per
// report in each tenth of the run (the metric values change every report; the Metrics map is
// built once, as a training loop that reports the same names would).
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dlx/record/metrics_log.hpp"
#include "dlx/trial.hpp"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<double> timed_deciles(std::int64_t reports, const std::function<void(std::int64_t)>& report) {
  std::vector<double> deciles;
  std::int64_t step = 0;
  for (int decile = 0; decile < 10; ++decile) {
    const std::int64_t end = reports * (decile + 1) / 10;
    const auto start = Clock::now();
    const std::int64_t begin = step;
    for (; step < end; ++step) report(step);
    const auto took = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    deciles.push_back(end > begin ? took / static_cast<double>(end - begin) : 0.0);
  }
  return deciles;
}

dlx::Metrics metric_names(int count) {
  dlx::Metrics metrics;
  for (int i = 0; i < count; ++i) metrics[fmt::format("metric_{:02}", i)] = 0;
  return metrics;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 || (std::string(argv[1]) != "dlx" && std::string(argv[1]) != "floor")) {
    std::fprintf(stderr, "usage: %s dlx|floor DIR REPORTS METRICS\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  const std::filesystem::path directory = argv[2];
  const std::int64_t reports = std::atoll(argv[3]);
  const int count = std::atoi(argv[4]);
  auto metrics = metric_names(count);
  std::vector<double> deciles;
  const auto start = Clock::now();
  if (mode == "dlx") {
    ::setenv("DLX_EXPERIMENT_DIR", directory.c_str(), 1);
    ::setenv("DLX_TRIAL_ID", "0", 1);
    ::setenv("DLX_HPARAMS", "{}", 1);
    ::setenv("RANK", "0", 1);
    ::setenv("WORLD_SIZE", "1", 1);
    dlx::TrialOptions options;
    options.communicator = false;
    dlx::Trial trial(options);
    deciles = timed_deciles(reports, [&](std::int64_t step) {
      double value = static_cast<double>(step);
      for (auto& [name, metric] : metrics) metric = value += 0.5;
      trial.report_training(step, metrics);
    });
    trial.finish();
  } else {
    std::filesystem::create_directories(directory);
    const auto path = directory / "floor.log";
    std::FILE* file = std::fopen(path.c_str(), "wb");
    if (file == nullptr) {
      std::perror(path.c_str());
      return 1;
    }
    std::vector<std::byte> record;
    std::vector<std::pair<std::uint32_t, double>> values(metrics.size());
    auto last_sync = Clock::now();
    deciles = timed_deciles(reports, [&](std::int64_t step) {
      double value = static_cast<double>(step);
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = {static_cast<std::uint32_t>(i), value += 0.5};
      record.clear();
      dlx::record::append_metric_row_record(record, dlx::record::MetricTableId::training, step, 0.0, values);
      std::fwrite(record.data(), 1, record.size(), file);
      if ((step & 1023) == 0 && Clock::now() - last_sync >= std::chrono::seconds(1)) {
        std::fflush(file);
        ::fdatasync(::fileno(file));
        last_sync = Clock::now();
      }
    });
    std::fflush(file);
    ::fdatasync(::fileno(file));
    std::fclose(file);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("%s\n", nlohmann::json{{"language", "c++"}, {"mode", mode}, {"reports", reports},
                                     {"metrics", count}, {"seconds", seconds}, {"deciles_ns", deciles}}
                          .dump()
                          .c_str());
  return 0;
}
