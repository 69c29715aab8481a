// SPDX-License-Identifier: Apache-2.0
// Determined experiment files read by dlx (issue 20, the config side): hyperparameter values of
// any YAML kind, dotted names, Determined's keys mapped or ignored with one warning, refused
// entrypoints, free-text names, every problem of a file in one report, and did-you-means that
// only offer plausible keys of the same section.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "dlx/config/ignored_keys.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/config/site.hpp"
#include "dlx/config/snapshot.hpp"
#include "dlx/config/trial_api.hpp"
#include "resource_options.hpp"

using namespace dlx::config;
using nlohmann::json;

namespace {

const std::string kSearcher = "searcher: {name: single, metric: loss, max_length: {batches: 100}}\n";

std::string error_of(const std::string& text, const SiteConfig* site = nullptr) {
  try {
    parse_experiment(text, "exp.yaml", site);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string fmt_join(const std::vector<std::string>& lines) {
  std::string joined;
  for (const auto& line : lines) joined += (joined.empty() ? "" : "\n") + line;
  return joined;
}

const Hyperparameter& hp(const Experiment& experiment, const std::string& name) {
  for (const auto& h : experiment.hyperparameters) {
    if (h.name == name) return h;
  }
  FAIL("no hyperparameter " << name);
  throw;
}

// The snapshot round trip: parse, write, parse again, same hyperparameters and same YAML.
void check_round_trip(const Experiment& original) {
  const std::string yaml = to_yaml(original);
  INFO(yaml);
  auto again = parse_experiment(yaml, "experiment.yaml");
  CHECK(to_yaml(again) == yaml);
  REQUIRE(again.hyperparameters.size() == original.hyperparameters.size());
  for (std::size_t k = 0; k < again.hyperparameters.size(); ++k) {
    const auto& a = original.hyperparameters[k];
    const auto& b = again.hyperparameters[k];
    CHECK(a.name == b.name);
    CHECK(a.path == b.path);
    CHECK(a.type == b.type);
    CHECK(a.value == b.value);
    CHECK(a.vals == b.vals);
  }
}

}  // namespace

TEST_CASE("hyperparameter values of every YAML kind pass through, as in Determined", "[config][determined]") {
  auto experiment = parse_experiment(R"(name: values
entrypoint: python3 train.py
hyperparameters:
  nothing: null
  tilde: ~
  empty_list: []
  layers: [64, 32]
  empty_map: {}
  quoted_null: "null"
  schedule: {type: const, val: {warmup: 5, steps: [10, 20]}}
  shapes: {type: const, val: [[1, 2], [3, 4]]}
  gone: {type: const, val: null}
  arch: {type: categorical, vals: [[64, 64], [128], {depth: 3}, null, "x"]}
searcher: {name: grid, metric: loss}
)",
                                     "values.yaml");
  CHECK(hp(experiment, "nothing").value.is_null());
  CHECK(hp(experiment, "tilde").value.is_null());
  CHECK(hp(experiment, "empty_list").value == json::array());
  CHECK(hp(experiment, "layers").value == json::array({64, 32}));
  CHECK(hp(experiment, "empty_map").value == json::object());
  CHECK(hp(experiment, "quoted_null").value == "null");
  CHECK(hp(experiment, "schedule").value == json{{"warmup", 5}, {"steps", {10, 20}}});
  CHECK(hp(experiment, "shapes").value == json::array({json::array({1, 2}), json::array({3, 4})}));
  CHECK(hp(experiment, "gone").value.is_null());
  const auto& arch = hp(experiment, "arch");
  REQUIRE(arch.vals.size() == 5);
  CHECK(arch.vals[0] == json::array({64, 64}));
  CHECK(arch.vals[2] == json{{"depth", 3}});
  CHECK(arch.vals[3].is_null());
  CHECK(arch.vals[4] == "x");
  check_round_trip(experiment);
}

TEST_CASE("hyperparameter names may contain '.', apart from nested groups", "[config][determined]") {
  auto experiment = parse_experiment(R"(name: dots
entrypoint: python3 train.py
hyperparameters:
  optim.lr: 0.1
  model:
    head.width: {type: int, minval: 1, maxval: 4}
    depth: 3
)" + std::string("searcher: {name: random, metric: loss, max_trials: 2}\n"),
                                     "dots.yaml");
  CHECK(hp(experiment, "optim.lr").path == std::vector<std::string>{"optim.lr"});
  CHECK(hp(experiment, "model.head.width").path == std::vector<std::string>{"model", "head.width"});
  CHECK(hp(experiment, "model.depth").path == std::vector<std::string>{"model", "depth"});
  check_round_trip(experiment);
  // The snapshot keeps the flat key flat and the group nested.
  const std::string yaml = to_yaml(experiment);
  CHECK_THAT(yaml, Catch::Contains("\n  optim.lr:"));
  CHECK_THAT(yaml, Catch::Contains("\n  model:\n    head.width:"));

