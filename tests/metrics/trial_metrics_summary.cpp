// SPDX-License-Identifier: Apache-2.0
// dlx-test-trial-metrics TRIAL_H5 [--file-only]: the metric tables of a trial record as readers
// see them (trial.h5 with its metrics logs; --file-only: trial.h5 alone), summarised as one JSON
// line per call, so that tests of a million rows compare a few numbers:
//   {"training": {"rows", "first", "last", "consecutive", "timed", "columns": {name: {"present",
//    "sum"}}}, "validation": {...}, "metrics_log": G, "state": "..."}
// consecutive: every step is the previous + 1; timed: every wall time is finite and not less
// than the previous one. Exits 1 with the loader's message when the record cannot be read.
#include <cmath>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "dlx/record/trial_record.hpp"

namespace {

nlohmann::json summary(const dlx::record::MetricTable& table) {
  const auto& steps = table.steps();
  const auto& wall_times = table.wall_times();
  bool consecutive = true, timed = true;
  for (std::size_t i = 1; i < steps.size(); ++i) consecutive &= steps[i] == steps[i - 1] + 1;
  for (std::size_t i = 0; i < wall_times.size(); ++i)
    timed &= std::isfinite(wall_times[i]) && (i == 0 || wall_times[i] >= wall_times[i - 1]);
  nlohmann::json columns = nlohmann::json::object();
  for (const auto& [name, series] : table.all_series()) {
    double sum = 0;
    for (double value : series.values) sum += value;
    columns[name] = {{"present", series.values.size()}, {"sum", sum}};
  }
  return {{"rows", steps.size()},
          {"first", steps.empty() ? -1 : steps.front()},
          {"last", steps.empty() ? -1 : steps.back()},
          {"consecutive", consecutive},
          {"timed", timed},
          {"columns", columns}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && std::string(argv[2]) != "--file-only")) {
    std::fprintf(stderr, "usage: %s TRIAL_H5 [--file-only]\n", argv[0]);
    return 2;
  }
  try {
    const auto record = argc == 3 ? dlx::record::load_trial_record_file(argv[1])
                                  : dlx::record::load_trial_record(argv[1]);
    const nlohmann::json out = {{"training", summary(record.training)},
                                {"validation", summary(record.validation)},
                                {"metrics_log", record.metrics_log},
                                {"state", record.state}};
    std::printf("%s\n", out.dump().c_str());
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
}
