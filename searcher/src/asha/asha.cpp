// SPDX-License-Identifier: Apache-2.0
// ASHA, the asynchronous successive halving algorithm (Li et al. 2020, "A System for Massively
// Parallel Hyperparameter Tuning"), for searcher.name async_halving: one bracket whose rungs are
// asha_rungs(max_trials, divisor, max_rungs, max_length). The state machine is asha_bracket.cpp,
// tickets and trials are asha_method.cpp; adaptive_asha.cpp runs several brackets.
//
// Ranking. Metrics are oriented by smaller_is_better; NaN, and a trial that exits before reporting
// at the rung it was heading for, rank last. Ties go to the lower trial id, so every decision is
// a deterministic function of the event sequence. A result's rank at a rung counts every result
// recorded there so far (itself, promoted and failed trials included), never a re-sort: each rung
// is a sorted vector (asha_rung_table.hpp).
//
// Stopping variant (asha.stop_once: true; Determined's asha_stopping). Ticket t is trial t, for
// t < max_trials; its hyperparameters are make_sampler(experiment)->sample(t), and every
// validation goes to the sampler's observe(), so TPE inside ASHA is BOHB-style search.
//   1. The trial trains from scratch to rung 0's length and reports its metric.
//   2. With n results recorded at that rung (its own included) and `rank` its 0-based place, it
//      continues to the next rung's length iff rank < max(1, floor(n / divisor)), else it stops.
//      The max(1, ...) lets the first arrivals at a rung go on: results arrive one at a time, so
//      without it nothing would ever pass a rung that has fewer than `divisor` results yet.
//   3. A result at the top rung completes the trial.
//
// Promotion variant (stop_once: false; the paper's algorithm, with trials paused instead of
// killed and resumed by a later array task from their checkpoint):
//   1. on_work_requested(ticket): if some paused trial is promotable, scan the rungs from the
//      top down and hand the best paused one at the highest such rung to this ticket:
//      Work{train, trial, start_length = its rung's length, checkpoint_trial = itself,
//      target_length = the next rung's length}. Otherwise, while fewer than max_trials trials
//      exist, a new trial (id = how many were created before; from scratch to rung 0). Otherwise
//      Work::Kind::wait while some trial is still training (its result may make a promotion
//      possible; a wait changes no state), and none when nothing can happen any more.
//   2. A trainer reaching its target length first makes its checkpoint there durable
//      (trials/<id>/checkpoints/step-<length>.h5, waiting for an async save), then reports the
//      validation. This order is what lets a pause take effect at once: no exit event follows a
//      decision (the coordinator reports exits only outside decisions).
//   3. A trial reporting at rung k < top is promotable iff rank < floor(n_k / divisor) (the paper's
//      top-k rule over everything recorded at rung k). If so it is promoted in place: Decision
//      continue_training to the next rung's length, in the same array task, no checkpoint round
//      trip. If not: Decision pause; its array task ends, and from that moment a later ticket may
//      resume it from the checkpoint of step 2 (step 1).
//   4. A paused trial is promotable while it ranks inside its rung's quota: its rank can only
//      worsen as results arrive, but the quota floor(n_k / divisor) grows. Closing rule (ours,
//      for a finite max_trials; the paper's ASHA runs forever): once a rung is closed (every
//      trial created, none training toward it, the rung below closed and promoting nobody else)
//      its quota is max(1, floor(n_k / divisor)), so its best trial still goes on even when
//      fewer than `divisor` trials reached it. Without this, 3 trials with divisor 4 would never
//      get past rung 0.
//   5. The top rung completes its trials. Paused trials nobody promoted stay paused.
//   6. A trial that exits while training (failed: max_restarts exhausted, or any other exit
//      before its result) is recorded at the rung it was heading for as the worst result, is
//      never promoted and no longer counts as running. A paused trial reported failed afterwards
//      is never promoted.
//
// Tickets: the stopping variant needs max_trials. The promotion variant needs max_trials (new
// trials) plus one per resumed promotion (an in-place promotion reuses its ticket). The sum of the
// rung sizes above rung 0 (asha_rungs' `trials`) is NOT enough: asynchronous promotion can promote
// more than 1/divisor of a rung (with divisor 2, results arriving in improving order are each
// promoted in place, so rung 1 can receive nearly all trials). The bound used: a paused trial's
// rank never improves, so it can only become promotable when its rung's quota grows; the quota
// grows at most floor(n_k / divisor) times, plus once by the closing rule when that is 0. With
// n_k <= trials at every rung, resumes from rung k are at most max(1, floor(trials / divisor)),
// and asha_promotion_tickets() = (rungs - 1) x max(1, floor(trials / divisor)) per bracket.
// Tickets beyond what a run uses get Work::Kind::none at once.
//
// Reasons (Decision and Work) are one line for people, e.g.
//   "rung 1 (length 27): accuracy 0.912 ranks 1 of 4; top 1 promoted; go on to length 81".
#include "asha_layout.hpp"
#include "asha_method.hpp"
#include "method_factories.hpp"

namespace dlx::searcher::detail {

std::unique_ptr<Method> make_asha_method(const config::Experiment& experiment) {
  return std::make_unique<AshaMethod>(experiment, asha_brackets(experiment));
}

int asha_promotion_tickets(const config::Experiment& experiment) {
  if (experiment.searcher.asha.stop_once) return 0;
  int tickets = 0;
  for (const auto& bracket : asha_brackets(experiment)) tickets += asha_resume_bound(bracket, experiment.searcher.asha.divisor);
  return tickets;
}

}  // namespace dlx::searcher::detail