  // A dotted name and a group that spell the same name collide, with the whole path in the message.
  CHECK_THAT(error_of("name: a\nentrypoint: x\nhyperparameters: {a.b: 1, a: {b: 2}}\n" + kSearcher),
             Catch::Contains("hyperparameters.a.b: maps to the same variable DLX_HP_A_B as another hyperparameter"));
  // A value that is also the group of a dotted name: DLX_HPARAMS could not nest both.
  CHECK(error_of("name: a\nentrypoint: x\nhyperparameters:\n  a: 1\n  a.b: 2\n" + kSearcher) ==
        "exp.yaml:5:8: hyperparameters.a.b: nests under 'a', which is a hyperparameter of its own: a trainer would "
        "see 'a' both as a value and as a group (rename 'a' or 'a.b')");
  // Messages about a dotted name keep the hyperparameters. prefix.
  CHECK(error_of("name: a\nentrypoint: x\nhyperparameters:\n  optim.lr: {type: double, minval: 1, maxval: 0}\n" +
                 kSearcher) ==
        "exp.yaml:4:36: hyperparameters.optim.lr.minval: minval 1 is greater than maxval 0 (swap them or fix the "
        "range)");
  CHECK(error_of("name: a\nentrypoint: x\nhyperparameters:\n  optim.lr: {type: double, minval: 0, maxval: .inf}\n" +
                 kSearcher) ==
        "exp.yaml:4:47: hyperparameters.optim.lr.maxval: expected a number, got '.inf' (write a number such as 0.01 "
        "or 1e-3)");
  CHECK(error_of("name: a\nentrypoint: x\nhyperparameters:\n  opt.9x/y: 1\n" + kSearcher) ==
        "exp.yaml:4:3: hyperparameters.opt.9x/y: is not a valid hyperparameter name (use letters, digits, '_', '-' "
        "and '.', starting with a letter or '_')");
}

TEST_CASE("Determined's resources.slots_per_trial becomes nodes, tasks and GPUs", "[config][determined]") {
  const std::string head = "name: a\nentrypoint: python3 train.py\n" + kSearcher;
  SiteConfig site;
  site.source = "site.yaml";
  site.resources.gpus_per_node = 4;

  auto spread = parse_experiment(head + "resources: {slots_per_trial: 8}\n", "exp.yaml", &site);
  CHECK(spread.resources.nodes_per_trial == 2);
  CHECK(spread.resources.tasks_per_node == 4);
  CHECK(spread.resources.gpus_per_node == 4);
  // ... and reaches sbatch as its options.
  auto options = dlx::spank::resource_options(spread);
  CHECK(options[0] == std::pair<std::string, std::string>{"nodes", "2"});
  CHECK(options[1] == std::pair<std::string, std::string>{"ntasks-per-node", "4"});
  CHECK(options[2] == std::pair<std::string, std::string>{"gpus-per-node", "4"});
  REQUIRE(spread.determined.mapped.size() == 1);
  CHECK(spread.determined.mapped[0] ==
        "resources.slots_per_trial: 8 -> resources: nodes_per_trial 2, tasks_per_node 4, gpus_per_node 4");

  auto within = parse_experiment(head + "resources: {slots_per_trial: 2}\n", "exp.yaml", &site);
  CHECK(within.resources.nodes_per_trial == 1);
  CHECK(within.resources.tasks_per_node == 2);
  CHECK(within.resources.gpus_per_node == 2);

  // Without a site figure: one node with every GPU.
  auto alone = parse_experiment(head + "resources: {slots_per_trial: 8}\n", "exp.yaml");
  CHECK(alone.resources.nodes_per_trial == 1);
  CHECK(alone.resources.tasks_per_node == 8);
  CHECK(alone.resources.gpus_per_node == 8);

  // Determined's own Slurm launcher's slots_per_node is the figure (and wins over the site's).
  auto launcher = parse_experiment(head + "resources: {slots_per_trial: 4}\nslurm: {slots_per_node: 2}\n", "exp.yaml",
                                   &site);
  CHECK(launcher.resources.nodes_per_trial == 2);
  CHECK(launcher.resources.tasks_per_node == 2);

  auto cpu = parse_experiment(head + "resources: {slots_per_trial: 0}\n", "exp.yaml", &site);
  CHECK(cpu.resources.gpus_per_node == 0);
  CHECK(cpu.resources.tasks_per_node == 1);

  auto pool = parse_experiment(head + "resources: {resource_pool: a100, max_slots: 4}\n", "exp.yaml");
  CHECK(pool.resources.partition == "a100");

  CHECK(error_of(head + "resources: {slots_per_trial: 6}\n", &site) ==
        "exp.yaml:4:30: resources.slots_per_trial: is 6, which does not fill whole nodes of 4 GPUs (use a multiple of "
        "4 (Determined requires the same))");
  CHECK(error_of(head + "resources: {slots_per_trial: 8, is_single_node: true}\n", &site) ==
        "exp.yaml:4:30: resources.slots_per_trial: is 8 with is_single_node, more than the 4 GPUs of one node (use "
        "at most 4 slots, or drop is_single_node)");
  CHECK(error_of(head + "resources: {slots_per_trial: 2, nodes_per_trial: 2}\n") ==
        "exp.yaml:4:30: resources.slots_per_trial: and nodes_per_trial both say how a trial is laid out (keep "
        "slots_per_trial alone (dlx derives nodes, tasks and GPUs from it), or use dlx's keys)");
  CHECK(error_of(head + "resources: {resource_pool: a100, partition: gpu}\n") ==
        "exp.yaml:4:28: resources.resource_pool: gives the partition a second time (keep one of partition and "
        "resource_pool)");
}

