// SPDX-License-Identifier: Apache-2.0
#pragma once
// The searcher's state for tests of what dlx-launch reads from the journal (slot_yield_test.cpp,
// lost_trials_test.cpp): examples/asha.yaml's experiment, with work recorded for some tickets.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dlx/config/parse.hpp"
#include "dlx/searcher/search_state.hpp"

namespace dlx::test {

inline config::Experiment asha_example() {
  return config::parse_experiment_file(std::string(DLX_SOURCE_DIR) + "/examples/asha.yaml");
}

// The state after `work` was recorded: each (ticket, trial) pair trains that trial, to length 16.
// Its events take journal offsets 0, 1, ...: later events of a test start at work.size().
inline searcher::SearchState asha_state_with_work(const std::vector<std::pair<int, int>>& work) {
  searcher::SearchState state(asha_example());
  std::uint64_t offset = 0;
  for (const auto& [ticket, trial] : work) {
    searcher::Work given;
    given.kind = searcher::Work::Kind::train;
    given.trial = trial;
    given.target_length = 16;
    state.apply_answered({offset++, searcher::SearchState::work_event(ticket, given, 0)});
  }
  return state;
}

}  // namespace dlx::test
