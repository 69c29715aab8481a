// dlx_spank.so: the --dl-experiment option. This file only dispatches: each Slurm callback checks
// its context and calls the module for it (allocator.cpp inside sbatch, remote.cpp inside
// slurmstepd). Every callback catches everything: an exception must never unwind into Slurm.
// Jobs submitted without --dl-experiment are never touched.
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

extern "C" {
// Defined by hand: SPANK_PLUGIN() gives them internal linkage in C++ (PLATFORM-NOTES).
__attribute__((visibility("default"))) extern const char plugin_name[] = "dlx";
__attribute__((visibility("default"))) extern const char plugin_type[] = "spank";
__attribute__((visibility("default"))) extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
}

namespace dlx::spank {

namespace {

std::string options_problem;  // a plugstack.conf mistake, reported when --dl-experiment is used

int on_experiment_option(int /*value*/, const char* argument, int /*remote*/) {
  // Fires for #SBATCH directives and the command line, and (remote) once or twice per step:
  // idempotent, the last value wins.
  if (argument == nullptr || *argument == '\0') {
    report_error("dlx: --dl-experiment: needs a file (use --dl-experiment=exp.yaml)");
    return -1;
  }
  state().experiment_file = argument;
  return 0;
}

struct spank_option experiment_option = {
    const_cast<char*>("dl-experiment"),
    const_cast<char*>("FILE"),
    const_cast<char*>("Run the dlx experiment described in FILE as a job array, one task per trial"),
    1,
    0,
    on_experiment_option,
};

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
    slurm_verbose("dlx: %s: %s", callback, e.what());
  } catch (...) {
    report_error(fmt::format("dlx: {}: unexpected error", callback));
  }
  return -1;
}

}  // namespace

}  // namespace dlx::spank

using namespace dlx::spank;

extern "C" __attribute__((visibility("default"))) int slurm_spank_init(spank_t sp, int ac, char** av) {
  return guarded("init", [&] {
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
    return export_trial_environment(sp);
  });
  // Never fail the step from here: a failed user_init in a batch step drains the node (remote.hpp).
  // What went wrong was reported; dlx-launch refuses the trial.
  if (result != 0) spank_setenv(sp, kRefusalVariable, "dlx: user_init failed (see the error before this)", 1);
  return 0;
}
