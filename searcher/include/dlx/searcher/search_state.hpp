// SPDX-License-Identifier: Apache-2.0
#pragma once
// The searcher's state rebuilt from the journal: a method fed every searcher event in journal
// order, plus what people and tools want to see of it (each trial's status, every decision with
// its reason, the best trial). The coordinator advances one incrementally while it holds the
// journal lock; `dlx replay` builds a fresh one from the whole file. Both run the same apply(), so
// replay equals the live state by construction, and apply() checks that the method still gives
// the answer the journal recorded (a mismatch means the journal was written by a different
// method, e.g. another dlx version, and is reported, never papered over).
//
// Journal events (JSON objects; "unix" is for people and never reaches the method):
//   {"id": "work/<ticket>", "type": "work", "ticket": T, "work": {...}, "unix": S}
//   {"id": "validation/<trial>/<length>", "type": "validation", "trial": N, "length": L,
//    "metric": M, "decision": {...}, "unix": S}
//   {"id": "exit/<trial>/<how>/<length>", "type": "exit", "trial": N, "how": "failed", "detail": "...",
//    "unix": S}
// Events of other types (tools and tests may add some) are skipped.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlx/config/experiment.hpp"
#include "dlx/searcher/journal.hpp"
#include "dlx/searcher/method.hpp"

namespace dlx::searcher {

struct TrialState {
  int id = 0;
  nlohmann::ordered_json hparams;
  std::string status = "running";  // running | paused | stopped | completed | failed
  std::optional<int> ticket;       // the array task working on it (the last one)
  std::int64_t target_length = 0;
  std::int64_t last_length = 0;    // the last length it reported at
  std::optional<double> last_metric;
  std::optional<double> best_metric;  // the best of its reports (searcher.smaller_is_better)
  std::int64_t best_length = 0;       // where it reported best_metric
  int reports = 0;                    // validations the searcher judged
  int tasks = 0;                      // array tasks handed this trial (more than 1: resumed)
  std::string failure;                // the detail of a failed exit ("" unless failed)
  std::string reason;              // of its last decision
  // A paused trial is settled once its array task posted exit "paused" (trial.h5 written, the
  // process done with the trial): only then may another ticket resume it (one writer per file).
  bool settled = true;
};

// One searcher event as replay prints it.
struct DecisionEntry {
  std::uint64_t offset = 0;
  std::string type;  // work | validation | exit
  std::optional<int> ticket;
  int trial = -1;
  std::int64_t length = 0;
  std::optional<double> metric;
  std::string action;  // train, wait, none, continue_training, stop, pause, complete, failed...
  std::int64_t target_length = 0;
  std::string reason;
  std::optional<Ranking> ranking;  // rung, rank among the rung's results, quota (ASHA)
  std::int64_t unix_seconds = 0;
};

class JournalMismatch : public JournalError {
 public:
  using JournalError::JournalError;
};

class SearchState {
 public:
  explicit SearchState(config::Experiment experiment);

  // Feeds one journal record. Returns false when it is not a searcher event (skipped) or its id
  // was applied before. Throws JournalMismatch when the method's answer differs from the record's.
  bool apply(const JournalRecord& record);
  // The same for an event whose answer this state's method has just given (the coordinator asked
  // it directly): the bookkeeping without asking the method a second time.
  bool apply_answered(const JournalRecord& record);
  // For inspecting a journal this dlx's searcher no longer reproduces (written by another dlx
  // version, or experiment.yaml changed since): instead of throwing JournalMismatch, the first
  // differing answer is noted in divergence(), and from there on the journal's recorded answers
  // are taken as they are, without the method (whose state stays where it diverged). The trials
  // and decisions are then the journal's, complete: what dlx status and dlx replay show of an
  // experiment run by an older dlx. Never for a live coordinator, which must not answer from a
  // state it cannot rebuild.
  void keep_recorded_after_mismatch() { keep_recorded_ = true; }
  // The JournalMismatch message of the first differing answer; empty while the method agrees.
  const std::string& divergence() const { return divergence_; }
  bool seen(const std::string& id) const { return ids_.contains(id); }

  Method& method() { return *method_; }
  const config::Experiment& experiment() const { return experiment_; }
  const std::map<int, TrialState>& trials() const { return trials_; }
  const std::vector<DecisionEntry>& decisions() const { return decisions_; }
  // The work recorded for a ticket, and the decision recorded for a trial at a length, if any.
  std::optional<Work> work_of(int ticket) const;
  std::optional<Decision> decision_of(int trial, std::int64_t length) const;
  // Array tasks that have had their answer recorded (train or none).
  std::size_t tickets_answered() const { return work_by_ticket_.size(); }
  // Trials told to pause whose array task has not posted the exit yet (see TrialState::settled).
  int unsettled() const { return unsettled_; }
  // Best trial: the best metric among the results at the longest length any trial reported at.
  std::optional<int> best_trial() const;
  // Everything above as JSON (and the method's snapshot): equal states give equal JSON.
  nlohmann::json to_json() const;

  // The whole state (every trial, decision, recorded answer and applied id, and the method's
  // and sampler's snapshot) in the journal snapshot's binary form (journal_snapshot.hpp; layout
  // in journal_snapshot_state.cpp). decode() on a fresh SearchState of the same experiment gives
  // one whose encode(), to_json() and future answers equal this one's. It throws JournalError
  // when `bytes` are malformed, and then leaves the state as it was.
  std::string encode() const;
  void decode(std::string_view bytes);

  // Event constructors (what the coordinator appends).
  static nlohmann::json work_event(int ticket, const Work& work, std::int64_t unix_seconds);
  static nlohmann::json validation_event(int trial, std::int64_t length, double metric,
                                         const Decision& decision, std::int64_t unix_seconds);
  static nlohmann::json exit_event(int trial, ExitKind how, const std::string& detail,
                                   std::int64_t length, std::int64_t unix_seconds);

  // Replaces the method by a fresh one restored from `snapshot` (the coordinator takes back an
  // answer it did not record).
  void restore_method(const nlohmann::json& snapshot);

 private:
  bool apply(const JournalRecord& record, bool answered);
  void record_work(const nlohmann::json& event, std::uint64_t offset, bool answered);
  void record_validation(const nlohmann::json& event, std::uint64_t offset, bool answered);
  void record_exit(const nlohmann::json& event, std::uint64_t offset, bool answered);
  // A recorded answer differs from the method's: throws JournalMismatch, or notes the divergence
  // (keep_recorded_after_mismatch).
  void diverged(std::string message);

  config::Experiment experiment_;
  std::unique_ptr<Method> method_;
  std::set<std::string> ids_;
  std::map<int, TrialState> trials_;
  std::map<int, Work> work_by_ticket_;
  std::map<std::pair<int, std::int64_t>, Decision> decision_by_report_;
  std::vector<DecisionEntry> decisions_;
  int unsettled_ = 0;
  bool keep_recorded_ = false;
  std::string divergence_;
};

// A fresh SearchState fed every record of `scan` (what `dlx replay` and `dlx status` show).
SearchState replay_journal(const config::Experiment& experiment, const JournalScan& scan);

}  // namespace dlx::searcher
