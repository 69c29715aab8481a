// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/options.hpp"

#include <sstream>

#include <boost/program_options.hpp>

namespace po = boost::program_options;

namespace dlx::launch {

namespace {

po::options_description visible_options() {
  po::options_description options("Options");
  options.add_options()
      ("help,h", "show this help")
      ("dry-run", "print the environment the command would get, and the command; run nothing");
  return options;
}

}  // namespace

std::string usage_text() {
  std::ostringstream out;
  out << "usage: dlx-launch [--dry-run] [-- COMMAND [ARGS...]]\n\n"
         "Runs COMMAND (default: the experiment's entrypoint) as one rank of a dlx trial, with\n"
         "RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR and MASTER_PORT\n"
         "set from Slurm's environment, forwards SIGTERM/SIGINT/SIGUSR1/SIGUSR2/SIGCONT to it and\n"
         "exits with its status. In a job script: srun --mpi=pmix dlx-launch\n\n"
      << visible_options();
  return out.str();
}

Options parse_options(int argc, const char* const* argv) {
  po::options_description all = visible_options();
  all.add_options()("command", po::value<std::vector<std::string>>(), "command to run");
  po::positional_options_description positional;
  positional.add("command", -1);
  po::variables_map values;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(),
              values);
    po::notify(values);
  } catch (const po::error& error) {
    throw UsageError(std::string(error.what()) +
                     " (put the command after --: dlx-launch -- COMMAND ARGS...)");
  }
  Options out;
  out.help = values.count("help") > 0;
  out.dry_run = values.count("dry-run") > 0;
  if (values.count("command") > 0) out.command = values["command"].as<std::vector<std::string>>();
  return out;
}

}  // namespace dlx::launch
