#include "dlx/config/parse.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "dlx/common/durable_file.hpp"
#include "dlx/config/display_text.hpp"
#include "dlx/config/names.hpp"
#include "parse_sections.hpp"
#include "text_checks.hpp"
#include "yaml_reader.hpp"

namespace dlx::config {

namespace {

using detail::MappingReader;

std::vector<std::string> parse_entrypoint(const MappingReader& root, bool& is_shell) {
  YAML::Node node = root.raw("entrypoint");
  if (!node) root.missing("entrypoint", "give the command each trial runs, e.g. entrypoint: python3 train.py");
  if (node.IsScalar() && !node.Scalar().empty()) {
    is_shell = true;
    return {node.Scalar()};
  }
  if (node.IsSequence() && node.size() > 0) {
    std::vector<std::string> argv;
    for (const auto& item : node) {
      if (!item.IsScalar()) root.fail(item, "entrypoint", "each argument must be a string", "write a list of strings");
      argv.push_back(item.Scalar());
    }
    is_shell = false;
    return argv;
  }
  root.fail(node, "entrypoint", "must be a non-empty command string or list of arguments",
            "e.g. entrypoint: python3 train.py, or entrypoint: [python3, train.py]");
}

void apply_site(Experiment& experiment, const SiteConfig& site) {
  experiment.resources = site.resources;
  experiment.checkpoint = site.checkpoint;
  experiment.environment = site.environment;
  experiment.max_restarts = site.max_restarts;
  experiment.code = site.code;
}

}  // namespace

Experiment parse_experiment(std::string_view text, const std::string& file_label, const SiteConfig* site) {
  YAML::Node document = detail::load_document(text, file_label);
  MappingReader root(document, "", file_label);
  root.allow_only({"name", "description", "entrypoint", "seed", "environment", "max_restarts", "hyperparameters",
                   "searcher", "resources", "checkpoint", "code"});

  Experiment experiment;
  if (site) apply_site(experiment, *site);
  experiment.source_file = file_label;
  auto name = root.optional_string("name");
  if (!name) root.missing("name", "add name: <experiment name>");
  if (auto problem = experiment_name_problem(*name); !problem.empty()) {
    root.fail(root.raw("name"), "name", fmt::format("'{}' {}", abbreviated(*name), problem),
              "use letters, digits, '.', '_' and '-' (it names the experiment's directory)");
  }
  experiment.name = *name;
  experiment.description = root.optional_string("description").value_or("");
  experiment.entrypoint = parse_entrypoint(root, experiment.entrypoint_is_shell);
  if (auto seed = root.optional_integer_in("seed", 0, std::numeric_limits<std::int64_t>::max(), "use a non-negative seed")) {
    experiment.seed = static_cast<std::uint64_t>(*seed);
    experiment.seed_given = true;
  }
  if (auto restarts = root.optional_integer_in("max_restarts", 0, 1000, "how many crashes a trial may survive")) {
    experiment.max_restarts = static_cast<int>(*restarts);
  }
  if (root.has("environment")) detail::parse_environment(root.mapping("environment"), experiment.environment);
  if (root.has("hyperparameters") && !root.raw("hyperparameters").IsNull()) {
    experiment.hyperparameters = detail::parse_hyperparameters(root.mapping("hyperparameters"));
  }
  experiment.searcher = detail::parse_searcher(root.mapping("searcher"));
  if (root.has("resources")) detail::parse_resources(root.mapping("resources"), experiment.resources);
  if (root.has("checkpoint")) detail::parse_checkpoint(root.mapping("checkpoint"), experiment.checkpoint);
  if (root.has("code")) detail::parse_code(root.mapping("code"), experiment.code, detail::CodeKeys::experiment);
  detail::check_cross_field_rules(experiment, root);
  if (site && site->max_trials && experiment.searcher.max_trials > *site->max_trials) {
    root.fail(root.raw("searcher")["max_trials"], "searcher.max_trials",
              fmt::format("is {}, above this site's limit of {} (set in {})", experiment.searcher.max_trials,
                          *site->max_trials, site->source),
              fmt::format("use at most {} trials, or ask your administrator", *site->max_trials));
  }
  return experiment;
}

Experiment parse_experiment_file(const std::filesystem::path& path, const SiteConfig* site) {
  return parse_experiment(detail::read_config_file(path, "experiment file"), path.string(), site);
}

Experiment load_snapshot(const std::filesystem::path& experiment_dir) {
  return parse_experiment_file(experiment_dir / kSnapshotFileName);
}

}  // namespace dlx::config
