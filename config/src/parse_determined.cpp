// SPDX-License-Identifier: Apache-2.0
// A Determined experiment file read as a dlx one (docs/config-reference.md, "Coming from
// Determined"): the keys with a dlx meaning are mapped (slots_per_trial to nodes, tasks and GPUs,
// checkpoint_storage's save_* to the keep_* counts, environment_variables to the trial's
// variables, reproducibility.experiment_seed to seed, ...); those without one are accepted and
// named, with the reason, in one warning line; the few that would silently mean something else
// are refused with the fix. Every note lands in Experiment::determined for `dlx convert-determined`.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "dlx/config/display_text.hpp"
#include "dlx/config/names.hpp"
#include "dlx/config/syntax.hpp"
#include "parse_sections.hpp"

namespace dlx::config::detail {

namespace {

std::string to_upper(std::string text) {
  for (char& c : text) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
  return text;
}

struct Ignored {
  const char* key;
  const char* why;
};

// Top-level Determined keys (0.13-0.38) that have no dlx meaning.
const std::vector<Ignored>& ignored_top() {
  static const std::vector<Ignored> keys{
      {"checkpoint_policy", "dlx saves when the script asks and at checkpoint.period; keep_* decide what stays"},
      {"data", "free-form data for Determined's Trial API: pass what the script needs as hyperparameters; dlx's "
               "own data: section has stage:"},
      {"data_layer", "Determined's retired data layer"},
      {"debug", "Determined's debug logging"},
      {"integrations", "Determined's integrations"},
      {"internal", "Determined-internal settings"},
      {"log_policies", "Determined's log-pattern actions"},
      {"min_validation_period", "the script validates when it chooses; the searcher acts on each validation"},
      {"optimizations", "options of Determined's Trial API"},
      {"pbs", "PBS options: dlx runs under Slurm (slots_per_node is used as GPUs per node)"},
      {"perform_initial_validation", "the script validates when it chooses"},
      {"preemption_timeout", "the preemption notice is the site's (signal= in plugstack.conf)"},
      {"profiling", "Determined's profiler"},
      {"project", "a Determined web UI grouping: experiments live under the plugin's storage_root"},
      {"retention_policy", "checkpoint.keep_* decide what is kept"},
      {"scheduling_unit", "Determined's reporting unit: the script reports when it chooses"},
      {"security", "Determined's cluster security settings"},
      {"slurm", "sbatch options: give them to sbatch (slots_per_node is used as GPUs per node)"},
      {"tensorboard_storage", "dlx export writes TensorBoard files from the experiment directory"},
      {"workspace", "a Determined web UI grouping: experiments live under the plugin's storage_root"},
  };
  return keys;
}

// Determined keys of `resources` and `environment` without a dlx meaning.
const std::vector<Ignored>& ignored_resources() {
  static const std::vector<Ignored> keys{
      {"agent_label", "Determined agents: Slurm places the job"},
      {"devices", "a container gets the trial's GPUs from its runtime, and no other device"},
      {"max_slots", "Determined's cap on the experiment's slots: use searcher.max_concurrent_trials"},
      {"native_parallel", "Determined's retired native parallelism"},
      {"priority", "Slurm's priority and QOS decide"},
      {"shm_size", "/dev/shm is the node's, in a container too"},
      {"weight", "Slurm's fair share decides"},
  };
  return keys;
}

const std::vector<Ignored>& ignored_environment() {
  static const std::vector<Ignored> keys{
      {"registry_auth", "credentials stay out of the experiment directory: log in on the nodes with the "
                        "site's runtime (podman login, apptainer registry login, enroot's .credentials)"},
      {"pod_spec", "no Kubernetes: Slurm runs the trials"},
      {"add_capabilities", "trials run unprivileged, as the user, with no capabilities"},
      {"drop_capabilities", "trials run unprivileged, as the user, with no capabilities"},
      {"ports", "trials reach each other through Slurm's allocation"},
      {"proxy_ports", "Determined's proxy"},
  };
  return keys;
}

// Keys Determined itself no longer reads: refused with what replaced them.
struct Retired {
  const char* key;
  const char* problem;
  const char* fix;
};

const std::vector<Retired>& retired_top() {
  static const std::vector<Retired> keys{
      {"batches_per_step", "is Determined's pre-0.13 training step, which dlx does not read",
       "remove it; give lengths in batches, records or epochs (searcher.max_length: {batches: N})"},
  };
  return keys;
}

std::vector<std::string> keys_of(const std::vector<Ignored>& table) {
  std::vector<std::string> keys;
  for (const auto& entry : table) keys.emplace_back(entry.key);
  return keys;
}

const Ignored* find(const std::vector<Ignored>& table, const std::string& key) {
  auto it = std::find_if(table.begin(), table.end(), [&](const Ignored& entry) { return key == entry.key; });
  return it == table.end() ? nullptr : &*it;
}

void note_ignored(Experiment& experiment, const std::string& key, const char* why) {
  experiment.determined.ignored.push_back(fmt::format("{} ({})", key, why));
}

// A count of checkpoints to keep (checkpoint_storage.save_*): 0..1000, as checkpoint.keep_*.
void map_keep_count(const MappingReader& storage, const char* key, const char* into_key, int& into,
                    Experiment& experiment) {
  if (auto value = storage.optional_integer_in(key, 0, 1000, "give how many checkpoints to keep")) {
    into = static_cast<int>(*value);
    experiment.determined.mapped.push_back(
        fmt::format("checkpoint_storage.{}: {} -> checkpoint.{}: {}", key, *value, into_key, *value));
  }
}

void parse_checkpoint_storage(const MappingReader& storage, Experiment& experiment) {
  map_keep_count(storage, "save_trial_latest", "keep_latest", experiment.checkpoint.keep_latest, experiment);
  map_keep_count(storage, "save_trial_best", "keep_best", experiment.checkpoint.keep_best, experiment);
  map_keep_count(storage, "save_experiment_best", "keep_experiment_best",
                 experiment.checkpoint.keep_experiment_best, experiment);
  bool other = false;
  for (const auto& entry : storage.node()) {
    const std::string key = entry.first.Scalar();
    other = other || key.rfind("save_", 0) != 0;
  }
  if (other) note_ignored(experiment, "checkpoint_storage", "checkpoints go to the experiment directory");
}

void parse_labels(const MappingReader& root, Experiment& experiment) {
  YAML::Node labels = root.raw("labels");
  if (labels.IsNull()) return;
  if (!labels.IsSequence()) {
    root.fail(labels, "labels", "must be a list of strings", "e.g. labels: [mnist, baseline]");
  }
  for (const auto& label : labels) {
    if (!label.IsScalar()) root.fail(label, "labels", "each label must be a string", "e.g. labels: [mnist, baseline]");
    if (label.Scalar().size() > kMaxValueLength) {
      root.fail(label, "labels", fmt::format("a label is {} characters long, more than the limit of {}",
                                             label.Scalar().size(), kMaxValueLength),
                "use short labels");
    }
    experiment.labels.push_back(label.Scalar());
  }
}

// Entries "NAME=value" of environment_variables (one list, or the list for this kind of trial).
void add_assignments(const MappingReader& section, const YAML::Node& list, const std::string& path,
                     Experiment& experiment) {
  if (list.IsNull()) return;
  if (!list.IsSequence()) {
    section.fail(list, path, "must be a list of NAME=value strings", "e.g. environment_variables: [NCCL_DEBUG=INFO]");
  }
  for (const auto& item : list) {
    if (!item.IsScalar()) section.fail(item, path, "each entry must be a NAME=value string", "e.g. - NCCL_DEBUG=INFO");
    const std::string& text = item.Scalar();
    const auto equals = text.find('=');
    if (equals == std::string::npos) {
      section.fail(item, path, fmt::format("'{}' has no '='", abbreviated(text)), "write NAME=value");
    }
    const std::string name = text.substr(0, equals);
    add_variable(section, item, path + "." + name, name, text.substr(equals + 1), experiment.environment);
  }
}

void parse_environment_variables(const MappingReader& section, Experiment& experiment) {
  YAML::Node variables = section.raw("environment_variables");
  const std::string path = "environment.environment_variables";
  if (!variables.IsMap()) {
    add_assignments(section, variables, path, experiment);
    experiment.determined.mapped.push_back(path + " -> environment");
    return;
  }
  auto devices = section.mapping("environment_variables");
  bool per_device = true;
  for (const auto& entry : variables) {
    const std::string key = entry.first.Scalar();
    per_device = per_device && (key == "cpu" || key == "cuda" || key == "gpu" || key == "rocm");
  }
  if (!per_device) {  // NAME: value, as in dlx's own environment
    for (const auto& entry : variables) {
      const std::string key = entry.first.Scalar();
      if (!entry.second.IsScalar()) {
        section.fail(entry.second, path + "." + key, "must be a scalar value", "write NAME: value");
      }
      add_variable(devices, entry.first, path + "." + key, key, entry.second.Scalar(), experiment.environment);
    }
    experiment.determined.mapped.push_back(path + " -> environment");
    return;
  }
  // {cpu: [...], cuda: [...], rocm: [...]}: the list for the kind of trial this is.
  const bool gpus = experiment.resources.gpus_per_node.value_or(0) > 0;
  const char* kind = gpus ? (devices.has("cuda") ? "cuda" : "gpu") : "cpu";
  add_assignments(devices, devices.raw(kind), fmt::format("{}.{}", path, kind), experiment);
  experiment.determined.mapped.push_back(
      fmt::format("{}.{} -> environment (the trials {} GPUs)", path, kind, gpus ? "have" : "have no"));
}

}  // namespace

// The GPUs of one node that Determined's own Slurm/PBS launcher was told (slurm.slots_per_node).
std::optional<int> launcher_slots_per_node(const MappingReader& root) {
  for (const char* launcher : {"slurm", "pbs"}) {
    if (!root.has(launcher) || !root.raw(launcher).IsMap()) continue;
    auto section = root.mapping(launcher);
    if (auto slots = section.optional_integer_in("slots_per_node", 1, 64, "the GPUs of one node, e.g. 4")) {
      return static_cast<int>(*slots);
    }
  }
  return std::nullopt;
}

const std::vector<std::string>& determined_top_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> all = keys_of(ignored_top());
    for (const char* key : {"labels", "reproducibility", "records_per_epoch", "min_checkpoint_period",
                            "checkpoint_storage", "bind_mounts"}) {
      all.emplace_back(key);
    }
    for (const auto& retired : retired_top()) all.emplace_back(retired.key);
    return all;
  }();
  return keys;
}

