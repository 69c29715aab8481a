// SPDX-License-Identifier: Apache-2.0
// dlx plan: what an experiment will run before it spends GPU hours: the resolved configuration,
// the sbatch options, the array and its throttle, ASHA's brackets with their trials and rung
// lengths, PBT's rounds, and every planned trial with its hyperparameters. The searcher part is
// searcher::plan_search(), which a unit test checks against the searcher's own simulated run.
#include <iostream>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cluster_array_limit.hpp"
#include "cluster_gpus.hpp"
#include "commands.hpp"
#include "dlx/common/id_ranges.hpp"
#include "dlx/config/display_text.hpp"
#include "dlx/config/ignored_keys.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/config/snapshot.hpp"
#include "dlx/searcher/search_plan.hpp"
#include "dlx/searcher/trial_plan.hpp"
#include "options.hpp"
#include "resource_options.hpp"
#include "site_defaults.hpp"
#include "table.hpp"

namespace dlx::cli {

namespace {

std::string lengths_of(const searcher::PlannedBracket& bracket) {
  std::vector<std::int64_t> lengths;
  for (const auto& rung : bracket.rungs) lengths.push_back(rung.length);
  return fmt::format("{}", fmt::join(lengths, "/"));
}

void print_search_plan(const searcher::SearchPlan& plan, const config::Experiment& experiment, const char* unit,
                       const std::string& tasks_limited_by) {
  fmt::print("# array {}: {}, {}\n", plan.array, counted(plan.tasks, "task"),
             plan.throttle > 0 ? fmt::format("at most {} at once (max_concurrent_trials)", plan.throttle)
                               : std::string("no throttle"));
  if (plan.tasks < plan.tickets) {
    const auto most = searcher::tickets_of_task(experiment, 0).size();
    const int at_once = config::packed_trials(experiment.resources);
    fmt::print("# {} on {} ({}): task t runs tickets t, t+{}, t+{}, ... {}, up to {} each\n",
               counted(plan.tickets, "ticket"), counted(plan.tasks, "array task"), tasks_limited_by, plan.tasks,
               2 * plan.tasks, at_once > 1 ? fmt::format("{} at once", at_once) : std::string("in turn"), most);
  }
  if (const auto sharing = searcher::shard_sharing_text(experiment); !sharing.empty()) fmt::print("# {}\n", sharing);
  for (std::size_t b = 0; b < plan.brackets.size(); ++b) {
    const auto& bracket = plan.brackets[b];
    fmt::print("# bracket {}: {} ({}), {} at {} {}\n", b, counted(bracket.trials, "trial"),
               id_ranges(bracket.trial_ids), counted(static_cast<std::int64_t>(bracket.rungs.size()), "rung"),
               lengths_of(bracket), unit);
    for (const auto& rung : bracket.rungs) {
      fmt::print("#   rung {}: train to {} {}, reached by about {}\n", rung.index, rung.length, unit,
                 counted(rung.trials, "trial"));
    }
  }
  const auto& pbt = experiment.searcher.pbt;
  for (const auto& round : plan.rounds) {
    const std::string tickets = fmt::format("tickets {}-{}", round.first_ticket, round.first_ticket + pbt.population_size - 1);
    if (round.round == 0) {
      const bool one = round.new_trials.size() == 1;
      fmt::print("# pbt round 0 ({}): {} {} {} from {}, to {} {}\n", tickets, one ? "trial" : "trials",
                 id_ranges(round.new_trials), one ? "starts" : "start", one ? "a random point" : "random points",
                 pbt.length_per_round.value, unit);
    } else {
      fmt::print("# pbt round {} ({}): {} on (same trial); the {} worst {} replaced by new trial{} {}, "
                 "copies of the {} best\n",
                 round.round, tickets, counted(round.continued, "member goes", "members go"), round.replaced,
                 round.replaced == 1 ? "is" : "are", round.replaced == 1 ? "" : "s",
                 round.new_trials.empty() ? "(none)" : id_ranges(round.new_trials), round.replaced);
    }
  }
}

std::vector<std::string> sbatch_words(const config::Experiment& experiment) {
  std::vector<std::string> words{"--array=" + searcher::array_spec(experiment)};
  for (const auto& [option, value] : spank::resource_options(experiment)) words.push_back(fmt::format("--{}={}", option, value));
  return words;
}

CommandLine plan_command_line() {
  namespace po = boost::program_options;
  CommandLine command("plan", "FILE [--json] [--site-config FILE] [--max-array-size N]",
                      "What an experiment will run, before it spends GPU hours: the sbatch options it\n"
                      "is submitted with, ASHA's rungs, every planned trial with its hyperparameters,\n"
                      "and the resolved configuration that sbatch freezes into experiment.yaml. The\n"
                      "site defaults apply as in dlx validate. A plan this cluster cannot run (more GPUs\n"
                      "a node than any node has) is shown, and said to be refused on stderr, as in dlx\n"
                      "validate; the exit status is then 1.",
                      "dlx plan examples/asha.yaml");
  command.options.add_options()("json", "print the plan as JSON")(
      "site-config", po::value<std::string>()->default_value("")->value_name("FILE"),
      "site defaults to apply (as sbatch would)")(
      "max-array-size", po::value<long long>()->default_value(-1, "asked of Slurm")->value_name("N"),
      "the cluster's MaxArraySize, as in dlx validate");
  command.operands.add_options()("file", po::value<std::string>()->required(), "experiment file");
  command.positional.add("file", 1);
  return command;
}

// What `dlx plan` shows: the parsed experiment, its planned search and the trials known before
// the run.
struct PlannedExperiment {
  config::Experiment experiment;
  std::vector<searcher::TrialSpec> trials;
  searcher::SearchPlan plan;
  const char* unit = "";  // of the lengths
  std::string tasks_limited_by;  // what made tasks fewer than tickets ("" when one task per ticket)
  std::optional<std::string> cluster_refusal;  // sbatch's refusal of its GPUs on this cluster
};

PlannedExperiment plan_experiment(const std::string& file, const std::string& site_config, ClusterArrayLimit& limit) {
  PlannedExperiment planned;
  auto site = load_site_defaults(site_config);
  planned.experiment = config::parse_experiment_file(file, site ? &*site : nullptr);
  // The array sbatch will submit: capped at the cluster's MaxArraySize when it is known.
  planned.tasks_limited_by = limit.fit(planned.experiment)
                                 ? fmt::format("{} {}", limit.source(), *limit.max_array_size())
                                 : searcher::array_tasks_cause(planned.experiment);
  planned.trials = searcher::plan_all_trials(planned.experiment);
  planned.plan = searcher::plan_search(planned.experiment);
  planned.cluster_refusal = cluster_gpu_refusal(planned.experiment);
  const auto& searcher_config = planned.experiment.searcher;
  planned.unit = searcher_config.max_length ? config::to_string(searcher_config.max_length->unit)
                 : searcher_config.name == config::SearcherName::pbt
                     ? config::to_string(searcher_config.pbt.length_per_round.unit)
                     : "";
  // PBT: only round 0's points are known before the run (later trials are explored copies).
  if (searcher_config.name == config::SearcherName::pbt) {
    planned.trials.resize(static_cast<std::size_t>(searcher_config.pbt.population_size));
  }
  return planned;
}

void print_plan_json(const PlannedExperiment& planned) {
  const auto& experiment = planned.experiment;
  const auto& plan = planned.plan;
  auto out = nlohmann::ordered_json::object();
  out["experiment"] = experiment.name;
  out["searcher"] = config::to_string(experiment.searcher.name);
  out["array"] = searcher::array_spec(experiment);
  out["sbatch"] = sbatch_words(experiment);
  out["seed"] = experiment.seed_given ? nlohmann::ordered_json(experiment.seed) : nlohmann::ordered_json();
  out["trial_count"] = plan.trials;
  out["tickets"] = plan.tickets;
  out["array_tasks"] = plan.tasks;
  if (plan.tasks < plan.tickets) out["array_tasks_limited_by"] = planned.tasks_limited_by;
  out["throttle"] = plan.throttle;
  out["brackets"] = nlohmann::ordered_json::array();
  for (const auto& bracket : plan.brackets) {
    auto rungs = nlohmann::ordered_json::array();
    for (const auto& rung : bracket.rungs) {
      rungs.push_back({{"rung", rung.index}, {"length", rung.length}, {"unit", planned.unit}, {"trials", rung.trials}});
    }
    out["brackets"].push_back({{"trials", bracket.trials}, {"trial_ids", bracket.trial_ids}, {"rungs", rungs}});
  }
  out["rounds"] = nlohmann::ordered_json::array();
  for (const auto& round : plan.rounds) {
    out["rounds"].push_back({{"round", round.round}, {"first_ticket", round.first_ticket},
                             {"continued", round.continued}, {"replaced", round.replaced},
                             {"new_trials", round.new_trials}});
  }
  out["ignored"] = config::ignored_determined_keys(experiment);
  out["trials"] = nlohmann::ordered_json::array();
  for (const auto& trial : planned.trials) out["trials"].push_back({{"id", trial.id}, {"hparams", trial.hparams}});
  out["resolved_config"] = config::to_yaml(experiment);
  if (planned.cluster_refusal) out["cluster_refusal"] = *planned.cluster_refusal;
  std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

// '#' lines and cells are shown through config::printable (table.hpp): values from the file
// cannot act on the terminal or add lines.
void print_plan_text(const PlannedExperiment& planned) {
  const auto& experiment = planned.experiment;
  fmt::print("# experiment {}: {}, searcher {}, metric {} ({} is better)\n", config::printable(experiment.name),
             counted(planned.plan.trials, "trial"), config::to_string(experiment.searcher.name),
             config::printable(experiment.searcher.metric), experiment.searcher.smaller_is_better ? "smaller" : "larger");
  fmt::print("# sbatch {}\n", config::printable(fmt::format("{}", fmt::join(sbatch_words(experiment), " "))));
  if (!experiment.seed_given) {
    fmt::print("# no seed in the file: random values below use seed 0; sbatch picks a seed and freezes it\n");
  }
  print_search_plan(planned.plan, experiment, planned.unit, planned.tasks_limited_by);
  // The same keys, in the same order, as the one warning line of `dlx validate` and sbatch.
  for (const auto& ignored : config::ignored_determined_keys(experiment)) {
    fmt::print("# ignored: {}\n", config::printable(ignored));
  }
  std::vector<std::string> headers{"trial"};
  for (const auto& hp : experiment.hyperparameters) headers.push_back(hp.name);
  Table table(headers);
  for (const auto& trial : planned.trials) {
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
}

}  // namespace

int run_plan(const Arguments& arguments) {
  auto values = parse_options(arguments, plan_command_line());
  PlannedExperiment planned;
  const auto& file = values["file"].as<std::string>();
  try {
    ClusterArrayLimit limit(values["max-array-size"].as<long long>());
    planned = plan_experiment(file, values["site-config"].as<std::string>(), limit);
  } catch (const config::ConfigError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
  if (values.count("json")) {
    print_plan_json(planned);
  } else {
    print_plan_text(planned);
  }
  // The plan is shown either way (what the file asks for); a plan sbatch refuses here fails.
  if (planned.cluster_refusal) {
    fmt::print(stderr, "{}: sbatch refuses it on this cluster: {}\n", config::printable(file), *planned.cluster_refusal);
    return 1;
  }
  return 0;
}

}  // namespace dlx::cli