TEST_CASE("the rest of a Determined file: mapped keys", "[config][determined]") {
  auto experiment = parse_experiment(R"(name: mnist_pytorch_const
description: an MNIST classifier
labels: [mnist, baseline]
entrypoint: python3 train.py
max_restarts: 2
records_per_epoch: 60000
reproducibility: {experiment_seed: 1234}
checkpoint_storage:
  type: shared_fs
  host_path: /tmp
  save_trial_latest: 3
  save_trial_best: 2
  save_experiment_best: 1
min_checkpoint_period: {epochs: 1}
hyperparameters:
  global_batch_size: 64
environment:
  image: determinedai/environments:cuda-11.3
  environment_variables:
    - NCCL_DEBUG=INFO
    - PYTHONPATH=/a=b
)" + kSearcher,
                                     "mnist.yaml");
  CHECK(experiment.name == "mnist_pytorch_const");
  CHECK(experiment.description == "an MNIST classifier");
  CHECK(experiment.labels == std::vector<std::string>{"mnist", "baseline"});
  CHECK(experiment.max_restarts == 2);
  CHECK(experiment.records_per_epoch == 60000);
  CHECK(experiment.seed == 1234);
  CHECK(experiment.seed_given);
  CHECK(experiment.checkpoint.keep_latest == 3);
  CHECK(experiment.checkpoint.keep_best == 2);
  CHECK(experiment.checkpoint.keep_experiment_best == 1);
  CHECK(experiment.checkpoint.period_batches == 938);  // ceil(60000 / 64)
  REQUIRE(experiment.environment.size() == 2);
  CHECK(experiment.environment[0] == std::pair<std::string, std::string>{"NCCL_DEBUG", "INFO"});
  CHECK(experiment.environment[1] == std::pair<std::string, std::string>{"PYTHONPATH", "/a=b"});
  REQUIRE(experiment.warnings.size() == 1);
  CHECK(experiment.warnings[0] ==
        "mnist.yaml: warning: dlx ignores these Determined keys: checkpoint_storage (checkpoints go to the "
        "experiment directory)");
  CHECK(experiment.container.image_for(true).has_value());  // environment.image: the container's
  CHECK(experiment.determined.mapped ==
        std::vector<std::string>{
            "reproducibility.experiment_seed: 1234 -> seed",
            "checkpoint_storage.save_trial_latest: 3 -> checkpoint.keep_latest: 3",
            "checkpoint_storage.save_trial_best: 2 -> checkpoint.keep_best: 2",
            "checkpoint_storage.save_experiment_best: 1 -> checkpoint.keep_experiment_best: 1",
            "environment.image -> container.image",
            "environment.environment_variables -> environment",
            "min_checkpoint_period: {epochs: 1} -> checkpoint.period: {batches: 938} (60000 records / "
            "global_batch_size 64)"});

  // The snapshot is a dlx file: it parses back without warnings, labels and records_per_epoch kept.
  auto again = parse_experiment(to_yaml(experiment), "experiment.yaml");
  CHECK(again.warnings.empty());
  CHECK(again.labels == experiment.labels);
  CHECK(again.records_per_epoch == 60000);
  CHECK(again.checkpoint.period_batches == 938);
  CHECK(to_yaml(again) == to_yaml(experiment));
}

