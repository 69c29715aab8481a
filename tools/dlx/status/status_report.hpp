// SPDX-License-Identifier: Apache-2.0
#pragma once
// What `dlx status` knows of an experiment at one moment: one row per planned trial, from the
// frozen snapshot, each trials/<id>/trial.h5 (with its metrics log: values reported less than a
// second ago) and the searcher's state. Read-only; read again for each frame of --watch.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dlx/record/trial_record.hpp"
#include "dlx/config/experiment.hpp"
#include "dlx/searcher/trial_plan.hpp"

namespace dlx::cli {

// A running trial's use of its nodes now: the last sample of each rank of its current run
// (dlx/record/system_series.hpp), summed over the ranks.
struct SystemNow {
  double cpu_percent = 0;   // 100: one core
  double memory_bytes = 0;
  // The GPUs' (gpu<k>_* series, gpu_usage.hpp): utilisation averaged over the trial's GPUs, and
  // the memory its processes hold on them; absent when no rank sampled a GPU.
  std::optional<double> gpu_percent;
  std::optional<double> gpu_memory_bytes;
  int ranks = 0;
  double sampled_unix = 0;  // the oldest of the ranks' last samples
};

struct TrialRow {
  searcher::TrialSpec spec;
  // What dlx status shows (trial_status.hpp): trial.h5's state, or what the record and Slurm say
  // of it now: pending, running, requeued, restarting, crash-looping, launch failed, lost, not
  // started, completed, failed, stopped, paused, unreadable.
  std::string state = "pending";
  std::string state_note;   // "1 of 5": the crash restart a restarting or crash-looping trial is at
  std::string detail;       // one line on what the state means now, for the lines under the table
  std::string record_state; // trial.h5's own state ("" without a record)
  std::string problem;      // why trial.h5 could not be read
  std::string stop_reason;  // trial.h5's: why a failed trial failed, ...
  std::string last_error;   // trial.h5's: the last crash ("exit 1: ValueError: ...")
  int failures = 0;         // crashes so far
  int same_failures = 0;    // of them, the last ones in a row that looked the same
  std::optional<int> ticket;  // the array task that runs (or ran) it, when known
  bool launched = false;      // dlx-launch took it on: trials/<id>/logs/ exists
  std::vector<record::HparamWarning> hparam_warnings;
  std::optional<double> last, best;
  bool metric_in_training_only = false;  // reported the searcher's metric in training, never validated
  std::vector<double> metric_values;  // the searcher metric's validation values, in row order
  std::optional<std::int64_t> last_step;  // the last step it reported anything at
  std::int64_t target_length = 0;         // where the searcher sends a running trial (0: no target)
  std::string searcher;  // the searcher's word on it: "stopped at 9", "running to 27"
  // trial.h5's attempts: the nodes of the latest one, and each restart (the attempt it ended, on
  // which nodes, why: docs/file-format.md, restart_events).
  std::string nodes;
  std::optional<SystemNow> system;  // running trials that sample (resources.sample_period)
  std::vector<record::RestartEvent> restarts;

  // Completed or failed in its trial.h5: it will not change again (a pending, running or paused
  // trial may).
  bool ended() const { return state == "completed" || state == "failed"; }
  // The table's cell: "restarting (1 of 5)".
  std::string shown_state() const { return state_note.empty() ? state : state + " (" + state_note + ")"; }
};

struct StatusReport {
  std::filesystem::path directory;
  std::vector<TrialRow> rows;
  std::map<std::string, int> states;  // how many trials in each state
  // Nothing will change any more: every trial completed or failed, or the searcher is done (it has
  // answered every array task, no trial runs and every pause is settled) and no trial.h5 says
  // running. An experiment the searcher ends with trials left paused or stopped for good (ASHA's
  // promotion variant, PBT, stopping ASHA) is finished so, though those trials never complete.
  bool finished = false;
  std::optional<std::size_t> best_row;
  bool searcher_column = false;
  // The code snapshot's origin (code.json): "commit 3f2a9c1d0b7e (dirty) on main", "not in git";
  // empty when the experiment has none.
  std::string code;
  std::optional<std::string> code_commit;  // for --json: the full commit, when in git
  bool code_dirty = false;  // the searcher has something to say of some trial
  // The container images the trials ran in (trials/<id>/container.json), one line each distinct:
  // "/shared/torch.oci (sha256:9edc...) with crun"; empty when no trial ran in one.
  std::vector<std::string> containers;
  // "dlx status: warning: ...\n" lines for stderr (a journal snapshot ignored, a damaged journal),
  // left to the caller: --watch shows each once, not every frame.
  std::vector<std::string> warnings;
  // The trials' hyperparameter name warnings, merged across trials (hparam_warnings.hpp): lines
  // for under the table and for the report.
  std::vector<std::string> hparam_warnings;
  // What Slurm said of the experiment's array job, in one line ("" when it was not asked).
  std::string slurm;
};

struct StatusSources;  // status_sources.hpp: what read_status read, for dlx report
struct SlurmView;      // trial_status.hpp: what Slurm says of the array job's tasks

// `slurm`: what Slurm says of the experiment's array job (nullptr: not asked; each row then
// shows what its record says).
StatusReport read_status(const std::filesystem::path& directory, const config::Experiment& experiment,
                         StatusSources* sources = nullptr, const SlurmView* slurm = nullptr);

}  // namespace dlx::cli
