// SPDX-License-Identifier: Apache-2.0
// The allocator context (sbatch, running as the submitting user).
//
//   1. parse and validate the experiment file: a bad file fails the submission before anything
//      is created or queued (parse_and_validate);
//   2. size the array from the searcher, within the cluster's MaxArraySize; respect (or reject)
//      a user's explicit --array (size_array);
//   3. apply the experiment's resources unless the user set the same option (command line and
//      #SBATCH win over the experiment file; GPUs per node that no node has are refused,
//      gpu_request_check.hpp), the preemption notice (--signal from plugstack.conf's
//      signal=) unless the user gave --signal, and the array unless the user gave --array or the
//      site sets it in job_submit.lua (apply_options);
//   4. plan the code snapshot (code_snapshot_step.hpp): over its size cap, nothing is created;
//      an entrypoint script the snapshot lacks (entrypoint_check.hpp) or a Determined Trial
//      class that dlx cannot run (TFKerasTrial, ...) fails the submission
//      (trial_class_check.hpp); check the data to stage (data_check_step.hpp) and the container
//      image (container_check.hpp): a path that is missing or unreadable, datasets over the
//      cache's cap, or an image without the entrypoint's program fail the submission the same
//      way (plan_code_and_data);
//   5. create <storage_root>/<user>/<name>[.N]/, name the job after it unless the user named it,
//      freeze experiment.yaml into it (seed included) and copy the code snapshot into code/ (a
//      failure removes the directory again) (create_and_freeze);
//   6. hand the directory to the job: exported into sbatch's environment (so the batch script and
//      every step inherit DLX_EXPERIMENT_DIR) and into the job-control environment (prolog,
//      epilog and job_submit.lua see it, with DLX_ARRAY_SPEC for the Lua fallback) (hand_to_job).
// prepare_submission runs them in order over one Submission; the first that fails ends it. At
// sbatch's exit, finish_submission removes the directory again when slurmctld did not take the
// job (refused_job_cleanup.hpp).
#include "allocator.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <random>
#include <string>

#include <fmt/format.h>

#include "array_request.hpp"
#include "cluster_limits.hpp"
#include "code_snapshot_step.hpp"
#include "container_check.hpp"
#include "data_check_step.hpp"
#include "dlx/common/accounts.hpp"
#include "dlx/common/byte_size.hpp"
#include "dlx/common/trusted_path.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/config/snapshot.hpp"
#include "dlx/config/trial_api.hpp"
#include "dlx/searcher/method.hpp"
#include "dlx/searcher/trial_plan.hpp"
#include "dlx/store/create_experiment_dir.hpp"
#include "entrypoint_check.hpp"
#include "plugin_state.hpp"
#include "refused_job_cleanup.hpp"
#include "remote.hpp"
#include "resource_options.hpp"
#include "sbatch_options.hpp"
#include "trial_class_check.hpp"