TEST_CASE("Determined's environment variables: a list, or one list per kind of trial", "[config][determined]") {
  const std::string head = "name: a\nentrypoint: x\n" + kSearcher;
  auto by_device = parse_experiment(head + "environment:\n  environment_variables:\n    cpu: [WHO=cpu]\n"
                                           "    cuda: [WHO=cuda]\nresources: {slots_per_trial: 1}\n",
                                    "exp.yaml");
  REQUIRE(by_device.environment.size() == 1);
  CHECK(by_device.environment[0].second == "cuda");
  auto cpu = parse_experiment(head + "environment:\n  environment_variables: {cpu: [WHO=cpu], cuda: [WHO=cuda]}\n"
                                     "resources: {slots_per_trial: 0}\n",
                              "exp.yaml");
  CHECK(cpu.environment[0].second == "cpu");
  auto mapping = parse_experiment(head + "environment:\n  environment_variables: {NCCL_DEBUG: INFO}\n", "exp.yaml");
  REQUIRE(mapping.environment.size() == 1);
  CHECK(mapping.environment[0] == std::pair<std::string, std::string>{"NCCL_DEBUG", "INFO"});
  CHECK(error_of(head + "environment:\n  environment_variables: {NCCL_DEBUG: [a]}\n") ==
        "exp.yaml:5:39: environment.environment_variables.NCCL_DEBUG: must be a scalar value (write NAME: value)");
  // dlx's own form stays: NAME: value (environment.image is the container's, docs/containers.md).
  auto plain = parse_experiment(head + "environment: {image: x}\n", "exp.yaml");
  CHECK(plain.environment.empty());
  CHECK(plain.warnings.empty());
  CHECK(plain.container.image == "x");

  CHECK(error_of(head + "environment: {environment_variables: [NCCL_DEBUG]}\n") ==
        "exp.yaml:4:39: environment.environment_variables: 'NCCL_DEBUG' has no '=' (write NAME=value)");
  CHECK(error_of(head + "environment: {environment_variables: [DLX_TRIAL=3]}\n") ==
        "exp.yaml:4:39: environment.environment_variables.DLX_TRIAL: is reserved (DLX_ and SLURM_ variables are set "
        "by dlx and Slurm) (choose another name)");
  CHECK(error_of(head + "environment: {image: x, environment_variable: []}\n") ==
        "exp.yaml:4:25: environment.environment_variable: unknown key in environment (did you mean "
        "'environment_variables'?)");
}

TEST_CASE("min_checkpoint_period becomes checkpoint.period where it can", "[config][determined]") {
  const std::string head = "name: a\nentrypoint: x\n" + kSearcher;
  CHECK(parse_experiment(head + "min_checkpoint_period: {batches: 500}\n", "e.yaml").checkpoint.period_batches == 500);
  auto records = parse_experiment(head + "hyperparameters: {global_batch_size: 32}\nmin_checkpoint_period: {records: 100}\n",
                                  "e.yaml");
  CHECK(records.checkpoint.period_batches == 4);  // ceil(100 / 32)
  auto unknown = parse_experiment(head + "min_checkpoint_period: {records: 100}\n", "e.yaml");
  CHECK_FALSE(unknown.checkpoint.period_batches);
  REQUIRE(unknown.warnings.size() == 1);
  CHECK_THAT(unknown.warnings[0],
             Catch::Contains("min_checkpoint_period (in records it needs a constant global_batch_size hyperparameter)"));
  CHECK(error_of(head + "checkpoint: {period: {batches: 3}}\nmin_checkpoint_period: {batches: 5}\n") ==
        "exp.yaml:5:24: min_checkpoint_period: gives the checkpoint period a second time (checkpoint.period is set "
        "too) (keep one of the two)");
}

