// SPDX-License-Identifier: Apache-2.0
// dlx-test-trial-check: asserts what a finished logreg trial's record must say.
//   dlx-test-trial-check TRIAL_H5 STATE WORLD_SIZE MIN_ACCURACY EPOCHS [SAME_AS_H5|-] [RESTARTS]
// SAME_AS_H5: another record whose metrics must be identical (determinism); RESTARTS: the
// expected restart count.
// Exits 0 when it holds, 1 with the reasons otherwise.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "dlx/record/trial_record.hpp"

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s TRIAL_H5 STATE WORLD_SIZE MIN_ACCURACY EPOCHS [OTHER_H5]\n",
                 argv[0]);
    return 2;
  }
  std::vector<std::string> problems;
  try {
    const auto record = dlx::record::load_trial_record(argv[1]);
    const std::string state = argv[2];
    const int world_size = std::atoi(argv[3]);
    const double min_accuracy = std::atof(argv[4]);
    const auto epochs = static_cast<std::size_t>(std::atoi(argv[5]));
    if (record.state != state) problems.push_back("state is " + record.state + ", not " + state);
    if (record.world_size != world_size) {
      problems.push_back("world_size is " + std::to_string(record.world_size));
    }
    if (record.validation.rows() != epochs || record.training.rows() != epochs) {
      problems.push_back("expected one training and one validation row per epoch");
    }
    const auto accuracy = record.validation.last("accuracy");
    if (!accuracy || *accuracy <= min_accuracy) {
      problems.push_back("final validation accuracy " +
                         (accuracy ? std::to_string(*accuracy) : std::string("missing")) +
                         " is not above " + argv[4]);
    }
    if (!record.validation.last("loss") || !record.training.last("loss")) {
      problems.push_back("training or validation loss missing");
    } else {
      // The loss must really go down: the last epoch's training loss below the first one's.
      const auto loss = record.training.series("loss").values;
      if (loss.size() < 2 || !(loss.back() < loss.front())) {
        problems.push_back("training loss did not go down");
      }
    }
    if (argc > 7 && record.restarts != std::atoi(argv[7])) {
      problems.push_back("restarts is " + std::to_string(record.restarts) + ", not " + argv[7]);
    }
    if (argc > 6 && std::string(argv[6]) != "-") {  // determinism: the same seed and world size give the same numbers
      const auto other = dlx::record::load_trial_record(argv[6]);
      // The values and their steps, not the wall times (two runs report at different times).
      const auto reported = [](const dlx::record::MetricTable& table) {
        std::map<std::string, std::pair<std::vector<std::int64_t>, std::vector<double>>> out;
        for (auto& [name, series] : table.all_series()) out[name] = {series.steps, series.values};
        return out;
      };
      if (reported(other.validation) != reported(record.validation) ||
          reported(other.training) != reported(record.training)) {
        problems.push_back(std::string("metrics differ from ") + argv[6]);
      }
    }
  } catch (const std::exception& error) {
    problems.push_back(error.what());
  }
  for (const auto& problem : problems) std::fprintf(stderr, "trial check: %s\n", problem.c_str());
  if (problems.empty()) std::printf("trial check: ok: %s\n", argv[1]);
  return problems.empty() ? 0 : 1;
}
