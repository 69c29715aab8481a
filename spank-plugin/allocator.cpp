// The allocator context (sbatch, running as the submitting user).
//
//   1. parse and validate the experiment file: a bad file fails the submission before anything
//      is created or queued;
//   2. size the array from the searcher; respect (or reject) a user's explicit --array;
//   3. apply the experiment's resources unless the user set the same option (command line and
//      #SBATCH win over the experiment file), and the preemption notice (--signal from
//      plugstack.conf's signal=) unless the user gave --signal;
//   4. plan the code snapshot (code_snapshot_step.hpp): over its size cap, nothing is created;
//      check the data to stage (data_check_step.hpp): a path that is missing or unreadable, or
//      datasets over the cache's cap, fail the submission the same way;
//   5. create <storage_root>/<user>/<name>[.N]/, freeze experiment.yaml into it (seed included) and
//      copy the code snapshot into code/ (a failure removes the directory again);
//   6. hand the directory to the job: exported into sbatch's environment (so the batch script and
//      every step inherit DLX_EXPERIMENT_DIR) and into the job-control environment (prolog,
//      epilog and job_submit.lua see it, with DLX_ARRAY_SPEC for the Lua fallback).
#include "allocator.hpp"

#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <random>

#include <fmt/format.h>

#include "array_request.hpp"
#include "cluster_limits.hpp"
#include "code_snapshot_step.hpp"
#include "data_check_step.hpp"
#include "dlx/common/accounts.hpp"
#include "dlx/common/byte_size.hpp"
#include "dlx/common/trusted_path.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/config/snapshot.hpp"
#include "dlx/searcher/method.hpp"
#include "dlx/searcher/trial_plan.hpp"
#include "dlx/store/create_experiment_dir.hpp"
#include "plugin_state.hpp"
#include "remote.hpp"
#include "resource_options.hpp"
#include "sbatch_options.hpp"

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

}  // namespace

