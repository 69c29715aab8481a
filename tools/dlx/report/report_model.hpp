// SPDX-License-Identifier: Apache-2.0
#pragma once
// The data of `dlx report`: everything the page shows, as one JSON document built from what
// `dlx status` reads (status_report.hpp: the frozen experiment, every trial.h5 with its metrics
// logs, the searcher's state replayed from the journal). Nothing here is invented: a field that
// the files do not record is absent or null, and the page says so.
//
// Data model (keys are short: the document is inlined into the page, 1,000 trials and more):
//   meta        experiment, directory, searcher, sampler, array (null for one trial per array task,
//               else {tasks, tickets, at_once (trials a task runs at once), trials_per_gpu (or
//               null), load ("up to 4 at once"), cause (the key that made it so)}), gpu_sharing (how
//               trials share GPUs through Slurm's shards: searcher::shard_sharing_text, or null),
//               metric, smaller_is_better,
//               generated_unix, watch_seconds (null: a final page), ended (StatusReport::finished:
//               every trial completed or failed, or the searcher is done), states {state: count}, warnings [text], points_per_curve, best_trial
//               (id or null: the searcher's best, else the best metric), min_trials_importance
//   hparams     [{name, type}]: the searched hyperparameters in file order (type: const, int,
//               double, log, categorical)
//   trials      [{id, state, status (the searcher's: running, paused, stopped, completed, failed;
//               null without a journal), searcher (its word: "stopped at 9"), problem (why trial.h5
//               could not be read), hparams {name: value}, last, best (the searcher metric's last
//               and best validation; a non-finite value as the string "inf", "-inf" or "nan"),
//               restarts, failures, stop_reason, task (the array task that ran it, where a task
//               runs several trials; else null), nodes (of the latest attempt: earlier attempts'
//               nodes are not recorded), slurm_job_id, world_size, created, updated (unix s),
//               time_used (s, the attempts' durations), time_lost (s, redone training + downtime),
//               ended_unix (completed/failed/stopped, or paused
//               in an experiment that has ended: when), started_from {trial, step} (PBT),
//               cuts [step] (where the trial was interrupted: a restart resumed after it, or the
//               searcher paused it there),
//               curves [{t: "training"|"validation", m: metric, s: [step], v: [value, null = gap],
//                        n: finite values in trial.h5, inf: infinite values (not drawn)}],
//               attempts [{start, end (unix s), how ("notice": checkpointed on a notice and
//                          requeued, "crash", "unknown", "paused" by the searcher, or the trial's
//                          state for the last one), reason, nodes (last attempt only),
//                          resumed_step, steps_lost, seconds_lost, downtime}]}]
//   best_so_far {by_time: [[unix, value, trial]], by_trials: [[trials finished, value, trial]]}:
//               the searcher metric's best validation value so far, at each improvement
//   importance  {basis (which result of each trial was compared), trials, scores [{name, score,
//               groups}], method (text)}; scores empty below meta.min_trials_importance
//   asha        null, or {rungs: [{rung, length, results, went_on, stopped}], results: [{trial,
//               rung, length, metric, rank, peers, keep, action}]}
//   pbt         null, or {population, rounds, links: [{trial, parent, step, exploit, reason}]}
//   resources   {trials, findings: [{trial, text}]}, and each trial's `resources`: what it used of
//               its nodes (report_resources.hpp)
#include <cstddef>
#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "dlx/config/experiment.hpp"
#include "status_report.hpp"
#include "status_sources.hpp"

namespace dlx::cli::report {

struct ModelOptions {
  std::size_t point_budget = 300000;   // curve points for the whole page
  std::size_t max_curve_points = 2000;  // per curve (a screen is ~2,000 pixels wide)
  std::size_t min_curve_points = 64;    // per curve, whatever the number of curves
  std::int64_t now_unix = 0;
  std::optional<double> watch_seconds;
};

nlohmann::json report_model(const config::Experiment& experiment, const StatusReport& status,
                            const StatusSources& sources, const ModelOptions& options);

}  // namespace dlx::cli::report
