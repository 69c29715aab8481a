// SPDX-License-Identifier: Apache-2.0
// libFuzzer target over the experiment-file parser and validator, the code that runs inside
// every user's sbatch. Any input must end in a parsed experiment or a ConfigError: never a crash,
// a hang, a leak or another exception type (which the plugin would have to report as a bare
// C++ message). Built with clang, -fsanitize=fuzzer,address,undefined (scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dlx/config/parse.hpp"
#include "dlx/config/snapshot.hpp"
#include "dlx/searcher/trial_plan.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto experiment = dlx::config::parse_experiment(text, "fuzz.yaml");
    // What the plugin does next must hold for any experiment the parser accepts.
    int trials = dlx::searcher::trial_count(experiment);
    if (trials > 0) dlx::searcher::plan_trial(experiment, trials - 1);
    auto again = dlx::config::parse_experiment(dlx::config::to_yaml(experiment), "snapshot.yaml");
    if (dlx::config::to_yaml(again) != dlx::config::to_yaml(experiment)) std::abort();  // snapshots must round-trip
  } catch (const dlx::config::ConfigError&) {
    // the expected outcome for bad input
  }
  return 0;
}
