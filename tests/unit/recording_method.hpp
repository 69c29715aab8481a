// SPDX-License-Identifier: Apache-2.0
#pragma once
// A search method that records every event it answers on the simulated cluster, as the
// coordinator would append them to the journal (waits are not journaled), so that a test or a
// bench can write a real journal from a simulated run. Each event gets a distinct time stamp
// (1000 + ticket, 2000 + trial, 3000 + trial) so that they survive a round trip visibly.
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlx/searcher/method.hpp"
#include "dlx/searcher/search_state.hpp"

namespace dlx::testing {

class RecordingMethod final : public searcher::Method {
 public:
  explicit RecordingMethod(std::unique_ptr<searcher::Method> inner) : inner_(std::move(inner)) {}

  searcher::Work on_work_requested(int ticket) override {
    auto work = inner_->on_work_requested(ticket);
    if (work.kind != searcher::Work::Kind::wait)
      events.push_back(searcher::SearchState::work_event(ticket, work, 1000 + ticket));
    return work;
  }
  searcher::Decision on_validation(int trial, std::int64_t length, double metric) override {
    auto decision = inner_->on_validation(trial, length, metric);
    last_length_[trial] = length;
    events.push_back(
        searcher::SearchState::validation_event(trial, length, metric, decision, 2000 + trial));
    return decision;
  }
  void on_trial_exited(int trial, searcher::ExitKind how) override {
    inner_->on_trial_exited(trial, how);
    events.push_back(searcher::SearchState::exit_event(trial, how, "simulated failure",
                                                       last_length_[trial], 3000 + trial));
  }
  nlohmann::json snapshot() const override { return inner_->snapshot(); }
  void restore(const nlohmann::json& state) override { inner_->restore(state); }

  std::vector<nlohmann::json> events;

 private:
  std::unique_ptr<searcher::Method> inner_;
  std::map<int, std::int64_t> last_length_;
};

}  // namespace dlx::testing