TEST_CASE("ignored Determined keys: accepted, named once with the reason", "[config][determined]") {
  auto experiment = parse_experiment(R"(name: ignored
entrypoint: python3 train.py
bind_mounts: [{host_path: /data, container_path: /data}]
workspace: ws
project: p
profiling: {enabled: true}
optimizations: {aggregation_frequency: 2}
data: {url: x}
debug: false
scheduling_unit: 100
perform_initial_validation: true
min_validation_period: {batches: 100}
checkpoint_policy: best
resources: {slots_per_trial: 1, shm_size: 4G}
)" + kSearcher,
                                     "ignored.yaml");
  REQUIRE(experiment.warnings.size() == 1);
  CHECK(experiment.warnings[0] ==
        "ignored.yaml: warning: dlx ignores these Determined keys: checkpoint_policy (dlx saves when the script asks and at checkpoint.period; keep_* "
        "decide what stays); data (free-form data for Determined's Trial API: pass what the script needs as "
        "hyperparameters; dlx's own data: section has stage:); debug (Determined's debug logging); min_validation_period (the script validates when it "
        "chooses; the searcher acts on each validation); optimizations (options of Determined's Trial API); "
        "perform_initial_validation (the script validates when it chooses); profiling (Determined's profiler); "
        "project (a Determined web UI grouping: experiments live under the plugin's storage_root); scheduling_unit "
        "(Determined's reporting unit: the script reports when it chooses); workspace (a Determined web UI "
        "grouping: experiments live under the plugin's storage_root); resources.shm_size (/dev/shm is the node's, in "
        "a container too)");
  CHECK(experiment.container.bind_mounts.size() == 1);  // bind_mounts: the container's
  CHECK(parse_experiment("name: a\nentrypoint: x\n" + kSearcher, "a.yaml").warnings.empty());
  CHECK(error_of("name: a\nentrypoint: x\ncheckpoint_policy: latest\n" + kSearcher) ==
        "exp.yaml:3:20: checkpoint_policy: unknown value 'latest' (use one of best, all, none)");
  CHECK(error_of("name: a\nentrypoint: x\nbatches_per_step: 100\n" + kSearcher) ==
        "exp.yaml:3:19: batches_per_step: is Determined's pre-0.13 training step, which dlx does not read (remove "
        "it; give lengths in batches, records or epochs (searcher.max_length: {batches: N}))");
}

TEST_CASE("ignored Determined keys of the searcher join the same one warning line", "[config][determined]") {
  // The top-level keys first, then the searcher's, all in ONE line.
  auto both = parse_experiment(R"(name: both
entrypoint: python3 train.py
workspace: ws
searcher: {name: single, metric: loss, max_length: 100, source_trial_id: 12, source_checkpoint_uuid: 7f3a-11}
)",
                               "both.yaml");
  REQUIRE(both.warnings.size() == 1);
  CHECK(both.warnings[0] ==
        "both.yaml: warning: dlx ignores these Determined keys: workspace (a Determined web UI grouping: experiments "
        "live under the plugin's storage_root); searcher.source_trial_id (dlx trials start from scratch: load those "
        "weights in your trainer); searcher.source_checkpoint_uuid (dlx trials start from scratch: load those "
        "weights in your trainer)");
  CHECK(ignored_determined_keys(both) ==
        std::vector<std::string>{
            "workspace (a Determined web UI grouping: experiments live under the plugin's storage_root)",
            "searcher.source_trial_id (dlx trials start from scratch: load those weights in your trainer)",
            "searcher.source_checkpoint_uuid (dlx trials start from scratch: load those weights in your trainer)"});
  // Only the searcher's: still a warning, the same single line.
  auto searcher_only = parse_experiment(
      "name: s\nentrypoint: x\nsearcher: {name: single, metric: loss, max_length: 100, source_trial_id: 3}\n",
      "s.yaml");
  REQUIRE(searcher_only.warnings.size() == 1);
  CHECK(searcher_only.warnings[0] ==
        "s.yaml: warning: dlx ignores these Determined keys: searcher.source_trial_id (dlx trials start from "
        "scratch: load those weights in your trainer)");
}