namespace dlx::spank {

namespace {

// The experiment's resources (with the site defaults merged in) become sbatch options unless the
// user gave the same option on the command line or as #SBATCH.
bool apply_resources(SbatchOptions& sbatch, const config::Experiment& experiment) {
  for (const auto& [option, value] : resource_options(experiment)) {
    if (sbatch.is_set(option.c_str())) continue;
    if (!sbatch.set(option.c_str(), value)) {
      report_error(fmt::format("dlx: --dl-experiment: sbatch rejected --{}={} from {} (check resources)",
                               option, value, experiment.source_file));
      return false;
    }
  }
  return true;
}

// Whether the user gave GPU options of their own (command line or #SBATCH): then they, not the
// experiment, ask Slurm for GPUs. Read before apply_resources sets the experiment's.
bool user_asks_for_gpus(const SbatchOptions& sbatch) {
  return std::ranges::any_of(std::initializer_list<const char*>{"gpus", "gpus-per-node", "gpus-per-task",
                                                                "gpus-per-socket", "gres"},
                             [&](const char* option) { return sbatch.is_set(option); });
}

// A trial's GPUs (or shards) per node that no node of the cluster has: refused before anything is
// created (gpu_request_check.hpp). Asked of slurmctld only for an experiment with GPUs.
bool check_gpu_request(const config::Experiment& experiment, const std::string& file) {
  if (!experiment.resources.gpus_per_node.value_or(0)) return true;
  if (const auto refusal = unplaceable_gpu_request(experiment, load_node_gres())) {
    report_error(fmt::format("dlx: --dl-experiment: {}: {} (nothing was submitted)", file, *refusal));
    return false;
  }
  return true;
}

// The directory this sbatch created, for finish_submission at its exit.
std::optional<CreatedExperiment> created_experiment;

// What the six steps (above) build up, one after another.
struct Submission {
  std::string file;               // the --dl-experiment file
  config::Experiment experiment;  // parsed, site defaults merged, the seed chosen
  int trials = 0;
  int tasks = 0;  // array tasks: more than trials when ASHA promotions run in later tasks
  ClusterFacts cluster;
  SbatchOptions sbatch;
  std::string spec;        // the array the searcher needs
  bool user_array = false;  // the user gave --array
  std::string array_note;   // the array as the last line names it
  std::optional<store::CodePlan> code;
  std::filesystem::path directory;
};

// Each step below does its part, or reports why the submission fails and returns false.

// Every problem of the file (the first 20), each on its own line.
void report_problems(const config::ConfigError& error) {
  const std::string problems = config::first_problems(error, 20);
  std::size_t start = 0;
  while (start <= problems.size()) {
    const auto end = problems.find('\n', start);
    report_error(fmt::format("dlx: --dl-experiment: {}", problems.substr(start, end - start)));
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

// 1. Parse and validate the experiment file (with the site's defaults and trial cap).
bool parse_and_validate(Submission& submission, const PluginOptions& options) {
  try {
    std::optional<config::SiteConfig> site;
    if (!options.site_config.empty()) site = config::parse_site_config_file(options.site_config);
    submission.experiment = config::parse_experiment_file(submission.file, site ? &*site : nullptr);
    config::check_site_allows(submission.experiment, site ? &*site : nullptr);
    submission.trials = searcher::trial_count(submission.experiment);
    submission.tasks = searcher::ticket_count(submission.experiment);
    if (site && site->max_trials && submission.trials > *site->max_trials) {
      throw config::ConfigError(submission.experiment.searcher.where, "searcher",
                                fmt::format("the experiment has {} trials, above this site's limit of {} (set in {})",
                                            submission.trials, *site->max_trials, site->source),
                                "run fewer trials, or ask your administrator");
    }
  } catch (const config::ConfigError& e) {
    report_problems(e);
    return false;
  }
  for (const auto& warning : submission.experiment.warnings) {
    report_info(fmt::format("dlx: --dl-experiment: {}", warning));
  }
  if (!submission.experiment.seed_given) {
    // Chosen once, here, and frozen: every trial and every rerun from the snapshot agrees.
    submission.experiment.seed = std::random_device{}() & 0x7fffffffULL;
  }
  return true;
}

// 2. Size the array from the searcher, within the cluster's MaxArraySize; respect (or reject) a
//    user's explicit --array.
bool size_array(Submission& submission) {
  submission.cluster = load_cluster_facts();
  const auto& cluster = submission.cluster;
  auto& experiment = submission.experiment;
  const int tickets = searcher::ticket_count(experiment);
  // More tickets than the cluster takes array tasks: each task runs several in turn. Frozen with
  // the snapshot, so every task, requeue and `dlx status` maps tickets to tasks alike.
  const bool capped = cluster.max_array_size && searcher::fit_array_to_cluster(experiment, *cluster.max_array_size);
  submission.tasks = searcher::array_task_count(experiment);
  if (submission.tasks < tickets) {
    report_info(fmt::format("dlx: --dl-experiment: {} {} on {} array tasks ({}): each task runs {}", tickets,
                            tickets == submission.trials ? "trials" : "tickets", submission.tasks,
                            capped ? "this cluster's MaxArraySize" : searcher::array_tasks_cause(experiment),
                            searcher::task_load_text(experiment)));
  }
  if (const auto sharing = searcher::shard_sharing_text(experiment); !sharing.empty()) {
    report_info(fmt::format("dlx: --dl-experiment: {}", sharing));
  }
  if (!submission.sbatch.available()) {
    report_error("dlx: --dl-experiment: works with sbatch only (this Slurm command or version does not "
                 "expose sbatch's options; submit with sbatch)");
    return false;
  }
  submission.spec = searcher::array_spec(submission.experiment);
  submission.user_array = submission.sbatch.is_set("array");
  submission.array_note = submission.spec;
  if (submission.user_array) {
    const std::string user_spec = submission.sbatch.get("array").value_or("");
    if (auto problem = check_user_array(user_spec, submission.tasks, submission.file); !problem.empty()) {
      report_error("dlx: " + problem);
      return false;
    }
    submission.array_note = user_spec + " (from --array)";
  }
  return true;
}

// 3. The experiment's resources, the preemption notice and the array as sbatch options, each
//    unless the user gave it.
bool apply_options(Submission& submission, const PluginOptions& options) {
  auto& sbatch = submission.sbatch;
  const bool own_gpus = user_asks_for_gpus(sbatch);
  if (!apply_resources(sbatch, submission.experiment)) return false;
  if (!own_gpus && !check_gpu_request(submission.experiment, submission.file)) return false;
  // The preemption notice (docs/fault-tolerance.md), unless the user chose their own --signal.
  if (!options.signal.empty() && !sbatch.is_set("signal") && !sbatch.set("signal", options.signal)) {
    report_error(fmt::format("dlx: --dl-experiment: sbatch rejected --signal={} from plugstack.conf "
                             "(ask your administrator to fix the signal= option)",
                             options.signal));
    return false;
  }
  if (!submission.user_array && options.array_via == ArrayVia::sbatch && !sbatch.set("array", submission.spec)) {
    report_error(fmt::format("dlx: --dl-experiment: sbatch rejected --array={} (is MaxArraySize below {}?)",
                             submission.spec, submission.tasks));
    return false;
  }
  return true;
}

// The entrypoint's script (entrypoint_check.hpp): not in the code snapshot, the submission is
// refused; without a snapshot, not there now, a warning.
bool check_entrypoint_script(const Submission& submission) {
  const auto& experiment = submission.experiment;
  if (const auto& plan = submission.code) {
    std::vector<std::string> files;
    files.reserve(plan->files.size());
    for (const auto& entry : plan->files) files.push_back(entry.path);
    auto refusal = script_missing_from_snapshot(experiment, files, plan->root, plan->workdir);
    if (!refusal) {
      refusal = script_not_executable_in_snapshot(experiment, plan->workdir, [&](const std::string& path) {
        const auto entry = std::ranges::lower_bound(plan->files, path, {}, &store::CodeEntry::path);
        return entry != plan->files.end() && entry->path == path && !entry->symlink ? std::optional(entry->mode)
                                                                                    : std::nullopt;
      });
    }
    if (refusal) {
      report_error(fmt::format("dlx: --dl-experiment: {}: {} (nothing was submitted)", submission.file, *refusal));
      return false;
    }
  } else {
    const auto start_dir = trial_start_dir(submission.code, submission.sbatch);
    auto note = script_missing_from(experiment, start_dir);
    if (!note) note = script_not_executable_in(experiment, start_dir);
    if (note) report_info(fmt::format("dlx: --dl-experiment: warning: {}", *note));
  }
  return true;
}

// 4. Plan the code snapshot, look at the entrypoint's script and a Determined Trial class and
//    check the data to stage, before anything is created.
bool plan_code_and_data(Submission& submission) {
  auto& experiment = submission.experiment;  // the code plan and the data check complete it
  try {
    submission.code = plan_code(experiment, submission.sbatch);
  } catch (const store::CodeSnapshotError& e) {
    report_error(fmt::format("dlx: --dl-experiment: {}", e.what()));
    return false;
  }
  if (!check_entrypoint_script(submission)) return false;
  if (auto trial_class = config::trial_class_of(experiment)) {
    TrialClassFinding finding;
    try {
      finding = check_trial_class(*trial_class, trial_start_dir(submission.code, submission.sbatch));
    } catch (const std::exception& e) {  // a look that failed is no refusal: the harness decides
      finding.note = fmt::format("entrypoint {}: its module could not be read ({})", *trial_class, e.what());
    }
    if (finding.refusal) {
      report_error(fmt::format("dlx: --dl-experiment: {}: {} (nothing was submitted)", submission.file,
                               *finding.refusal));
      return false;
    }
    if (finding.note) report_info(fmt::format("dlx: --dl-experiment: {}", *finding.note));
  }
  try {
    if (const auto bytes = check_data(experiment); bytes != 0) {
      report_info(fmt::format("dlx: data: {} dataset{} ({}) to stage on each node", experiment.data.stage.size(),
                              experiment.data.stage.size() == 1 ? "" : "s", format_byte_size(bytes)));
    }
  } catch (const DataCheckError& e) {
    report_error(fmt::format("dlx: --dl-experiment: {}: {} (nothing was submitted)", submission.file, e.what()));
    return false;
  }
  try {
    check_container(experiment);
    const bool gpus = experiment.resources.gpus_per_node.value_or(0) > 0;
    if (const auto image = experiment.container.image_for(gpus)) {
      report_info(fmt::format("dlx: container: trials run in the image {} (runtime: {})", *image,
                              experiment.container.runtime));
    }
  } catch (const ContainerCheckError& e) {
    report_error(fmt::format("dlx: --dl-experiment: {}: {} (nothing was submitted)", submission.file, e.what()));
    return false;
  }
  return true;
}

// 5. Create the experiment directory, name the job after it (unique among the user's experiments,
//    so that `dlx status` finds the job of an experiment none of whose tasks has started:
//    tools/dlx/slurm_job_name.hpp), freeze experiment.yaml into it and copy the code snapshot (a
//    failure removes the directory again).
bool create_and_freeze(Submission& submission, const PluginOptions& options) {
  const std::time_t created = std::time(nullptr);
  try {
    submission.directory = store::create_experiment_dir(options.storage_root, account_name(::getuid()), ::getuid(),
                                                        submission.experiment.name);
  } catch (const UntrustedPathError& e) {
    // Another user could swap what the trials will run: nothing is submitted (docs/security.md).
    report_error(fmt::format("dlx: --dl-experiment: refusing to create the experiment there: {}", e.what()));
    return false;
  } catch (const Error& e) {
    report_error(fmt::format("dlx: --dl-experiment: cannot create the experiment directory: {} "
                             "(check storage_root in plugstack.conf and its permissions)", e.what()));
    return false;
  }
  try {
    const std::string job_name = submission.directory.filename().string();
    if (!submission.sbatch.is_set("job-name") && !submission.sbatch.set("job-name", job_name)) {
      throw Error(fmt::format("sbatch rejected --job-name={}", job_name));
    }
    config::write_snapshot(submission.experiment, submission.directory);
    if (submission.code) write_code(*submission.code, submission.directory);
    created_experiment = CreatedExperiment{submission.directory, submission.sbatch.get("job-name").value_or(job_name),
                                           created, directory_entries(submission.directory)};
  } catch (const std::exception& e) {
    // Made by this sbatch moments ago and not yet handed to any job: nothing half-made is left.
    std::error_code ignored;
    std::filesystem::remove_all(submission.directory, ignored);
    report_error(fmt::format("dlx: --dl-experiment: {} (nothing was submitted)", e.what()));
    return false;
  }
  return true;
}

// 6. Hand the directory to the job: sbatch's environment and the job-control environment.
void hand_to_job(spank_t sp, const Submission& submission) {
  const char* directory = submission.directory.c_str();
  ::setenv("DLX_EXPERIMENT_DIR", directory, 1);
  spank_job_control_setenv(sp, "DLX_EXPERIMENT_DIR", directory, 1);
  if (!submission.user_array) spank_job_control_setenv(sp, "DLX_ARRAY_SPEC", submission.spec.c_str(), 1);
  if (const auto& tmp_fs = submission.cluster.tmp_fs; !tmp_fs.empty()) {
    // Slurm's TmpFS, one of the places the node-local code copy and data cache may go
    // (site_local_root): the job steps could not ask slurmctld without an RPC per step.
    ::setenv(kSlurmTmpFsVariable, tmp_fs.c_str(), 1);
    spank_job_control_setenv(sp, kSlurmTmpFsVariable, tmp_fs.c_str(), 1);
  }
  const int trials = submission.trials;
  report_info(fmt::format("dlx: experiment {}: {} trial{} as array {} in {}", submission.experiment.name, trials,
                          trials == 1 ? "" : "s", submission.array_note, submission.directory.string()));
}

}  // namespace

int prepare_submission(spank_t sp) {
  const auto& plugin = state();
  Submission submission;
  submission.file = *plugin.experiment_file;
  if (!parse_and_validate(submission, plugin.options) || !size_array(submission) ||
      !apply_options(submission, plugin.options) || !plan_code_and_data(submission) ||
      !create_and_freeze(submission, plugin.options)) {
    return -1;
  }
  hand_to_job(sp, submission);
  return 0;
}

void finish_submission() noexcept {
  if (created_experiment) remove_if_not_submitted(*created_experiment, SbatchOptions());
}

}  // namespace dlx::spank
