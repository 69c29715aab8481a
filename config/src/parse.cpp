#include "dlx/config/parse.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "dlx/common/durable_file.hpp"
#include "dlx/config/names.hpp"
#include "parse_sections.hpp"
#include "yaml_reader.hpp"

namespace dlx::config {

namespace {

using detail::MappingReader;

constexpr int kMaxDepth = 32;

void check_bytes(std::string_view text, const std::string& file) {
  if (text.size() > kMaxFileBytes) {
    throw ConfigError({file, 0, 0}, "", fmt::format("the file is {} bytes, over the 1 MiB limit", text.size()),
                      "an experiment file is a few kilobytes; is this the right file?");
  }
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    throw ConfigError({file, 0, 0}, "", "the file is empty", "write at least name, entrypoint and searcher");
  }
  if (auto nul = text.find('\0'); nul != std::string_view::npos) {
    int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(nul), '\n'));
    throw ConfigError({file, line, 1}, "", "the file contains a NUL byte", "save it as plain UTF-8 text");
  }
}

YAML::Node load_yaml(std::string_view text, const std::string& file) {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::ParserException& e) {
    throw ConfigError({file, e.mark.line + 1, e.mark.column + 1}, "",
                      fmt::format("YAML syntax error: {}", e.msg), "fix the YAML syntax at this position");
  }
}

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

}  // namespace

Experiment parse_experiment(std::string_view text, const std::string& file_label) {
  check_bytes(text, file_label);
  YAML::Node document = load_yaml(text, file_label);
  if (!document.IsMap()) {
    throw ConfigError(detail::position_of(document, file_label), "",
                      "the experiment file must be a mapping of keys to values",
                      "start with name: <experiment name>");
  }
  detail::check_structure(document, file_label, kMaxDepth);

  MappingReader root(document, "", file_label);
  root.allow_only({"name", "description", "entrypoint", "seed", "hyperparameters", "searcher", "resources"});

  Experiment experiment;
  experiment.source_file = file_label;
  auto name = root.optional_string("name");
  if (!name) root.missing("name", "add name: <experiment name>");
  if (auto problem = experiment_name_problem(*name); !problem.empty()) {
    root.fail(root.raw("name"), "name", fmt::format("'{}' {}", *name, problem),
              "use letters, digits, '.', '_' and '-' (it names the experiment's directory)");
  }
  experiment.name = *name;
  experiment.entrypoint = parse_entrypoint(root, experiment.entrypoint_is_shell);
  if (auto seed = root.optional_integer("seed")) {
    if (*seed < 0) root.fail(root.raw("seed"), "seed", fmt::format("must be >= 0, got {}", *seed), "use a non-negative seed");
    experiment.seed = static_cast<std::uint64_t>(*seed);
    experiment.seed_given = true;
  }
  if (root.has("hyperparameters")) {
    if (!root.raw("hyperparameters").IsNull()) {
      experiment.hyperparameters = detail::parse_hyperparameters(root.mapping("hyperparameters"));
    }
  }
  experiment.searcher = detail::parse_searcher(root.mapping("searcher"));
  if (root.has("resources")) experiment.resources = detail::parse_resources(root.mapping("resources"));
  detail::check_cross_field_rules(experiment, root);
  return experiment;
}

Experiment parse_experiment_file(const std::filesystem::path& path) {
  std::string text;
  try {
    text = read_small_file(path, kMaxFileBytes);
  } catch (const SystemError& e) {
    throw ConfigError({path.string(), 0, 0}, "", "cannot read the experiment file: " + std::string(e.what()),
                      "check the path and its permissions");
  } catch (const Error&) {
    throw ConfigError({path.string(), 0, 0}, "", "the file is over the 1 MiB limit",
                      "an experiment file is a few kilobytes; is this the right file?");
  }
  return parse_experiment(text, path.string());
}

Experiment load_snapshot(const std::filesystem::path& experiment_dir) {
  return parse_experiment_file(experiment_dir / kSnapshotFileName);
}

}  // namespace dlx::config