TEST_CASE("mistakes in Determined's keys: each message", "[config][determined]") {
  const std::string head = "name: a\nentrypoint: x\n" + kSearcher;
  const std::vector<std::pair<std::string, std::string>> cases{
      {"labels: mnist\n", "exp.yaml:4:9: labels: must be a list of strings (e.g. labels: [mnist, baseline])"},
      {"labels: [[a]]\n", "exp.yaml:4:10: labels: each label must be a string (e.g. labels: [mnist, baseline])"},
      {"seed: 1\nreproducibility: {experiment_seed: 2}\n",
       "exp.yaml:5:36: reproducibility.experiment_seed: gives the seed a second time (seed is set too) (keep one of "
       "seed and experiment_seed)"},
      {"reproducibility: {experiment_seed: -1}\n",
       "exp.yaml:4:36: reproducibility.experiment_seed: must be between 0 and 9223372036854775807, got -1 (use a "
       "non-negative seed)"},
      {"reproducibility: {seed: 1}\n",
       "exp.yaml:4:19: reproducibility.seed: unknown key in reproducibility (known keys in reproducibility: "
       "experiment_seed)"},
      {"records_per_epoch: -5\n",
       "exp.yaml:4:20: records_per_epoch: must be between 0 and 1125899906842624, got -5 (give the number of records "
       "in one epoch of training data)"},
      {"resources: {resource_pool: a b}\n",
       "exp.yaml:4:28: resources.resource_pool: 'a b' is not valid as a Slurm partition (give a partition name as "
       "sinfo shows it)"},
      {"resources: {slots_per_trial: -1}\n",
       "exp.yaml:4:30: resources.slots_per_trial: must be between 0 and 100000, got -1 (give the GPUs each trial "
       "uses)"},
      {"environment: {environment_variables: 3}\n",
       "exp.yaml:4:38: environment.environment_variables: must be a list of NAME=value strings (e.g. "
       "environment_variables: [NCCL_DEBUG=INFO])"},
      {"environment: {environment_variables: [[A=1]]}\n",
       "exp.yaml:4:39: environment.environment_variables: each entry must be a NAME=value string (e.g. - "
       "NCCL_DEBUG=INFO)"},
      {"environment: {environment_variables: [1A=1]}\n",
       "exp.yaml:4:39: environment.environment_variables.1A: is not a valid variable name (use letters, digits and "
       "'_', not starting with a digit)"},
      {"min_checkpoint_period: {batches: 5, epochs: 1}\n",
       "exp.yaml:4:24: min_checkpoint_period: must give exactly one of batches, records, epochs (e.g. "
       "min_checkpoint_period: {batches: 500})"},
      {"min_checkpoint_period: {steps: 5}\n",
       "exp.yaml:4:25: min_checkpoint_period.steps: unknown key in min_checkpoint_period (known keys in "
       "min_checkpoint_period: batches, records, epochs)"},
      {"checkpoint_storage: {save_trial_best: -1}\n",
       "exp.yaml:4:39: checkpoint_storage.save_trial_best: must be between 0 and 1000, got -1 (give how many "
       "checkpoints to keep)"},
      {"slurm: {slots_per_node: 0}\nresources: {slots_per_trial: 2}\n",
       "exp.yaml:4:25: slurm.slots_per_node: must be between 1 and 64, got 0 (the GPUs of one node, e.g. 4)"},
  };
  for (const auto& [text, expected] : cases) {
    INFO(text);
    CHECK(error_of(head + text) == expected);
  }
}

TEST_CASE("a Determined Trial class as entrypoint runs through dlx's harness", "[config][determined]") {
  auto trial = parse_experiment("name: a\nentrypoint: model_def:MNistTrial\n" + kSearcher, "exp.yaml");
  CHECK(trial.entrypoint ==
        std::vector<std::string>{"python3", "-m", "determined.exec.harness", "model_def:MNistTrial"});
  CHECK_FALSE(trial.entrypoint_is_shell);
  REQUIRE(trial.determined.mapped.size() == 1);
  CHECK(trial.determined.mapped[0] ==
        "entrypoint: model_def:MNistTrial -> python3 -m determined.exec.harness model_def:MNistTrial");
  // The frozen snapshot keeps the command: read again, nothing is mapped twice.
  auto again = parse_experiment(to_yaml(trial), "experiment.yaml");
  CHECK(again.entrypoint == trial.entrypoint);
  CHECK(again.determined.mapped.empty());
  CHECK(parse_experiment("name: a\nentrypoint: pkg.models.net:Trial\n" + kSearcher, "exp.yaml").entrypoint.size() == 4);
  // Commands with a colon stay commands.
  CHECK(parse_experiment("name: a\nentrypoint: python3 -m pkg:main\n" + kSearcher, "exp.yaml").entrypoint ==
        std::vector<std::string>{"python3 -m pkg:main"});
  CHECK(error_of("name: a\nentrypoint: http://x\n" + kSearcher) == "");
}

