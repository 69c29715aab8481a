// SPDX-License-Identifier: Apache-2.0
#pragma once
// Search methods as pure state machines (Determined's searcher model): events in, actions out, a
// seeded RNG, state that snapshots. A method knows nothing of Slurm, files or clocks. The
// coordinator (coordinator.hpp) feeds a fresh method every event of the experiment journal, in
// journal order, before it answers a new one; so a method's state after N events is a function of
// the experiment and those N events alone, and `dlx replay` rebuilds exactly the live state.
//
// Vocabulary
//   ticket  one array task: a slot-sized unit of work. The job array has ticket_count() tasks,
//           at most max_concurrent_trials of them running at once (the array throttle).
//   trial   one hyperparameter configuration and its history (trials/<id>/). Single, grid,
//           random and stopping ASHA run trial == ticket. ASHA's promotion variant and PBT hand
//           a later ticket an existing trial (resume a paused trial) or a trial that starts
//           from another trial's checkpoint (PBT exploit).
//   length  training progress in the searcher's unit (max_length's batches, records or epochs).
//           A trainer's step counter counts in this unit; its checkpoints are step-<length>.h5.
//
// Events and what each returns
//   on_work_requested(ticket)            Work: train a trial to a target length, wait (ask
//                                         again later), or none (nothing left for this ticket)
//   on_validation(trial, length, metric) Decision, asked when a trial reaches its target length:
//                                         continue to a new target, stop, pause or complete
//   on_trial_exited(trial, how)          nothing: frees what the trial held (a failed trial is
//                                         never promoted or exploited)
//
// Rules every method keeps (the coordinator and replay depend on them)
//   - Deterministic: the same experiment (seed included) and the same event sequence give the
//     same answers. Randomness only from streams keyed by the seed (sample_stream.hpp).
//   - An answer of Work::Kind::wait leaves the state unchanged: waits are not journaled, so
//     replay never sees them.
//   - Metrics are raw values; the method orients them with searcher.smaller_is_better.
//   - snapshot() captures the whole state as JSON; restore() on a fresh method of the same
//     experiment gives a method whose future answers equal the original's.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "dlx/config/experiment.hpp"

namespace dlx::searcher {

// Where a result stood among its peers when a decision was taken on it (ASHA: its rung's results
// so far), for people and for experiment.h5's decision table. The reason says the same in words.
struct Ranking {
  int rung = 0;   // 0-based
  int rank = 0;   // 1 = the best result at that rung so far
  int peers = 0;  // results at that rung so far, this one included
  int keep = 0;   // how many of them go on (the rung's quota then)
  friend bool operator==(const Ranking&, const Ranking&) = default;
};

struct Work {
  enum class Kind { train, wait, none };
  Kind kind = Kind::none;
  int trial = -1;                        // none: the ticket's own trial when it has ended, else -1
  nlohmann::ordered_json hparams;        // the trial's, flat ("optim.lr" -> 0.01), file order
  std::int64_t start_length = 0;         // where training starts (0: from scratch)
  std::optional<int> checkpoint_trial;   // load this trial's checkpoint at start_length: the
                                         // trial itself (promotion), or the parent (PBT exploit)
  std::int64_t target_length = 0;        // train to this length, then report validation;
                                         // 0: no searcher length (the trainer's own)
  std::string reason;                    // one line for people: why this work
  std::optional<Ranking> ranking;        // a promotion: where the trial stood at its rung
};

struct Decision {
  enum class Kind { continue_training, stop, pause, complete };
  Kind kind = Kind::complete;
  std::int64_t target_length = 0;  // continue_training: the next length to report at
  std::string reason;              // e.g. "rung 1 (length 27): accuracy 0.91 is 1st of 4, top 1 go on"
  std::optional<Ranking> ranking;  // a rung result: its rank among the rung's results
};

enum class ExitKind { completed, stopped, paused, failed };

class Method {
 public:
  virtual ~Method() = default;
  virtual Work on_work_requested(int ticket) = 0;
  virtual Decision on_validation(int trial, std::int64_t length, double metric) = 0;
  virtual void on_trial_exited(int trial, ExitKind how) = 0;
  virtual nlohmann::json snapshot() const = 0;
  virtual void restore(const nlohmann::json& state) = 0;
};

// The method the experiment's searcher section names.
std::unique_ptr<Method> make_method(const config::Experiment& experiment);

// How many array tasks the experiment needs: trial_count() for single, grid, random and stopping
// ASHA; for ASHA's promotion variant also one per promotion a later ticket may run; for PBT one
// per member and round (population_size x num_rounds; a member that goes on keeps its trial).
int ticket_count(const config::Experiment& experiment);

const char* to_string(Work::Kind kind);
const char* to_string(Decision::Kind kind);
const char* to_string(ExitKind kind);

// JSON forms, as the journal records them.
nlohmann::json to_json(const Work& work);
Work work_from_json(const nlohmann::json& json);
nlohmann::json to_json(const Decision& decision);
Decision decision_from_json(const nlohmann::json& json);

}  // namespace dlx::searcher
