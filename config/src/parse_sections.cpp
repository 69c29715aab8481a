#include <set>

#include <fmt/format.h>

#include "dlx/config/names.hpp"
#include "parse_sections.hpp"

namespace dlx::config::detail {

namespace {

int bounded_int(const MappingReader& section, const char* key, std::int64_t value, std::int64_t low,
                std::int64_t high, const char* fix) {
  if (value < low || value > high) {
    section.fail(section.raw(key), section.path(key),
                 fmt::format("must be between {} and {}, got {}", low, high, value), fix);
  }
  return static_cast<int>(value);
}

}  // namespace

SearcherConfig parse_searcher(const MappingReader& section) {
  section.allow_only({"name", "metric", "smaller_is_better", "max_trials", "max_concurrent_trials"});
  SearcherConfig out;
  out.where = section.position(section.node());
  auto name = section.optional_string("name");
  if (!name) section.missing("name", "use name: single, grid or random");
  if (*name == "single") {
    out.name = SearcherName::single;
  } else if (*name == "grid") {
    out.name = SearcherName::grid;
  } else if (*name == "random") {
    out.name = SearcherName::random;
  } else {
    std::string suggestion = closest_match(*name, {"single", "grid", "random"});
    section.fail(section.raw("name"), "searcher.name", fmt::format("unknown searcher '{}'", *name),
                 suggestion.empty() ? "use single, grid or random"
                                    : fmt::format("did you mean '{}'?", suggestion));
  }
  auto metric = section.optional_string("metric");
  if (!metric || metric->empty()) {
    section.missing("metric", "name the validation metric to optimise, e.g. metric: accuracy");
  }
  out.metric = *metric;
  out.smaller_is_better = section.optional_boolean("smaller_is_better").value_or(true);
  if (auto max_trials = section.optional_integer("max_trials")) {
    out.max_trials = bounded_int(section, "max_trials", *max_trials, 1, kMaxTrials,
                                 "give how many trials to run, at least 1");
  } else if (out.name == SearcherName::random) {
    section.missing("max_trials", "the random searcher needs max_trials: N");
  } else {
    out.max_trials = 0;  // single: 1; grid: the size of the grid (set by the cross-field rules)
  }
  if (auto concurrent = section.optional_integer("max_concurrent_trials")) {
    out.max_concurrent_trials = bounded_int(section, "max_concurrent_trials", *concurrent, 0,
                                            kMaxTrials, "0 means no limit");
  }
  return out;
}

Resources parse_resources(const MappingReader& section) {
  section.allow_only({"nodes_per_trial", "tasks_per_node"});
  Resources out;
  if (auto nodes = section.optional_integer("nodes_per_trial")) {
    out.nodes_per_trial = bounded_int(section, "nodes_per_trial", *nodes, 1, 100'000,
                                      "give the number of nodes each trial uses");
  }
  if (auto tasks = section.optional_integer("tasks_per_node")) {
    out.tasks_per_node = bounded_int(section, "tasks_per_node", *tasks, 1, 4096,
                                     "give the number of ranks per node (usually one per GPU)");
  }
  return out;
}

void check_cross_field_rules(const Experiment& experiment, const MappingReader& root) {
  // Two hyperparameters must not collide in the environment (a-b and a_b are both DLX_HP_A_B).
  std::set<std::string> variables;
  for (const auto& hp : experiment.hyperparameters) {
    if (!variables.insert(hyperparameter_variable(hp.name)).second) {
      throw ConfigError(hp.where, "hyperparameters." + hp.name,
                        fmt::format("maps to the same variable {} as another hyperparameter",
                                    hyperparameter_variable(hp.name)),
                        "rename one of them");
    }
  }
  const auto& searcher = experiment.searcher;
  YAML::Node searcher_node = root.raw("searcher");
  if (searcher.name == SearcherName::grid) {
    for (const auto& hp : experiment.hyperparameters) {
      bool needs_count = hp.type == HyperparameterType::integer ||
                         hp.type == HyperparameterType::real || hp.type == HyperparameterType::log;
      if (needs_count && !hp.count) {
        throw ConfigError(hp.where, "hyperparameters." + hp.name,
                          fmt::format("a {} hyperparameter needs count for the grid searcher",
                                      to_string(hp.type)),
                          "add count: N (the number of grid points)");
      }
    }
  }
  if (searcher.name == SearcherName::single && searcher.max_trials > 1) {
    throw ConfigError(position_of(searcher_node["max_trials"], root.file()), "searcher.max_trials",
                      fmt::format("the single searcher runs one trial, got max_trials: {}",
                                  searcher.max_trials),
                      "remove max_trials or use the grid or random searcher");
  }
  if (searcher.name == SearcherName::single) {
    for (const auto& hp : experiment.hyperparameters) {
      if (hp.type != HyperparameterType::constant) {
        throw ConfigError(hp.where, "hyperparameters." + hp.name,
                          "the single searcher needs every hyperparameter to be a constant",
                          "give a value, or use the grid or random searcher");
      }
    }
  }
}

}  // namespace dlx::config::detail
