// SPDX-License-Identifier: Apache-2.0
#pragma once
// The report's "Resources": what each trial used of its nodes (its system samples,
// dlx/record/system_series.hpp) and the plain findings they support.
//
// Model (keys as the page reads them):
//   trial.resources  null (no samples), or {ranks: [{rank, node, attempt,
//                    cpu: {t: [unix s], v: [percent]}, mem: {t, v: [bytes]},
//                    and with GPU samples: gpu: {t, v: [percent, the mean of its GPUs]},
//                    gpu_mean, gpu_idle_share (of samples under 10%), gpu_idle_cpu_bound_share
//                    (of those, with the CPU at 90% of the rank's cores or more), gpu_samples}],
//                    cpu_mean, cpu_max (percent of one core, summed over the ranks at each
//                    sample time: the mean of the ranks' means, the largest rank's max),
//                    mem_peak (bytes: the largest of any rank), samples, and with GPU samples
//                    gpu_mean (the latest run's ranks' mean) and gpu_mem_peak (bytes, one GPU)}
//   resources        {trials: trials with samples, findings: [{trial, text}]}
// Findings: a trial whose ranks used far less CPU than the cores it asked for (cpus_per_task),
// one whose memory came close to its limit (mem_per_node), a rank that used much less CPU than
// the trial's other ranks (waiting on them, or they on it), the trial that used the most memory,
// a rank whose GPU was idle 30% of the time or more (input-bound when its CPU was saturated then).
#include <cstddef>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlx/config/experiment.hpp"
#include "dlx/record/system_series.hpp"

namespace dlx::cli::report {

// A trial's resources model, null without samples. `points`: per series, at most about this.
// `cores_per_rank`: what a rank may use (cpus_per_task, else Slurm's 1), for "saturated".
nlohmann::json trial_resources(const std::vector<record::SystemSeries>& series, std::size_t points,
                               double cores_per_rank = 1);

// The experiment-wide part, from the trials' models (each with "id" and "resources").
nlohmann::json resources_summary(const nlohmann::json& trials, const config::Experiment& experiment);

}  // namespace dlx::cli::report