TEST_CASE("the Trial API's loop keys become the harness's arguments", "[config][determined]") {
  const std::string keys =
      "min_validation_period: {batches: 100}\noptimizations: {aggregation_frequency: 4, mixed_precision: O0}\n";
  // Determined's older launcher form names the class too.
  auto trial = parse_experiment(
      "name: a\nentrypoint: python3 -m determined.launch.torch_distributed --trial model_def:MNistTrial\n" + keys +
          kSearcher,
      "exp.yaml");
  CHECK(trial.entrypoint == std::vector<std::string>{"python3", "-m", "determined.exec.harness", "model_def:MNistTrial",
                                                     "--min-validation-period=batches:100",
                                                     "--aggregation-frequency=4"});
  CHECK(trial.determined.mapped ==
        std::vector<std::string>{"entrypoint: python3 -m determined.launch.torch_distributed --trial "
                                 "model_def:MNistTrial -> python3 -m determined.exec.harness model_def:MNistTrial",
                                 "min_validation_period: {batches: 100} -> the trial validates every 100 batches",
                                 "optimizations.aggregation_frequency: 4 -> the optimizers step every 4 batches"});
  CHECK(ignored_determined_keys(trial) ==
        std::vector<std::string>{"optimizations.mixed_precision (Determined's Trial API option; dlx's harness "
                                 "aggregates gradients only)"});
  CHECK(trial_class_of(trial) == "model_def:MNistTrial");
  // The snapshot keeps the arguments; read again, nothing is added twice.
  CHECK(parse_experiment(to_yaml(trial), "experiment.yaml").entrypoint == trial.entrypoint);
  // A script's own loop: the keys mean nothing and are named as ignored; no class to look at.
  auto script = parse_experiment("name: a\nentrypoint: python3 train.py\n" + keys + kSearcher, "exp.yaml");
  CHECK(script.entrypoint == std::vector<std::string>{"python3 train.py"});
  CHECK(ignored_determined_keys(script).size() == 2);
  CHECK_FALSE(trial_class_of(script));
  // The launcher with a command, not a class, stays a command (the launcher runs it).
  CHECK(parse_experiment("name: a\nentrypoint: python3 -m determined.launch.torch_distributed python3 train.py\n" +
                             kSearcher,
                         "exp.yaml")
            .entrypoint_is_shell);
  // 0 is Determined's "none"; bad values are errors with the fix.
  CHECK(parse_experiment("name: a\nentrypoint: m:T\nmin_validation_period: {epochs: 0}\n" + kSearcher, "exp.yaml")
            .entrypoint.size() == 4);
  CHECK(error_of("name: a\nentrypoint: m:T\nmin_validation_period: {batches: 1, epochs: 2}\n" + kSearcher) ==
        "exp.yaml:3:24: min_validation_period: must give exactly one of batches, records, epochs (e.g. "
        "min_validation_period: {batches: 500})");
  CHECK(error_of("name: a\nentrypoint: m:T\noptimizations: {aggregation_frequency: 0}\n" + kSearcher) ==
        "exp.yaml:3:40: optimizations.aggregation_frequency: must be between 1 and 1048576, got 0 (batches whose "
        "gradients one optimizer step averages, e.g. 4)");
}

TEST_CASE("name: derived from the file name, or a safe directory name from free text", "[config][determined]") {
  auto derived = parse_experiment("entrypoint: x\n" + kSearcher, "/home/u/mnist const.yaml");
  CHECK(derived.name == "mnist-const");
  auto free_text = parse_experiment("name: MNIST (PyTorch), const!\nentrypoint: x\n" + kSearcher, "e.yaml");
  CHECK(free_text.name == "MNIST-PyTorch-const");
  CHECK(free_text.description == "MNIST (PyTorch), const!");
  CHECK(to_yaml(parse_experiment(to_yaml(free_text), "experiment.yaml")) == to_yaml(free_text));
  auto described = parse_experiment("name: a b\ndescription: kept\nentrypoint: x\n" + kSearcher, "e.yaml");
  CHECK(described.name == "a-b");
  CHECK(described.description == "kept");
  CHECK(error_of("entrypoint: x\n" + kSearcher, nullptr).empty());
  try {
    parse_experiment("entrypoint: x\n" + kSearcher, "...yaml");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "...yaml:1:1: name: is required but missing (add name: <experiment name> (the file's name gives none))");
  }
  CHECK(error_of("name: '!!!'\nentrypoint: x\n" + kSearcher) ==
        "exp.yaml:1:7: name: '!!!' has no letter or digit to name a directory with (use letters, digits, '.', '_' "
        "and '-' (it names the experiment's directory))");
}

