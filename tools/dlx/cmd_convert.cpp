// SPDX-License-Identifier: Apache-2.0
// dlx convert-determined: a Determined experiment file as the dlx experiment file that means the
// same, for the user to read and keep. The translation is the parser's own (what sbatch would
// run), written back with yaml-cpp's emitter; a comment header says what was mapped and what was
// dropped, and the output validates with `dlx validate`.
#include <iostream>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "dlx/config/display_text.hpp"
#include "dlx/config/ignored_keys.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/config/snapshot.hpp"
#include "options.hpp"
#include "site_defaults.hpp"

namespace dlx::cli {

namespace {

CommandLine convert_command_line() {
  namespace po = boost::program_options;
  CommandLine command("convert-determined", "FILE [--site-config FILE]",
                      "Prints the dlx experiment file equivalent to a Determined experiment file:\n"
                      "its keys with a dlx meaning mapped (slots_per_trial to nodes, tasks and GPUs,\n"
                      "environment_variables, experiment_seed, checkpoint_storage.save_*, ...), the\n"
                      "others dropped, and a comment header listing both. The site defaults apply as\n"
                      "in dlx validate (their GPUs per node spread slots_per_trial over nodes).\n"
                      "Exit status 1, with every problem listed, when the file is not valid.",
                      "dlx convert-determined const.yaml > experiment.yaml");
  command.options.add_options()("site-config", po::value<std::string>()->default_value("")->value_name("FILE"),
                                "site defaults to apply (as sbatch would)");
  command.operands.add_options()("file", po::value<std::string>()->required(), "Determined experiment file");
  command.positional.add("file", 1);
  return command;
}

std::string header_of(const config::Experiment& experiment, const std::string& file) {
  // Each line shown through printable(): the file's text must not end the comment early.
  std::string header =
      fmt::format("dlx experiment file converted from the Determined file {}", config::printable(file));
  header += "\nmapped:";
  if (experiment.determined.mapped.empty()) header += " nothing beyond the keys dlx shares with Determined";
  for (const auto& line : experiment.determined.mapped) header += "\n  " + config::printable(line);
  header += "\ndropped:";
  const auto dropped = config::ignored_determined_keys(experiment);  // the warning line's keys
  if (dropped.empty()) header += " nothing";
  for (const auto& line : dropped) header += "\n  " + config::printable(line);
  return header;
}

}  // namespace

int run_convert_determined(const Arguments& arguments) {
  auto values = parse_options(arguments, convert_command_line());
  const auto file = values["file"].as<std::string>();
  try {
    auto site = load_site_defaults(values["site-config"].as<std::string>());
    auto experiment = config::parse_experiment_file(file, site ? &*site : nullptr);
    std::cout << config::to_yaml_for_editing(experiment, header_of(experiment, file));
  } catch (const config::ConfigError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace dlx::cli
