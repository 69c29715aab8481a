// SPDX-License-Identifier: Apache-2.0
// dlx_spank.so: the --dl-experiment option. This file only dispatches: each Slurm callback checks
// its context and calls the module for it (allocator.cpp inside sbatch, remote.cpp inside
// slurmstepd). Every callback catches everything: an exception must never unwind into Slurm.
// Jobs submitted without --dl-experiment are never touched, also when the plugin refuses to work
// under the Slurm that loaded it (running_slurm.hpp): then only --dl-experiment is refused.
extern "C" {
#include <slurm/spank.h>
}

#include <chrono>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "allocator.hpp"
#include "dlx/common/error.hpp"
#include "plugin_state.hpp"
#include "remote.hpp"
#include "running_slurm.hpp"

// plugin_name, plugin_type and plugin_version: plugin_identity.cpp.

namespace dlx::spank {

namespace {

std::string options_problem;  // a plugstack.conf mistake, reported when --dl-experiment is used
std::string slurm_problem;    // another Slurm release than the one built for: --dl-experiment refused

template <typename Body>
int guarded(const char* callback, Body body) noexcept {
  try {
    return body();
  } catch (const dlx::Error& e) {
    report_error(fmt::format("dlx: {}: {}", callback, e.what()));
  } catch (const std::bad_alloc&) {
    report_error(fmt::format("dlx: {}: out of memory (is the experiment file or --array far larger than "
                             "usual?)", callback));
  } catch (const std::exception& e) {
    // A library's own words ("stol") tell a user nothing: they go to the verbose log, for a report.
    report_error(fmt::format("dlx: {}: internal error (a dlx bug: please report it with the command and the "
                             "experiment file; sbatch -v shows the detail)", callback));
    report_verbose(fmt::format("dlx: {}: {}", callback, e.what()));
  } catch (...) {
    report_error(fmt::format("dlx: {}: unexpected error", callback));
  }
  return -1;
}

int on_experiment_option(int /*value*/, const char* argument, int /*remote*/) {
  // Fires for #SBATCH directives and the command line, and (remote) once or twice per step:
  // idempotent, the last value wins.
  return guarded("--dl-experiment", [&] {
    if (argument == nullptr || *argument == '\0') {
      report_error("dlx: --dl-experiment: needs a file (use --dl-experiment=exp.yaml)");
      return -1;
    }
    state().experiment_file = argument;
    return 0;
  });
}

struct spank_option experiment_option = {
    const_cast<char*>("dl-experiment"),
    const_cast<char*>("FILE"),
    const_cast<char*>("Run the dlx experiment described in FILE as a job array, one task per trial"),
    1,
    0,
    on_experiment_option,
};

}  // namespace

}  // namespace dlx::spank

using namespace dlx::spank;

extern "C" __attribute__((visibility("default"))) int slurm_spank_init(spank_t sp, int ac, char** av) {
  return guarded("init", [&] {
    slurm_problem = running_slurm_problem(sp);
    // Said once per slurmd start, in its log, for the administrator; jobs without --dl-experiment
    // run on. The option is still registered, so that sbatch refuses it with this line.
    if (!slurm_problem.empty() && spank_context() == S_CTX_SLURMD) report_error(slurm_problem);
    std::vector<std::string> arguments(av, av + ac);
    try {
      state().options = parse_plugin_options(arguments);
    } catch (const dlx::Error& e) {
      options_problem = e.what();
    }
    if (spank_option_register(sp, &experiment_option) != ESPANK_SUCCESS) {
      report_error("dlx: cannot register --dl-experiment");
      return -1;
    }
    return 0;
  });
}

extern "C" __attribute__((visibility("default"))) int slurm_spank_init_post_opt(spank_t sp, int, char**) {
  return guarded("init_post_opt", [&] {
    if (spank_context() != S_CTX_ALLOCATOR || !state().experiment_file) return 0;
    if (!slurm_problem.empty()) {
      report_error(slurm_problem);
      return -1;
    }
    if (!options_problem.empty()) {
      report_error("dlx: " + options_problem);
      return -1;
    }
    auto start = std::chrono::steady_clock::now();
    int result = prepare_submission(sp);
    auto elapsed = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
    slurm_verbose("dlx: submission prepared in %.1f ms", elapsed.count());
    return result;
  });
}

extern "C" __attribute__((visibility("default"))) int slurm_spank_user_init(spank_t sp, int, char**) {
  const int result = guarded("user_init", [&] {
    if (!spank_remote(sp) || !state().experiment_file) return 0;
    if (!slurm_problem.empty()) {
      // A node whose Slurm is not the release the plugin was built for (the submit host's was):
      // the step runs, in the slurmd log and the job's output the reason, and dlx-launch refuses.
      report_error(slurm_problem);
      spank_setenv(sp, kRefusalVariable, slurm_problem.c_str(), 1);
      return 0;
    }
    return export_trial_environment(sp);
  });
  // Never fail the step from here: a failed user_init in a batch step drains the node (remote.hpp).
  // What went wrong was reported; dlx-launch refuses the trial.
  if (result != 0) spank_setenv(sp, kRefusalVariable, "dlx: user_init failed (see the error before this)", 1);
  return 0;
}

extern "C" __attribute__((visibility("default"))) int slurm_spank_exit(spank_t, int, char**) {
  return guarded("exit", [&] {
    if (spank_context() == S_CTX_ALLOCATOR && state().experiment_file) finish_submission();
    return 0;
  });
}