int prepare_submission(spank_t sp) {
  auto& plugin = state();
  const std::string& file = *plugin.experiment_file;

  config::Experiment experiment;
  int trials = 0;
  int tasks = 0;  // array tasks: more than trials when ASHA promotions run in later tasks
  try {
    std::optional<config::SiteConfig> site;
    if (!plugin.options.site_config.empty()) site = config::parse_site_config_file(plugin.options.site_config);
    experiment = config::parse_experiment_file(file, site ? &*site : nullptr);
    trials = searcher::trial_count(experiment);
    tasks = searcher::ticket_count(experiment);
    if (site && site->max_trials && trials > *site->max_trials) {
      throw config::ConfigError(experiment.searcher.where, "searcher",
                                fmt::format("the experiment has {} trials, above this site's limit of {} (set in {})",
                                            trials, *site->max_trials, site->source),
                                "run fewer trials, or ask your administrator");
    }
  } catch (const config::ConfigError& e) {
    // Every problem of the file (the first 20), each on its own line.
    const std::string problems = config::first_problems(e, 20);
    std::size_t start = 0;
    while (start <= problems.size()) {
      const auto end = problems.find('\n', start);
      report_error(fmt::format("dlx: --dl-experiment: {}", problems.substr(start, end - start)));
      if (end == std::string::npos) break;
      start = end + 1;
    }
    return -1;
  }
  for (const auto& warning : experiment.warnings) report_info(fmt::format("dlx: --dl-experiment: {}", warning));
  const ClusterFacts cluster = load_cluster_facts();
  if (cluster.max_array_size && static_cast<unsigned>(tasks) > *cluster.max_array_size) {
    report_error(fmt::format("dlx: --dl-experiment: {}: the experiment needs {} array tasks but this "
                             "cluster's MaxArraySize is {} (run fewer trials, or ask your administrator)",
                             file, tasks, *cluster.max_array_size));
    return -1;
  }
  if (!experiment.seed_given) {
    // Chosen once, here, and frozen: every trial and every rerun from the snapshot agrees.
    experiment.seed = std::random_device{}() & 0x7fffffffULL;
  }

  SbatchOptions sbatch;
  if (!sbatch.available()) {
    report_error("dlx: --dl-experiment: works with sbatch only (this Slurm command or version does not "
                 "expose sbatch's options; submit with sbatch)");
    return -1;
  }
  const std::string spec = searcher::array_spec(experiment);
  const bool user_array = sbatch.is_set("array");
  std::string array_note = spec;
  if (user_array) {
    std::string user_spec = sbatch.get("array").value_or("");
    if (auto problem = check_user_array(user_spec, tasks, file); !problem.empty()) {
      report_error("dlx: " + problem);
      return -1;
    }
    array_note = user_spec + " (from --array)";
  }
  if (!apply_resources(sbatch, experiment)) return -1;
  // The preemption notice (docs/fault-tolerance.md), unless the user chose their own --signal.
  if (!plugin.options.signal.empty() && !sbatch.is_set("signal") &&
      !sbatch.set("signal", plugin.options.signal)) {
    report_error(fmt::format("dlx: --dl-experiment: sbatch rejected --signal={} from plugstack.conf "
                             "(ask your administrator to fix the signal= option)",
                             plugin.options.signal));
    return -1;
  }
  if (!user_array && plugin.options.array_via == ArrayVia::sbatch && !sbatch.set("array", spec)) {
    report_error(fmt::format("dlx: --dl-experiment: sbatch rejected --array={} (is MaxArraySize below {}?)",
                             spec, tasks));
    return -1;
  }

  std::optional<store::CodePlan> code;
  try {
    code = plan_code(experiment, sbatch);
  } catch (const store::CodeSnapshotError& e) {
    report_error(fmt::format("dlx: --dl-experiment: {}", e.what()));
    return -1;
  }

  try {
    if (const auto bytes = check_data(experiment); bytes != 0) {
      report_info(fmt::format("dlx: data: {} dataset{} ({}) to stage on each node", experiment.data.stage.size(),
                              experiment.data.stage.size() == 1 ? "" : "s", format_byte_size(bytes)));
    }
  } catch (const DataCheckError& e) {
    report_error(fmt::format("dlx: --dl-experiment: {}: {} (nothing was submitted)", file, e.what()));
    return -1;
  }

  std::filesystem::path directory;
  try {
    directory = store::create_experiment_dir(plugin.options.storage_root, account_name(::getuid()), ::getuid(), experiment.name);
  } catch (const UntrustedPathError& e) {
    // Another user could swap what the trials will run: nothing is submitted (docs/security.md).
    report_error(fmt::format("dlx: --dl-experiment: refusing to create the experiment there: {}", e.what()));
    return -1;
  } catch (const Error& e) {
    report_error(fmt::format("dlx: --dl-experiment: cannot create the experiment directory: {} "
                             "(check storage_root in plugstack.conf and its permissions)", e.what()));
    return -1;
  }
  try {
    config::write_snapshot(experiment, directory);
    if (code) write_code(*code, directory);
  } catch (const std::exception& e) {
    // Made by this sbatch moments ago and not yet handed to any job: nothing half-made is left.
    std::error_code ignored;
    std::filesystem::remove_all(directory, ignored);
    report_error(fmt::format("dlx: --dl-experiment: {} (nothing was submitted)", e.what()));
    return -1;
  }

  ::setenv("DLX_EXPERIMENT_DIR", directory.c_str(), 1);
  spank_job_control_setenv(sp, "DLX_EXPERIMENT_DIR", directory.c_str(), 1);
  if (!user_array) spank_job_control_setenv(sp, "DLX_ARRAY_SPEC", spec.c_str(), 1);
  if (!cluster.tmp_fs.empty()) {
    // Slurm's TmpFS, one of the places the node-local code copy and data cache may go
    // (site_local_root): the job steps could not ask slurmctld without an RPC per step.
    ::setenv(kSlurmTmpFsVariable, cluster.tmp_fs.c_str(), 1);
    spank_job_control_setenv(sp, kSlurmTmpFsVariable, cluster.tmp_fs.c_str(), 1);
  }

  report_info(fmt::format("dlx: experiment {}: {} trial{} as array {} in {}", experiment.name, trials,
                          trials == 1 ? "" : "s", array_note, directory.string()));
  return 0;
}

}  // namespace dlx::spank
