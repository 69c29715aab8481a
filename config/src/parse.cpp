// SPDX-License-Identifier: Apache-2.0
#include "dlx/config/parse.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "dlx/common/durable_file.hpp"
#include "dlx/config/display_text.hpp"
#include "dlx/config/ignored_keys.hpp"
#include "dlx/config/names.hpp"
#include "parse_sections.hpp"
#include "text_checks.hpp"
#include "yaml_reader.hpp"

namespace dlx::config {

namespace {

using detail::MappingReader;

// The value of torchrun's option `name` in `argv` (--name=V or --name V, with - or _), or "".
std::string torchrun_option(const std::vector<std::string>& argv, std::string_view name) {
  std::string dashed(name);
  std::ranges::replace(dashed, '_', '-');
  for (std::size_t i = 1; i < argv.size(); ++i) {
    for (const auto& spelling : {std::string("--") + std::string(name), "--" + dashed}) {
      if (argv[i].starts_with(spelling + "=")) return argv[i].substr(spelling.size() + 1);
      if (argv[i] == spelling && i + 1 < argv.size()) return argv[i + 1];
    }
  }
  return "";
}

// torchrun (or python -m torch.distributed.run/launch) as the trial's command starts a process
// per GPU itself, each with a rank of its own; dlx-launch has already started one rank per
// Slurm task with the variables torchrun would set, and the two cannot both own the ranks. The
// words are the entrypoint's (a string's split at blanks, after any NAME=value assignments).
void refuse_torchrun(const MappingReader& root, const YAML::Node& node, std::vector<std::string> words) {
  while (!words.empty() && words.front().find('=') != std::string::npos) words.erase(words.begin());
  if (words.empty()) return;
  const auto program = std::filesystem::path(words.front()).filename().string();
  const bool module = program.starts_with("python") && words.size() > 2 && words[1] == "-m" &&
                      (words[2] == "torch.distributed.run" || words[2] == "torch.distributed.launch");
  if (program != "torchrun" && !module) return;
  std::string fix = "run the script itself, entrypoint: [python3, ";
  const auto script = std::ranges::find_if(words, [](const std::string& w) { return w.ends_with(".py"); });
  if (script == words.end()) {
    fix += "train.py]";
  } else {
    for (auto word = script; word != words.end(); ++word) fix += *word + (word + 1 == words.end() ? "]" : ", ");
  }
  const auto per_node = torchrun_option(words, "nproc_per_node");
  const auto nodes = torchrun_option(words, "nnodes");
  fix += fmt::format(", with resources: {{tasks_per_node: {}", per_node.empty() ? "N" : per_node);
  if (!nodes.empty() && nodes != "1") fix += fmt::format(", nodes_per_trial: {}", nodes);
  fix += fmt::format("}} for {}; dlx-launch starts each process and sets what torchrun would (docs/sdk.md)",
                     per_node.empty() ? "--nproc_per_node=N" : "--nproc_per_node=" + per_node);
  root.fail(node, "entrypoint",
            fmt::format("{} starts the ranks itself, but dlx-launch already starts one per Slurm task and gives it "
                        "RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT",
                        module ? "python -m " + words[2] : std::string("torchrun")),
            fix);
}

std::vector<std::string> parse_entrypoint(const MappingReader& root, Experiment& experiment) {
  YAML::Node node = root.raw("entrypoint");
  if (!node) root.missing("entrypoint", "give the command each trial runs, e.g. entrypoint: python3 train.py");
  if (node.IsScalar() && !node.Scalar().empty()) {
    if (auto trial_class = detail::trial_class_of(node.Scalar())) {
      // Determined's Trial API (model_def:MNistTrial): dlx's harness runs the class.
      experiment.entrypoint_is_shell = false;
      experiment.determined.mapped.push_back(fmt::format("entrypoint: {} -> python3 -m {} {}", node.Scalar(),
                                                         detail::kTrialHarness, *trial_class));
      return {"python3", "-m", detail::kTrialHarness, *trial_class};
    }
    std::istringstream text(node.Scalar());
    std::vector<std::string> words;
    for (std::string word; text >> word;) words.push_back(word);
    refuse_torchrun(root, node, words);
    experiment.entrypoint_is_shell = true;
    return {node.Scalar()};
  }
  if (node.IsSequence() && node.size() > 0) {
    std::vector<std::string> argv;
    for (const auto& item : node) {
      if (!item.IsScalar()) root.fail(item, "entrypoint", "each argument must be a string", "write a list of strings");
      argv.push_back(item.Scalar());
    }
    refuse_torchrun(root, node, argv);
    experiment.entrypoint_is_shell = false;
    return argv;
  }
  root.fail(node, "entrypoint", "must be a non-empty command string or list of arguments",
            "e.g. entrypoint: python3 train.py, or entrypoint: [python3, train.py]");
}

// `name`, or without one the file's name: a safe directory name. Free text (Determined's names
// are) gives a safe name derived from it, and the text itself stays as the description.
void parse_name(const MappingReader& root, Experiment& experiment) {
  auto name = root.optional_string("name");
  if (!name) {
    const std::string stem = std::filesystem::path(root.file()).stem().string();
    std::string derived = detail::safe_experiment_name(stem);
    if (derived.empty() || !experiment_name_problem(derived).empty()) {
      root.missing("name", "add name: <experiment name> (the file's name gives none)");
    }
    experiment.name = derived;
    return;
  }
  // A name that looks like a path or hides characters is a mistake, not free text.
  // (printable() escapes controls, bidi overrides and bytes that are not UTF-8.)
  const bool hostile = name->find('/') != std::string::npos || (!name->empty() && name->front() == '.') ||
                       name->size() > kMaxNameLength || printable(*name) != *name;
  if (hostile || name->empty()) {
    if (auto problem = experiment_name_problem(*name); !problem.empty()) {
      root.fail(root.raw("name"), "name", fmt::format("'{}' {}", abbreviated(*name), problem),
                "use letters, digits, '.', '_' and '-' (it names the experiment's directory)");
    }
  }
  experiment.name = detail::safe_experiment_name(*name);
  if (experiment.name.empty()) {
    root.fail(root.raw("name"), "name", fmt::format("'{}' has no letter or digit to name a directory with",
                                                    abbreviated(*name)),
              "use letters, digits, '.', '_' and '-' (it names the experiment's directory)");
  }
  if (experiment.name != *name && experiment.description.empty()) experiment.description = *name;
}

void apply_site(Experiment& experiment, const SiteConfig& site) {
  experiment.resources = site.resources;
  experiment.checkpoint = site.checkpoint;
  experiment.environment = site.environment;
  experiment.max_restarts = site.max_restarts;
  experiment.code = site.code;
  experiment.data = site.data;
  experiment.container = site.container;
}

// Keys of a section written at the top level: said so, rather than a did-you-mean for some other
// top-level key ("slots_per_trial" is not a typo of anything at the top).
void report_misplaced(const MappingReader& root, std::vector<std::string>& known) {
  static const std::vector<std::pair<const char*, const char*>> kSectionKeys{
      {"slots_per_trial", "resources"},       {"nodes_per_trial", "resources"},
      {"tasks_per_node", "resources"},        {"gpus_per_node", "resources"},
      {"cpus_per_task", "resources"},         {"mem_per_node", "resources"},
      {"time_limit", "resources"},            {"partition", "resources"},
      {"resource_pool", "resources"},         {"experiment_seed", "reproducibility"},
      {"environment_variables", "environment"}, {"image", "environment"},
      {"metric", "searcher"},                 {"smaller_is_better", "searcher"},
      {"max_trials", "searcher"},             {"max_concurrent_trials", "searcher"},
      {"max_length", "searcher"},             {"keep_latest", "checkpoint"},
      {"keep_best", "checkpoint"},            {"keep_experiment_best", "checkpoint"},
      {"save_trial_best", "checkpoint_storage"}, {"save_trial_latest", "checkpoint_storage"},
      {"save_experiment_best", "checkpoint_storage"}};
  for (const auto& entry : root.node()) {
    const std::string key = entry.first.Scalar();
    for (const auto& [section_key, section] : kSectionKeys) {
      if (key != section_key) continue;
      root.report(entry.first, key, fmt::format("is a key of {}, not of the top level", section),
                  fmt::format("move it under {}:", section));
      known.push_back(key);
    }
  }
}

std::string ignored_keys_warning(const Experiment& experiment) {
  return fmt::format("{}: warning: dlx ignores these Determined keys: {}", printable(experiment.source_file),
                     fmt::join(ignored_determined_keys(experiment), "; "));
}

// The top level's keys: dlx's and Determined's; a key of a section written at the top level is
// named with the section it belongs to.
void check_top_level_keys(MappingReader& root) {
  const std::vector<std::string> dlx_keys{"name",         "description",     "entrypoint", "seed",      "environment",
                                          "max_restarts", "hyperparameters", "searcher",   "resources", "checkpoint", "code",
                                          "data", "container"};
  std::vector<std::string> known = dlx_keys;
  for (const auto& key : detail::determined_top_keys()) known.push_back(key);
  report_misplaced(root, known);
  root.allow_only(known, dlx_keys, ", and Determined's (docs/config-reference.md, Coming from Determined)");
}

// The top level's own values. Each is a recovery boundary (detail::Diagnostics::attempt): its
// first problem is recorded and the next one is read.
void parse_top_level_values(MappingReader& root, Experiment& experiment, detail::Diagnostics& sink) {
  sink.attempt([&] { experiment.description = root.optional_string("description").value_or(""); });
  sink.attempt([&] { parse_name(root, experiment); });
  sink.attempt([&] { experiment.entrypoint = parse_entrypoint(root, experiment); });
  sink.attempt([&] {
    if (auto seed = root.optional_integer_in("seed", 0, std::numeric_limits<std::int64_t>::max(),
                                             "use a non-negative seed")) {
      experiment.seed = static_cast<std::uint64_t>(*seed);
      experiment.seed_given = true;
    }
  });
  sink.attempt([&] {
    if (auto restarts = root.optional_integer_in("max_restarts", 0, 1000, "how many crashes a trial may survive")) {
      experiment.max_restarts = static_cast<int>(*restarts);
    }
  });
}

struct SectionsRead {
  bool hyperparameters = false;  // read without a problem
  bool searcher = false;
};

// The sections, each a recovery boundary as above.
SectionsRead parse_sections(MappingReader& root, Experiment& experiment, const SiteConfig* site,
                            detail::Diagnostics& sink) {
  SectionsRead read;
  read.hyperparameters = sink.attempt([&] {
    if (root.has("hyperparameters") && !root.raw("hyperparameters").IsNull()) {
      experiment.hyperparameters = detail::parse_hyperparameters(root.mapping("hyperparameters"));
    }
  });
  read.searcher = sink.attempt([&] { experiment.searcher = detail::parse_searcher(root.mapping("searcher")); });
  sink.attempt([&] {
    if (!root.has("resources")) return;
    std::optional<int> gpus_per_node = site ? site->resources.gpus_per_node : std::nullopt;
    if (auto launcher = detail::launcher_slots_per_node(root)) gpus_per_node = launcher;
    detail::parse_experiment_resources(root.mapping("resources"), experiment, gpus_per_node);
  });
  sink.attempt([&] {
    if (root.has("environment") && !root.raw("environment").IsNull()) {
      detail::parse_experiment_environment(root.mapping("environment"), experiment);
    }
  });
  sink.attempt([&] {
    if (root.has("container") && !root.raw("container").IsNull()) {
      const auto section = root.mapping("container");
      detail::parse_container(section, experiment.container, detail::ContainerKeys::experiment);
      // Determined's keys for the same things: one place each.
      const YAML::Node environment = root.has("environment") ? root.raw("environment") : YAML::Node();
      if (section.has("image") && environment.IsMap() && environment["image"]) {
        root.report(environment["image"], "environment.image", "names the image a second time (container.image)",
                    "keep one of them");
      }
      if (section.has("bind_mounts") && root.has("bind_mounts")) {
        root.report(root.raw("bind_mounts"), "bind_mounts", "lists mounts a second time (container.bind_mounts)",
                    "keep one of them");
      }
    }
    if (root.has("bind_mounts")) {
      detail::parse_bind_mounts(root, "bind_mounts", experiment.container);
      experiment.determined.mapped.push_back("bind_mounts -> container.bind_mounts");
    }
  });
  sink.attempt([&] {
    if (root.has("checkpoint")) detail::parse_checkpoint(root.mapping("checkpoint"), experiment.checkpoint);
  });
  sink.attempt([&] {
    if (root.has("code")) detail::parse_code(root.mapping("code"), experiment.code, detail::CodeKeys::experiment);
  });
  sink.attempt([&] {
    if (!root.has("data") || !detail::is_dlx_data(root.raw("data"))) return;  // else Determined's
    const auto section = root.mapping("data");
    detail::parse_data(section, experiment.data, detail::DataKeys::experiment);
    if (site) detail::check_data_limits(section, experiment.data, site->data, site->source);
  });
  if (read.hyperparameters) {
    sink.attempt([&] {
      if (root.has("min_checkpoint_period") && !root.raw("min_checkpoint_period").IsNull()) {
        detail::parse_min_checkpoint_period(root, experiment);
      }
    });
  }
  return read;
}

// The rules across sections need every section read: with a problem already, they would only
// repeat it in other words.
void check_across_sections(MappingReader& root, const Experiment& experiment, const SiteConfig* site,
                           const SectionsRead& read, detail::Diagnostics& sink) {
  if (sink.empty() && read.hyperparameters && read.searcher) {
    sink.attempt([&] { detail::check_cross_field_rules(experiment, root); });
  }
  if (sink.empty() && site && site->max_trials && experiment.searcher.max_trials > *site->max_trials) {
    sink.attempt([&] {
      root.fail(root.raw("searcher")["max_trials"], "searcher.max_trials",
                fmt::format("is {}, above this site's limit of {} (set in {})", experiment.searcher.max_trials,
                            *site->max_trials, site->source),
                fmt::format("use at most {} trials, or ask your administrator", *site->max_trials));
    });
  }
}

}  // namespace

std::vector<std::string> ignored_determined_keys(const Experiment& experiment) {
  std::vector<std::string> keys = experiment.determined.ignored;
  keys.insert(keys.end(), experiment.searcher.ignored.begin(), experiment.searcher.ignored.end());
  return keys;
}

Experiment parse_experiment(std::string_view text, const std::string& file_label, const SiteConfig* site) {
  YAML::Node document = detail::load_document(text, file_label);
  detail::Diagnostics sink;
  MappingReader root(document, "", file_label, &sink);
  check_top_level_keys(root);

  Experiment experiment;
  if (site) apply_site(experiment, *site);
  experiment.source_file = file_label;
  parse_top_level_values(root, experiment, sink);
  detail::parse_determined_top(root, experiment);
  const SectionsRead read = parse_sections(root, experiment, site, sink);
  check_across_sections(root, experiment, site, read, sink);
  sink.throw_if_any();
  // One line for all of them, the searcher's included: a file must not get a warning per section.
  if (!ignored_determined_keys(experiment).empty()) experiment.warnings.push_back(ignored_keys_warning(experiment));
  return experiment;
}

Experiment parse_experiment_file(const std::filesystem::path& path, const SiteConfig* site) {
  return parse_experiment(detail::read_config_file(path, "experiment file"), path.string(), site);
}

Experiment load_snapshot(const std::filesystem::path& experiment_dir) {
  return parse_experiment_file(experiment_dir / kSnapshotFileName);
}

}  // namespace dlx::config
