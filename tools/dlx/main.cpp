// dlx: the researcher's and the administrator's command line.
#include <cstdio>
#include <exception>
#include <string>

#include <fmt/format.h>

#include "commands.hpp"

namespace {

constexpr const char* kUsage = R"(usage: dlx COMMAND [ARGS...]

Commands:
  validate FILE... [--json]     check experiment files (exit 0 when all are valid)
  plan FILE [--json]            the trials an experiment runs and their hyperparameters
  status JOBID|DIR [--json]     one row per trial: state, hyperparameters, last and best metric
  cluster up|down|env|status    a real single-host Slurm cluster for trying dlx (needs root for up)
  ckpt ls|verify|show|gc ...    checkpoints: list with validity and retention, verify, inspect, clean up
  replay JOBID|DIR [--json]     the searcher's decisions rebuilt from the journal, each with its reason
  doctor [--json]               check this cluster's Slurm settings for dlx (requeue, preemption, plugin)
  storage add-user USER...|check  users' directories in the storage root (add-user: root)

Submit an experiment with:  sbatch --dl-experiment=exp.yaml job.sh
)";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  const dlx::cli::Arguments arguments(argv + 2, argv + argc);
  try {
    if (command == "validate") return dlx::cli::run_validate(arguments);
    if (command == "plan") return dlx::cli::run_plan(arguments);
    if (command == "status") return dlx::cli::run_status(arguments);
    if (command == "cluster") return dlx::cli::run_cluster(arguments, argv[0]);
    if (command == "ckpt") return dlx::cli::run_ckpt(arguments);
    if (command == "replay") return dlx::cli::run_replay(arguments);
    if (command == "doctor") return dlx::cli::run_doctor(arguments);
    if (command == "storage") return dlx::cli::run_storage(arguments);
    throw dlx::cli::UsageError(fmt::format("unknown command '{}'", command));
  } catch (const dlx::cli::UsageError& e) {
    fmt::print(stderr, "dlx: {}\n\n{}", e.what(), kUsage);
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "dlx {}: {}\n", command, e.what());
    return 1;
  }
}
