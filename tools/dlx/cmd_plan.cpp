// dlx plan: what an experiment will run before it spends GPU hours: the resolved configuration,
// the sbatch options, ASHA's rungs and every planned trial with its hyperparameters.
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "dlx/config/display_text.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/config/snapshot.hpp"
#include "dlx/searcher/asha_rungs.hpp"
#include "dlx/searcher/trial_plan.hpp"
#include "options.hpp"
#include "resource_options.hpp"
#include "site_defaults.hpp"
#include "table.hpp"

namespace dlx::cli {

namespace {

std::vector<searcher::Rung> rungs_of(const config::Experiment& experiment) {
  const auto& s = experiment.searcher;
  if ((s.name != config::SearcherName::async_halving && s.name != config::SearcherName::adaptive_asha) || !s.max_length) {
    return {};
  }
  return searcher::asha_rungs(s.max_trials, s.asha.divisor, s.asha.max_rungs, s.max_length->value);
}

std::vector<std::string> sbatch_words(const config::Experiment& experiment) {
  std::vector<std::string> words{"--array=" + searcher::array_spec(experiment)};
  for (const auto& [option, value] : spank::resource_options(experiment)) words.push_back(fmt::format("--{}={}", option, value));
  return words;
}

CommandLine plan_command_line() {
  namespace po = boost::program_options;
  CommandLine command("plan", "FILE [--json] [--site-config FILE]",
                      "What an experiment will run, before it spends GPU hours: the sbatch options it\n"
                      "is submitted with, ASHA's rungs, every planned trial with its hyperparameters,\n"
                      "and the resolved configuration that sbatch freezes into experiment.yaml. The\n"
                      "site defaults apply as in dlx validate.",
                      "dlx plan examples/asha.yaml");
  command.options.add_options()("json", "print the plan as JSON")(
      "site-config", po::value<std::string>()->default_value("")->value_name("FILE"),
      "site defaults to apply (as sbatch would)");
  command.operands.add_options()("file", po::value<std::string>()->required(), "experiment file");
  command.positional.add("file", 1);
  return command;
}

}  // namespace

int run_plan(const Arguments& arguments) {
  auto values = parse_options(arguments, plan_command_line());
  const auto file = values["file"].as<std::string>();

  config::Experiment experiment;
  std::vector<searcher::TrialSpec> trials;
  try {
    auto site = load_site_defaults(values["site-config"].as<std::string>());
    experiment = config::parse_experiment_file(file, site ? &*site : nullptr);
    trials = searcher::plan_all_trials(experiment);
  } catch (const config::ConfigError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
  const auto rungs = rungs_of(experiment);
  const auto unit = experiment.searcher.max_length ? config::to_string(experiment.searcher.max_length->unit) : "";

  if (values.count("json")) {
    auto out = nlohmann::ordered_json::object();
    out["experiment"] = experiment.name;
    out["searcher"] = config::to_string(experiment.searcher.name);
    out["array"] = searcher::array_spec(experiment);
    out["sbatch"] = sbatch_words(experiment);
    out["seed"] = experiment.seed_given ? nlohmann::ordered_json(experiment.seed) : nlohmann::ordered_json();
    out["rungs"] = nlohmann::ordered_json::array();
    for (const auto& rung : rungs) {
      out["rungs"].push_back({{"rung", rung.index}, {"length", rung.length}, {"unit", unit}, {"trials", rung.trials}});
    }
    out["trials"] = nlohmann::ordered_json::array();
    for (const auto& trial : trials) out["trials"].push_back({{"id", trial.id}, {"hparams", trial.hparams}});
    out["resolved_config"] = config::to_yaml(experiment);
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }

  // '#' lines and cells are shown through config::printable (table.hpp): values from the file
  // cannot act on the terminal or add lines.
  fmt::print("# experiment {}: {} trials, searcher {}, metric {} ({} is better)\n", config::printable(experiment.name),
             trials.size(), config::to_string(experiment.searcher.name), config::printable(experiment.searcher.metric),
             experiment.searcher.smaller_is_better ? "smaller" : "larger");
  fmt::print("# sbatch {}\n", config::printable(fmt::format("{}", fmt::join(sbatch_words(experiment), " "))));
  if (!experiment.seed_given) {
    fmt::print("# no seed in the file: random values below use seed 0; sbatch picks a seed and freezes it\n");
  }
  for (const auto& rung : rungs) {
    fmt::print("# rung {}: train to {} {}, reached by about {} trial{}\n", rung.index, rung.length, unit,
               rung.trials, rung.trials == 1 ? "" : "s");
  }
  std::vector<std::string> headers{"trial"};
  for (const auto& hp : experiment.hyperparameters) headers.push_back(hp.name);
  Table table(headers);
  for (const auto& trial : trials) {
    std::vector<std::string> row{std::to_string(trial.id)};
    for (const auto& hp : experiment.hyperparameters) row.push_back(format_value(trial.hparams[hp.name]));
    table.add_row(row);
  }
  std::cout << table.render();
  fmt::print("# resolved configuration (frozen into experiment.yaml at submission):\n");
  std::istringstream yaml(config::to_yaml(experiment));
  for (std::string line; std::getline(yaml, line);) {
    if (line.rfind("#", 0) != 0) fmt::print("#   {}\n", config::printable(line));
  }
  return 0;
}

}  // namespace dlx::cli
