// SPDX-License-Identifier: Apache-2.0
#pragma once
// The parts of the report's data model (report_model.hpp) that tell a story across trials: the
// searcher's (ASHA rungs, PBT lineage, which result of each trial the importance compares), the
// best value so far, and each trial's attempts (the fault-tolerance timeline).
#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlx/record/trial_record.hpp"
#include "dlx/config/experiment.hpp"
#include "dlx/searcher/search_state.hpp"

namespace dlx::cli::report {

// A double for the page's JSON: finite as a number, else "inf", "-inf" or "nan" (JSON has no
// such numbers), rounded to 6 significant digits (the page shows no more; the file shrinks).
nlohmann::json number(double value);
double round_for_page(double value);

// Where the searcher paused trial `trial` (the lengths of its "pause" decisions) and when it was
// paused and resumed: [pause unix, resume unix or nullopt].
struct Pause {
  std::int64_t length = 0;
  std::int64_t paused_unix = 0;
  std::optional<std::int64_t> resumed_unix;
};
std::vector<Pause> searcher_pauses(const searcher::SearchState* search, int trial);

// The trial's attempts (report_model.hpp, `attempts`): restarts from trial.h5's restart events,
// the searcher's pauses from the journal.
nlohmann::json attempts(const record::TrialRecord& record, const std::vector<Pause>& pauses);

// `asha` of the model (null unless the searcher is ASHA and has judged results).
nlohmann::json asha_story(const config::Experiment& experiment, const searcher::SearchState* search);

// `pbt` of the model (null unless the searcher is PBT). `records`: by trial id.
nlohmann::json pbt_story(const config::Experiment& experiment, const searcher::SearchState* search,
                         const std::vector<const record::TrialRecord*>& records);

// The result of each trial that importance compares: for ASHA, the metric at the highest rung
// with at least kMinTrials results (trials compared at the same length); else each trial's best.
// `basis` says which. By trial id; NaN: none.
struct ComparedResults {
  std::string basis;
  std::vector<std::pair<int, double>> results;
};
ComparedResults compared_results(const config::Experiment& experiment, const searcher::SearchState* search,
                                 const std::vector<std::pair<int, std::optional<double>>>& best_of_trial);

}  // namespace dlx::cli::report
