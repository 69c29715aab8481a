#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/trial_plan.hpp"
#include "options.hpp"
#include "table.hpp"

namespace dlx::cli {

std::string format_value(const nlohmann::ordered_json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_float()) return fmt::format("{:.6g}", value.get<double>());
  return value.dump();
}

int run_plan(const Arguments& arguments) {
  namespace po = boost::program_options;
  po::options_description options("dlx plan FILE [--json]");
  options.add_options()("json", "print the plan as JSON")("file", po::value<std::string>()->required(),
                                                          "experiment file");
  po::positional_options_description positional;
  positional.add("file", 1);
  auto values = parse_options(arguments, options, positional);
  const auto file = values["file"].as<std::string>();

  config::Experiment experiment;
  std::vector<searcher::TrialSpec> trials;
  try {
    experiment = config::parse_experiment_file(file);
    trials = searcher::plan_all_trials(experiment);
  } catch (const config::ConfigError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
  if (values.count("json")) {
    auto out = nlohmann::ordered_json::object();
    out["experiment"] = experiment.name;
    out["array"] = searcher::array_spec(experiment);
    out["seed"] = experiment.seed_given ? nlohmann::ordered_json(experiment.seed) : nlohmann::ordered_json();
    out["trials"] = nlohmann::ordered_json::array();
    for (const auto& trial : trials) out["trials"].push_back({{"id", trial.id}, {"hparams", trial.hparams}});
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  fmt::print("# experiment {}: {} trials, searcher {}, sbatch --array={}\n", experiment.name, trials.size(),
             config::to_string(experiment.searcher.name), searcher::array_spec(experiment));
  if (!experiment.seed_given && experiment.searcher.name == config::SearcherName::random) {
    fmt::print("# no seed in the file: values below use seed 0; sbatch picks and freezes a seed\n");
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
  return 0;
}

}  // namespace dlx::cli