std::string safe_experiment_name(std::string_view text) {
  // Runs of anything but letters, digits, '.', '_' and '-' become one '-'; no leading '.' or '-'.
  std::string name;
  for (char c : text) {
    const bool safe = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '-';
    if (safe) {
      if (!name.empty() || (c != '.' && c != '-')) name += c;
    } else if (!name.empty() && name.back() != '-') {
      name += '-';
    }
  }
  if (name.size() > kMaxNameLength) name.resize(kMaxNameLength);
  while (!name.empty() && name.back() == '-') name.pop_back();
  return name;
}

void parse_determined_top(const MappingReader& root, Experiment& experiment) {
  Diagnostics* sink = root.sink();
  auto step = [&](auto&& work) {
    if (sink) {
      sink->attempt(work);
    } else {
      work();
    }
  };
  for (const auto& retired : retired_top()) {
    if (root.has(retired.key)) root.report(root.node()[retired.key], retired.key, retired.problem, retired.fix);
  }
  if (root.has("labels")) step([&] { parse_labels(root, experiment); });
  if (root.has("reproducibility")) {
    step([&] {
      auto reproducibility = root.mapping("reproducibility");
      reproducibility.allow_only({"experiment_seed"});
      auto seed = reproducibility.optional_integer_in("experiment_seed", 0, std::numeric_limits<std::int64_t>::max(),
                                                      "use a non-negative seed");
      if (!seed) return;
      if (root.has("seed")) {
        root.fail(reproducibility.raw("experiment_seed"), "reproducibility.experiment_seed",
                  "gives the seed a second time (seed is set too)", "keep one of seed and experiment_seed");
      }
      experiment.seed = static_cast<std::uint64_t>(*seed);
      experiment.seed_given = true;
      experiment.determined.mapped.push_back(fmt::format("reproducibility.experiment_seed: {} -> seed", *seed));
    });
  }
  if (root.has("records_per_epoch")) {
    step([&] {
      // Determined's 0 means "not given".
      auto records = root.optional_integer_in("records_per_epoch", 0, std::int64_t{1} << 50,
                                              "give the number of records in one epoch of training data");
      if (*records > 0) experiment.records_per_epoch = *records;
    });
  }
  if (root.has("checkpoint_storage")) {
    step([&] {
      if (root.raw("checkpoint_storage").IsNull()) return;
      parse_checkpoint_storage(root.mapping("checkpoint_storage"), experiment);
    });
  }
  if (root.has("checkpoint_policy")) {
    step([&] { root.optional_choice("checkpoint_policy", {"best", "all", "none"}); });
  }
  for (const auto& ignored : ignored_top()) {
    if (!root.has(ignored.key)) continue;
    if (std::string_view(ignored.key) == "data" && is_dlx_data(root.raw("data"))) continue;
    bool mapped = false;
    step([&] { mapped = map_trial_option(root, experiment, ignored.key); });
    if (mapped) continue;
    note_ignored(experiment, ignored.key, ignored.why);
  }
}