TEST_CASE("every problem of a file in one report, sorted by line", "[config][determined]") {
  const std::string text = R"(name: many
entrypoint: model_def:Trial
hyperparameters:
  lr: {type: double, minval: 1, maxval: 0}
  layers: {type: int, minval: one, maxval: 4}
  ok: 3
searcher: {name: random, metric: loss, max_trials: 0}
resources: {nodes_per_trail: 2, gpus_per_node: 99}
checkpoint: {keep_latest: -1}
seeed: 3
max_restarts: many
)";
  try {
    parse_experiment(text, "many.yaml");
    FAIL("no error");
  } catch (const ConfigErrors& e) {
    std::vector<std::string> lines;
    for (const auto& problem : e.problems()) lines.emplace_back(problem.what());
    CHECK(lines == std::vector<std::string>{
                       "many.yaml:4:30: hyperparameters.lr.minval: minval 1 is greater than maxval 0 (swap them or "
                       "fix the range)",
                       "many.yaml:5:31: hyperparameters.layers.minval: expected an integer, got 'one' (write a whole "
                       "number such as 4)",
                       "many.yaml:7:52: searcher.max_trials: must be between 1 and 1000000, got 0 (give how many "
                       "trials to run, at least 1)",
                       "many.yaml:8:13: resources.nodes_per_trail: unknown key in resources (did you mean "
                       "'nodes_per_trial'?)",
                       "many.yaml:8:48: resources.gpus_per_node: must be between 0 and 64, got 99 (give the GPUs "
                       "each node of a trial uses)",
                       "many.yaml:9:27: checkpoint.keep_latest: must be between 0 and 1000, got -1 (give how many "
                       "checkpoints to keep)",
                       "many.yaml:10:1: seeed: unknown key at the top level (did you mean 'seed'?)",
                       "many.yaml:11:15: max_restarts: expected an integer, got 'many' (write a whole number such as "
                       "4)"});
    // what() is the same list, one per line; the parts are the first problem's.
    CHECK(std::string(e.what()) == fmt_join(lines));
    CHECK(e.where().line == 4);
    CHECK(e.key() == "hyperparameters.lr.minval");
    // The plugin's bounded form.
    CHECK(first_problems(e, 2) == lines[0] + "\n" + lines[1] +
                                      "\n... and 6 more problems (dlx validate many.yaml lists them all)");
    CHECK(first_problems(e, 20) == std::string(e.what()));
  }
}

TEST_CASE("did-you-mean offers only close keys of the same section", "[config][determined]") {
  const std::string head = "name: a\nentrypoint: x\n" + kSearcher;
  // A whole word swapped is no typo.
  CHECK(error_of(head + "resources: {memory_limit: 2}\n") ==
        "exp.yaml:4:13: resources.memory_limit: unknown key in resources (known keys in resources: "
        "nodes_per_trial, tasks_per_node, gpus_per_node, cpus_per_task, mem_per_node, time_limit, partition, "
        "sample_period, max_array_tasks, trials_per_gpu, gpus_per_trial, trials_per_task, shards_per_gpu, mps, "
        "agent_label, devices, max_slots, native_parallel, priority, shm_size, weight, slots_per_trial, "
        "resource_pool, is_single_node)");
  // Far from every key: no suggestion.
  CHECK_THAT(error_of(head + "gpu_count: 1\n"), Catch::Contains("gpu_count: unknown key at the top level (known keys"));
  CHECK_THAT(error_of(head + "slurmx: 1\n"), Catch::Contains("(did you mean 'slurm'?)"));
  CHECK_THAT(error_of(head + "time_metrics: 1\n"), Catch::Contains("time_metrics: unknown key at the top level (known"));
  // Determined's keys are suggested in their own section.
  CHECK_THAT(error_of(head + "checkpoint_storag: {}\n"), Catch::Contains("(did you mean 'checkpoint_storage'?)"));
  CHECK_THAT(error_of(head + "resources: {slots_per_trail: 1}\n"), Catch::Contains("(did you mean 'slots_per_trial'?)"));
  // A section's key at the top level is said to be misplaced.
  CHECK(error_of(head + "slots_per_trial: 2\n") ==
        "exp.yaml:4:1: slots_per_trial: is a key of resources, not of the top level (move it under resources:)");
  CHECK(error_of(head + "experiment_seed: 2\n") ==
        "exp.yaml:4:1: experiment_seed: is a key of reproducibility, not of the top level (move it under "
        "reproducibility:)");
  // Typos and abbreviations still get their suggestion.
  CHECK_THAT(error_of(head + "serach: {}\n"), Catch::Contains("did you mean 'searcher'?"));
  CHECK_THAT(error_of(head + "descrption: x\n"), Catch::Contains("did you mean 'description'?"));
}
