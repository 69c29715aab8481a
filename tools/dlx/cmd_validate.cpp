// SPDX-License-Identifier: Apache-2.0
#include <iostream>

#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cluster_array_limit.hpp"
#include "cluster_gpus.hpp"
#include "commands.hpp"
#include "dlx/config/display_text.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/method.hpp"
#include "dlx/searcher/trial_plan.hpp"
#include "options.hpp"
#include "site_defaults.hpp"
#include "table.hpp"

namespace dlx::cli {

namespace {

// Slurm's MaxArraySize when slurm.conf does not set it.
constexpr int kSlurmDefaultMaxArraySize = 1001;

CommandLine validate_command_line() {
  namespace po = boost::program_options;
  CommandLine command("validate", "FILE... [--json] [--site-config FILE] [--max-array-size N]",
                      "Checks experiment files as `sbatch --dl-experiment` would, with the site's\n"
                      "defaults applied: one line per file, valid with its trial count and array, or\n"
                      "every problem of the file, one per line, sorted by line:\n"
                      "file:line:column: key: problem (fix). A Determined experiment file is read\n"
                      "too: its keys without a dlx meaning are named in one warning line. The site defaults come from --site-config,\n"
                      "else $DLX_SITE_CONFIG, else (with SLURM_CONF set) the site_config of dlx's line\n"
                      "in plugstack.conf. A valid file that asks for more GPUs a node than any node of\n"
                      "this cluster has (`scontrol show node`) is said to be refused, as sbatch refuses it.\n"
                      "Exit status 0 when every file is valid and runs here, 1 otherwise.",
                      "dlx validate examples/grid.yaml examples/asha.yaml");
  command.options.add_options()("json", "print one JSON object per file")(
      "site-config", po::value<std::string>()->default_value("")->value_name("FILE"),
      "site defaults to apply (as sbatch would)")(
      "max-array-size", po::value<long long>()->default_value(-1, "asked of Slurm")->value_name("N"),
      "the cluster's MaxArraySize: larger searches run several trials per array task, as sbatch "
      "would run them (default: asked with `scontrol show config` where Slurm answers; 0: no limit)");
  command.operands.add_options()("file", po::value<std::vector<std::string>>()->required(), "experiment files");
  command.positional.add("file", -1);
  return command;
}

}  // namespace

int run_validate(const Arguments& arguments) {
  auto values = parse_options(arguments, validate_command_line());

  const bool json = values.count("json") > 0;
  auto results = nlohmann::json::array();
  int invalid = 0;
  std::optional<config::SiteConfig> site;
  try {
    site = load_site_defaults(values["site-config"].as<std::string>());
  } catch (const config::ConfigError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
  ClusterArrayLimit array_limit(values["max-array-size"].as<long long>());
  for (const auto& file : values["file"].as<std::vector<std::string>>()) {
    nlohmann::json result{{"file", file}};
    try {
      auto experiment = config::parse_experiment_file(file, site ? &*site : nullptr);
      result["warnings"] = experiment.warnings;
      if (!json) {
        for (const auto& warning : experiment.warnings) fmt::print(stderr, "{}\n", warning);
      }
      const bool capped = array_limit.fit(experiment);
      int trials = searcher::trial_count(experiment);
      result["valid"] = true;
      result["trials"] = trials;
      result["array"] = searcher::array_spec(experiment);
      const int tasks = searcher::array_task_count(experiment);
      result["array_tasks"] = tasks;
      std::string mapping;
      if (tasks < searcher::ticket_count(experiment)) {
        const std::string cause = capped ? fmt::format("{} {}", array_limit.source(), *array_limit.max_array_size())
                                         : searcher::array_tasks_cause(experiment);
        result["array_tasks_limited_by"] = cause;
        mapping = fmt::format(" (each task runs {}: {})", searcher::task_load_text(experiment), cause);
      } else if (tasks > kSlurmDefaultMaxArraySize && !array_limit.given() && !array_limit.max_array_size()) {
        mapping = fmt::format(" (more tasks than Slurm's default MaxArraySize, {}: sbatch runs several trials per "
                              "task where the cluster's limit is lower; --max-array-size N shows how)",
                              kSlurmDefaultMaxArraySize);
      }
      if (!json) {
        fmt::print("{}: valid: {}, array {}{}\n", config::printable(file), counted(trials, "trial"),
                   searcher::array_spec(experiment), mapping);
      }
      // A valid file this cluster cannot run: sbatch refuses it, so the exit status says so too.
      if (const auto refusal = cluster_gpu_refusal(experiment)) {
        ++invalid;
        result["cluster_refusal"] = *refusal;
        if (!json) fmt::print(stderr, "{}: sbatch refuses it on this cluster: {}\n", config::printable(file), *refusal);
      }
    } catch (const config::ConfigError& e) {
      ++invalid;
      result["valid"] = false;
      auto describe = [](const config::ConfigError& problem) {
        return nlohmann::json{{"message", problem.what()}, {"line", problem.where().line},
                              {"column", problem.where().column}, {"key", problem.key()},
                              {"problem", problem.problem()}, {"fix", problem.fix()}};
      };
      result["errors"] = nlohmann::json::array();
      if (const auto* several = dynamic_cast<const config::ConfigErrors*>(&e)) {
        for (const auto& problem : several->problems()) result["errors"].push_back(describe(problem));
      } else {
        result["errors"].push_back(describe(e));
      }
      result["error"] = result["errors"][0];  // the first, as before
      if (!json) fmt::print(stderr, "{}\n", e.what());
    }
    results.push_back(result);
  }
  if (json) std::cout << results.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return invalid == 0 ? 0 : 1;
}

}  // namespace dlx::cli