namespace {

// Determined's resources.resource_pool: its Slurm launcher ran a pool as the partition of that name.
void map_resource_pool(const MappingReader& section, Experiment& experiment) {
  auto pool = section.optional_string("resource_pool");
  if (!pool) return;
  if (section.has("partition")) {
    section.fail(section.raw("resource_pool"), "resources.resource_pool", "gives the partition a second time",
                 "keep one of partition and resource_pool");
  }
  if (pool->size() > kMaxValueLength || !is_partition_name(*pool)) {
    section.fail(section.raw("resource_pool"), "resources.resource_pool",
                 fmt::format("'{}' is not valid as a Slurm partition", abbreviated(*pool)),
                 "give a partition name as sinfo shows it");
  }
  experiment.resources.partition = pool;
  experiment.determined.mapped.push_back(fmt::format("resources.resource_pool: {} -> resources.partition", *pool));
}

// Determined's resources.slots_per_trial (GPUs per trial; 0: a CPU trial) as dlx's nodes, tasks
// and GPUs per node: one node with all of them when no node size is known, the trial fits on one
// node or is_single_node says so; else whole nodes of `gpus_per_node`.
void map_slots_per_trial(const MappingReader& section, Experiment& experiment, std::optional<int> gpus_per_node) {
  const bool single_node = section.optional_boolean("is_single_node").value_or(false);
  auto slots = section.optional_integer_in("slots_per_trial", 0, 100'000, "give the GPUs each trial uses");
  if (!slots) return;
  for (const char* dlx_key : {"nodes_per_trial", "tasks_per_node", "gpus_per_node"}) {
    if (section.has(dlx_key)) {
      section.fail(section.raw("slots_per_trial"), "resources.slots_per_trial",
                   fmt::format("and {} both say how a trial is laid out", dlx_key),
                   "keep slots_per_trial alone (dlx derives nodes, tasks and GPUs from it), or use dlx's keys");
    }
  }
  Resources& into = experiment.resources;
  const int wanted = static_cast<int>(*slots);
  if (wanted == 0) {  // a CPU trial: one rank
    into.nodes_per_trial = 1;
    into.tasks_per_node = 1;
    into.gpus_per_node = 0;
  } else if (!gpus_per_node || *gpus_per_node <= 0 || wanted <= *gpus_per_node || single_node) {
    // Without a GPUs-per-node figure the trial is one node with all its GPUs: Slurm refuses it
    // at submission if no node has that many.
    if (single_node && gpus_per_node && *gpus_per_node > 0 && wanted > *gpus_per_node) {
      section.fail(section.raw("slots_per_trial"), "resources.slots_per_trial",
                   fmt::format("is {} with is_single_node, more than the {} GPUs of one node", wanted, *gpus_per_node),
                   fmt::format("use at most {} slots, or drop is_single_node", *gpus_per_node));
    }
    into.nodes_per_trial = 1;
    into.tasks_per_node = wanted;
    into.gpus_per_node = wanted;
  } else {
    if (wanted % *gpus_per_node != 0) {
      section.fail(section.raw("slots_per_trial"), "resources.slots_per_trial",
                   fmt::format("is {}, which does not fill whole nodes of {} GPUs", wanted, *gpus_per_node),
                   fmt::format("use a multiple of {} (Determined requires the same)", *gpus_per_node));
    }
    into.nodes_per_trial = wanted / *gpus_per_node;
    into.tasks_per_node = *gpus_per_node;
    into.gpus_per_node = *gpus_per_node;
  }
  experiment.determined.slots_per_trial = wanted;
  experiment.determined.mapped.push_back(
      fmt::format("resources.slots_per_trial: {} -> resources: nodes_per_trial {}, tasks_per_node {}, gpus_per_node {}",
                  wanted, into.nodes_per_trial, into.tasks_per_node, *into.gpus_per_node));
}

}  // namespace

void parse_experiment_resources(const MappingReader& section, Experiment& experiment, std::optional<int> gpus_per_node) {
  std::vector<std::string> known = resource_keys();
  for (const auto& ignored : ignored_resources()) known.emplace_back(ignored.key);
  for (const char* key : {"slots_per_trial", "resource_pool", "is_single_node"}) known.emplace_back(key);
  section.allow_only(known);
  for (const auto& entry : section.node()) {
    if (const Ignored* ignored = find(ignored_resources(), entry.first.Scalar())) {
      note_ignored(experiment, "resources." + entry.first.Scalar(), ignored->why);
    }
  }
  read_resources(section, experiment.resources);
  map_resource_pool(section, experiment);
  map_slots_per_trial(section, experiment, gpus_per_node);
}

void parse_experiment_environment(const MappingReader& section, Experiment& experiment) {
  // The container's keys (Determined's, read in both forms): the rest are variables or
  // Determined's environment keys.
  constexpr const char* kContainerKeys[] = {"image", "force_pull_image"};
  if (section.has("image")) {
    parse_image(section, experiment.container);
    experiment.determined.mapped.push_back("environment.image -> container.image");
  }
  if (auto force = section.optional_boolean("force_pull_image")) {
    experiment.container.force_pull = *force;
    experiment.determined.mapped.push_back("environment.force_pull_image -> container.force_pull_image");
  }
  const auto is_container_key = [&](const std::string& key) {
    return std::find(std::begin(kContainerKeys), std::end(kContainerKeys), key) != std::end(kContainerKeys);
  };
  const auto& determined = ignored_environment();
  bool determined_form = section.has("environment_variables");
  for (const auto& entry : section.node()) determined_form = determined_form || find(determined, entry.first.Scalar());
  // Beside the image, a lower-case key is a mistyped Determined key (environment_variable), not
  // a variable (they are upper case by convention): read as Determined's form, it gets a
  // did-you-mean.
  if (section.has("image") || section.has("force_pull_image")) {
    for (const auto& entry : section.node()) {
      const auto& key = entry.first.Scalar();
      determined_form = determined_form || (!is_container_key(key) && key != to_upper(key));
    }
  }
  if (!determined_form) {
    YAML::Node variables(YAML::NodeType::Map);
    for (const auto& entry : section.node()) {
      if (!is_container_key(entry.first.Scalar())) variables[entry.first] = entry.second;
    }
    parse_environment(section.nested(variables, "environment"), experiment.environment);
    return;
  }
  std::vector<std::string> known = keys_of(determined);
  known.emplace_back("environment_variables");
  for (const char* key : kContainerKeys) known.emplace_back(key);
  section.allow_only(known);
  for (const auto& entry : section.node()) {
    if (const Ignored* ignored = find(determined, entry.first.Scalar())) {
      note_ignored(experiment, "environment." + entry.first.Scalar(), ignored->why);
    }
  }
  if (section.has("environment_variables")) parse_environment_variables(section, experiment);
}

std::optional<DeterminedPeriod> read_determined_period(const MappingReader& root, const char* key) {
  auto period = root.mapping(key);
  period.allow_only({"batches", "records", "epochs"});
  if (period.node().size() != 1) {
    root.fail(root.raw(key), key, "must give exactly one of batches, records, epochs",
              fmt::format("e.g. {}: {{batches: 500}}", key));
  }
  DeterminedPeriod read{period.node().begin()->first.Scalar(), 0};
  read.amount = *period.optional_integer_in(read.unit.c_str(), 0, std::int64_t{1} << 50, "a length, 0 for none");
  if (read.amount == 0) return std::nullopt;  // Determined's "no minimum"
  return read;
}

void parse_min_checkpoint_period(const MappingReader& root, Experiment& experiment) {
  const auto period = read_determined_period(root, "min_checkpoint_period");
  if (!period) return;
  const std::string& unit = period->unit;
  const std::int64_t amount = period->amount;
  if (root.has("checkpoint") && root.raw("checkpoint")["period"]) {
    root.fail(root.raw("min_checkpoint_period"), "min_checkpoint_period",
              "gives the checkpoint period a second time (checkpoint.period is set too)", "keep one of the two");
  }
  std::optional<std::int64_t> batches;
  std::string how;
  if (unit == "batches") {
    batches = amount;
  } else {
    // Records (and epochs, through records_per_epoch) become batches with a constant
    // global_batch_size, as Determined converts them.
    auto size = std::find_if(experiment.hyperparameters.begin(), experiment.hyperparameters.end(),
                             [](const Hyperparameter& hp) { return hp.name == "global_batch_size"; });
    const bool constant_size = size != experiment.hyperparameters.end() &&
                               size->type == HyperparameterType::constant && size->value.is_number_integer() &&
                               size->value.get<std::int64_t>() > 0;
    std::optional<std::int64_t> records;
    if (unit == "records") records = amount;
    if (unit == "epochs" && experiment.records_per_epoch) records = amount * *experiment.records_per_epoch;
    if (!constant_size || !records) {
      note_ignored(experiment, "min_checkpoint_period",
                   unit == "records" ? "in records it needs a constant global_batch_size hyperparameter"
                                     : "in epochs it needs records_per_epoch and a constant global_batch_size");
      return;
    }
    const auto per_batch = size->value.get<std::int64_t>();
    batches = (*records + per_batch - 1) / per_batch;
    how = fmt::format(" ({} records / global_batch_size {})", *records, per_batch);
  }
  experiment.checkpoint.period_batches = batches;
  experiment.checkpoint.period_minutes.reset();
  experiment.determined.mapped.push_back(fmt::format("min_checkpoint_period: {{{}: {}}} -> checkpoint.period: "
                                                     "{{batches: {}}}{}",
                                                     unit, amount, *batches, how));
}

}  // namespace dlx::config::detail
