// SPDX-License-Identifier: Apache-2.0
// dlx: the researcher's and the administrator's command line.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>
#include <string>

#include <fmt/format.h>

#include "commands.hpp"
#include "dlx/config/display_text.hpp"
#include "options.hpp"

namespace {

constexpr const char* kUsage = R"(usage: dlx COMMAND [ARGS...]

Commands:
  validate FILE... [--json]     check experiment files (exit 0 when all are valid)
  plan FILE [--json]            the trials an experiment runs and their hyperparameters
  convert-determined FILE       the dlx experiment file equivalent to a Determined one
  status JOBID|DIR [--json]     one row per trial: state, hyperparameters, last and best metric
  cluster up|down|env|status    a real single-host Slurm cluster for trying dlx (needs root for up)
  ckpt ls|verify|show|gc ...    checkpoints: list with validity and retention, verify, inspect, clean up
  replay JOBID|DIR [--json]     the searcher's decisions rebuilt from the journal, each with its reason
  export tensorboard JOBID|DIR OUTDIR  TensorBoard event files: one run per trial, HParams dashboard
  report JOBID|DIR [-o FILE]    one self-contained HTML page: curves, trial table, search, restarts
  doctor [--json]               check this cluster's Slurm settings for dlx (requeue, preemption, plugin)
  storage add-user USER...|check  users' directories in the storage root (add-user: root)
  logs JOBID|DIR TRIAL [--follow]  a trial's output, attempt by attempt (--attempt N, --json)
  data ls|gc [--dir DIR]        your node-local cache of staged datasets on this node: list, clean up
  help [COMMAND [SUBCOMMAND]]   a command's usage, options and an example (or: dlx COMMAND --help)

Submit an experiment with:  sbatch --dl-experiment=exp.yaml job.sh
)";

// Memory for the way out of an out-of-memory failure: nlohmann's destructors allocate (an explicit
// stack instead of recursion), so a std::bad_alloc thrown with the heap exhausted ended in
// std::terminate while unwinding ("terminate called after throwing an instance of
// 'std::bad_alloc'"). The first allocation that fails releases this reserve, then throws as
// operator new would have; unwinding and the message below then have room.
char* out_of_memory_reserve = nullptr;

void release_reserve_and_throw() {
  if (out_of_memory_reserve == nullptr) throw std::bad_alloc();
  delete[] out_of_memory_reserve;
  out_of_memory_reserve = nullptr;
  throw std::bad_alloc();
}

// One command, dispatched by name. Throws UsageError for a name that is no command.
int run_command(const std::string& command, const dlx::cli::Arguments& arguments, const char* program) {
  if (command == "validate") return dlx::cli::run_validate(arguments);
  if (command == "plan") return dlx::cli::run_plan(arguments);
  if (command == "convert-determined") return dlx::cli::run_convert_determined(arguments);
  if (command == "status") return dlx::cli::run_status(arguments);
  if (command == "cluster") return dlx::cli::run_cluster(arguments, program);
  if (command == "ckpt") return dlx::cli::run_ckpt(arguments);
  if (command == "replay") return dlx::cli::run_replay(arguments);
  if (command == "export") return dlx::cli::run_export(arguments);
  if (command == "report") return dlx::cli::run_report(arguments);
  if (command == "doctor") return dlx::cli::run_doctor(arguments);
  if (command == "storage") return dlx::cli::run_storage(arguments);
  if (command == "logs") return dlx::cli::run_logs(arguments);
  if (command == "data") return dlx::cli::run_data(arguments);
  throw dlx::cli::UsageError(fmt::format("unknown command '{}'", dlx::config::abbreviated(command)));
}

// The command's run, every error turned into its message and exit status at this one edge.
int run_reporting_errors(const std::string& command, const dlx::cli::Arguments& arguments, const char* program) {
  try {
    return run_command(command, arguments, program);
  } catch (const dlx::cli::HelpRequested& help) {
    std::fputs(help.what(), stdout);
    return 0;
  } catch (const dlx::cli::UsageError& e) {
    fmt::print(stderr, "dlx: {}\n\n{}", e.what(), e.usage().empty() ? kUsage : e.usage());
    return 2;
  } catch (const dlx::Error& e) {
    // dlx's own messages (what, where, how to fix), escaped: they quote paths, job ids and file
    // contents, which may hold control characters.
    fmt::print(stderr, "dlx {}: {}\n", dlx::config::printable(command), dlx::config::printable(e.what()));
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    fmt::print(stderr, "dlx {}: cannot access {}: {} (check the path and its permissions)\n",
               dlx::config::printable(command), dlx::config::printable(e.path1().string()), e.code().message());
    return 1;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "dlx {}: out of memory (a file it read may be far larger than it should be, or "
               "crafted: check the files named in the command; `ulimit -v` shows this shell's limit)\n",
               dlx::config::printable(command));
    return 1;
  } catch (const std::exception&) {
    // A library's own words ("stol", "[json.exception...]") would mean nothing to the user.
    fmt::print(stderr, "dlx {}: internal error (a dlx bug: please report it with the command you ran and "
               "the files it read)\n", dlx::config::printable(command));
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  out_of_memory_reserve = new char[64 << 20];  // address space only: its pages are never touched
  std::set_new_handler(release_reserve_and_throw);
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string command = argv[1];
  dlx::cli::Arguments arguments(argv + 2, argv + argc);
  // `dlx help COMMAND [SUBCOMMAND]` is `dlx COMMAND [SUBCOMMAND] --help`; `dlx help`, this list.
  if (command == "help") {
    const bool list = arguments.empty() || arguments.front() == "help" || arguments.front() == "--help" ||
                      arguments.front() == "-h";
    if (list) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    command = arguments.front();
    arguments.erase(arguments.begin());
    arguments.emplace_back("--help");
  }
  return run_reporting_errors(command, arguments, argv[0]);
}
