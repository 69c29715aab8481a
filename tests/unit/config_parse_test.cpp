// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <string>

#include "dlx/config/names.hpp"
#include "dlx/config/parse.hpp"

using dlx::config::ConfigError;
using dlx::config::HyperparameterType;
using dlx::config::parse_experiment;

namespace {

const std::string kValid = R"(name: logreg-grid
entrypoint: dlx-example-logreg
seed: 7
hyperparameters:
  learning_rate: {type: log, minval: -2, maxval: 0, count: 2}
  batch_size: {type: categorical, vals: [16, 64]}
  epochs: 5
  optim:
    momentum: {type: double, minval: 0.5, maxval: 0.9, count: 3}
    name: "sgd"
searcher:
  name: grid
  metric: accuracy
  smaller_is_better: false
  max_concurrent_trials: 2
resources:
  nodes_per_trial: 2
  tasks_per_node: 1
)";

// The message of the ConfigError that parsing `text` throws ("" when it parses).
std::string error_of_label(const std::string& text, const std::string& label) {
  try {
    parse_experiment(text, label);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string error_of(const std::string& text) {
  try {
    parse_experiment(text, "exp.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a complete experiment parses with every section", "[config]") {
  auto experiment = parse_experiment(kValid, "exp.yaml");
  CHECK(experiment.name == "logreg-grid");
  CHECK(experiment.entrypoint_is_shell);
  CHECK(experiment.entrypoint == std::vector<std::string>{"dlx-example-logreg"});
  CHECK(experiment.seed == 7);
  REQUIRE(experiment.hyperparameters.size() == 5);
  CHECK(experiment.hyperparameters[0].name == "learning_rate");
  CHECK(experiment.hyperparameters[0].type == HyperparameterType::log);
  CHECK(experiment.hyperparameters[0].base == 10);
  CHECK(experiment.hyperparameters[1].vals.size() == 2);
  CHECK(experiment.hyperparameters[2].value == 5);
  CHECK(experiment.hyperparameters[3].name == "optim.momentum");
  CHECK(experiment.hyperparameters[4].name == "optim.name");
  CHECK(experiment.hyperparameters[4].value == "sgd");
  CHECK(experiment.searcher.smaller_is_better == false);
  CHECK(experiment.searcher.max_concurrent_trials == 2);
  CHECK(experiment.resources.nodes_per_trial == 2);
}

TEST_CASE("an entrypoint list is exec'd, not run through a shell", "[config]") {
  auto experiment = parse_experiment(
      "name: a\nentrypoint: [python3, train.py, --fast]\nsearcher: {name: single, metric: loss}\n", "e.yaml");
  CHECK_FALSE(experiment.entrypoint_is_shell);
  CHECK(experiment.entrypoint.size() == 3);
  CHECK(experiment.searcher.max_trials == 0);
}

TEST_CASE("quoted scalars stay strings, plain ones become numbers and booleans", "[config]") {
  auto experiment = parse_experiment(
      "name: a\nentrypoint: x\nhyperparameters: {a: '5', b: 5, c: 2.5, d: true}\n"
      "searcher: {name: single, metric: loss}\n",
      "e.yaml");
  CHECK(experiment.hyperparameters[0].value.is_string());
  CHECK(experiment.hyperparameters[1].value.is_number_integer());
  CHECK(experiment.hyperparameters[2].value.is_number_float());
  CHECK(experiment.hyperparameters[3].value.is_boolean());
}

TEST_CASE("every mistake names file, line, column, key, problem and fix", "[config]") {
  struct Case {
    std::string text;
    std::string expected;  // a substring of the message
  };
  const std::string base = "entrypoint: x\nsearcher: {name: grid, metric: loss}\n";
  auto [text, expected] = GENERATE_COPY(values<Case>({
      {"name: a\nentrypoint: [x\n", "exp.yaml:3:1: YAML syntax error: end of sequence flow not found"},
      {"name: a\n" + base + "resources: {nodes_pertrial: 2}\n",
       "exp.yaml:4:13: resources.nodes_pertrial: unknown key in resources (did you mean 'nodes_per_trial'?)"},
      {"name: a\n" + base + "serach: {}\n", "did you mean 'searcher'?"},
      {"name: a\nname: b\n" + base, "exp.yaml:2:1: name: duplicate key"},
      {"name: ../etc\n" + base, "exp.yaml:1:7: name: '../etc' starts with '.'"},
      {"name: a/b\n" + base, "name: 'a/b' contains '/'"},
      {"name: a\n" + base + "resources: {nodes_per_trial: 0}\n",
       "resources.nodes_per_trial: must be between 1 and 100000, got 0"},
      {"name: a\n" + base + "resources: {tasks_per_node: two}\n",
       "resources.tasks_per_node: expected an integer, got 'two' (write a whole number such as 4)"},
      {"name: a\n" + base + "hyperparameters: {lr: {type: double, minval: 1, maxval: 0, count: 2}}\n",
       "hyperparameters.lr.minval: minval 1 is greater than maxval 0"},
      {"name: a\n" + base + "hyperparameters: {lr: {type: double, minval: 0, maxval: 1}}\n",
       "hyperparameters.lr: a double hyperparameter needs count for the grid searcher (add count: N"},
      {"name: a\n" + base + "hyperparameters: {lr: {type: log, minval: 0, maxval: 1, base: 1, count: 2}}\n",
       "hyperparameters.lr.base: must be > 0 and != 1, got 1"},
      {"name: a\n" + base + "hyperparameters: {o: {type: categorical, vals: []}}\n",
       "hyperparameters.o.vals: must be a non-empty list"},
      {"name: a\n" + base + "hyperparameters: {o: {type: categorial, vals: [1]}}\n",
       "unknown hyperparameter type 'categorial' (did you mean 'categorical'?)"},
      {"name: a\n" + base + "hyperparameters: {o: {type: int, minval: 1, maxval: 3, count: 0}}\n",
       "hyperparameters.o.count: must be between 1 and 1000000, got 0"},
      {"name: a\n" + base + "hyperparameters: {a-b: 1, a_b: 2}\n", "maps to the same variable DLX_HP_A_B"},
      {"name: a\nentrypoint: x\nsearcher: {name: random, metric: loss}\n",
       "searcher.max_trials: is required but missing (the random searcher needs max_trials: N)"},
      {"name: a\nentrypoint: x\nsearcher: {name: rnd, metric: loss}\n", "exp.yaml:3:18: searcher.name: unknown value 'rnd' (did you mean"},
      {"name: a\nentrypoint: x\nsearcher: {name: single}\n", "searcher.metric: is required but missing"},
      {"name: a\nentrypoint: x\nsearcher: {name: single, metric: m, max_trials: 0}\n",
       "searcher.max_trials: must be between 1 and 1000000, got 0"},
      {"name: a\nentrypoint: []\nsearcher: {name: single, metric: m}\n",
       "entrypoint: must be a non-empty command string or list"},
      // torchrun would start the ranks a second time: the fix is the script under dlx-launch.
      {"name: a\nentrypoint: [torchrun, --nproc_per_node=4, --nnodes, '2', train.py, --lr, '0.1']\n"
       "searcher: {name: single, metric: m}\n",
       "exp.yaml:2:13: entrypoint: torchrun starts the ranks itself, but dlx-launch already starts one per Slurm "
       "task and gives it RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT (run the script itself, "
       "entrypoint: [python3, train.py, --lr, 0.1], with resources: {tasks_per_node: 4, nodes_per_trial: 2} "
       "for --nproc_per_node=4; dlx-launch starts each process and sets what torchrun would (docs/sdk.md))"},
      {"name: a\nentrypoint: OMP_NUM_THREADS=2 /usr/bin/python3 -m torch.distributed.run --nproc-per-node 2 main.py\n"
       "searcher: {name: single, metric: m}\n",
       "entrypoint: python -m torch.distributed.run starts the ranks itself, but dlx-launch already starts one per "
       "Slurm task and gives it RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT (run the script itself, "
       "entrypoint: [python3, main.py], with resources: {tasks_per_node: 2} for --nproc_per_node=2;"},
      {"name: a\nentrypoint: torchrun --standalone -m mypackage.train\nsearcher: {name: single, metric: m}\n",
       "(run the script itself, entrypoint: [python3, train.py], with resources: {tasks_per_node: N} for "
       "--nproc_per_node=N;"},
      {"name: a\nentrypoint: x\nsearcher: {name: single, metric: m, smaller_is_better: maybe}\n",
       "searcher.smaller_is_better: expected true or false, got 'maybe'"},
      {"- a\n- b\n", "the file must be a mapping"},
      // the complete schema
      {"name: a\nentrypoint: x\nsearcher: {name: grid, metric: m, divisor: 4}\n",
       "searcher.divisor: is not an option of the grid searcher (it belongs to async_halving and adaptive_asha"},
      {"name: a\nentrypoint: x\nsearcher: {name: async_halving, metric: m, max_trials: 8}\n",
       "searcher.max_length: is required but missing (ASHA needs the full training length"},
      {"name: a\nentrypoint: x\nsearcher: {name: async_halving, metric: m, max_trials: 8, max_length: {steps: 9}}\n",
       "searcher.max_length.steps: unknown key in searcher.max_length"},
      {"name: a\nentrypoint: x\nsearcher: {name: async_halving, metric: m, max_trials: 8, max_length: {batches: 9, epochs: 1}}\n",
       "searcher.max_length: must give exactly one of batches, records, epochs"},
      {"name: a\nentrypoint: x\nsearcher: {name: adaptive_asha, metric: m, max_trials: 8, max_length: {epochs: 3}, mode: agressive}\n",
       "searcher.mode: unknown value 'agressive' (did you mean 'aggressive'?)"},
      {"name: a\nentrypoint: x\nsearcher: {name: async_halving, metric: m, max_trials: 8, max_length: {epochs: 3}, divisor: 1}\n",
       "searcher.divisor: must be a number > 1, got 1"},
      {"name: a\nentrypoint: x\nsearcher: {name: pbt, metric: m, population_size: 4, num_rounds: 2}\n",
       "searcher.length_per_round: is required but missing"},
      {"name: a\nentrypoint: x\nsearcher: {name: pbt, metric: m, population_size: 4, num_rounds: 2, length_per_round: {batches: 10}, replace_function: {truncate_fraction: 0.9}}\n",
       "searcher.replace_function.truncate_fraction: must be > 0 and <= 0.5, got 0.9"},
      // the sampler: only where new trials are drawn, TPE settings only with sampler: tpe
      {"name: a\nentrypoint: x\nsearcher: {name: grid, metric: m, sampler: tpe}\n",
       "exp.yaml:3:35: searcher.sampler: is not an option of the grid searcher (it belongs to random, "
       "async_halving and adaptive_asha; remove it)"},
      {"name: a\nentrypoint: x\nsearcher: {name: pbt, metric: m, population_size: 4, num_rounds: 2, "
       "length_per_round: {batches: 10}, tpe: {gamma: 0.2}}\n",
       "searcher.tpe: is not an option of the pbt searcher (it belongs to random, async_halving and adaptive_asha"},
      {"name: a\nentrypoint: x\nsearcher: {name: single, metric: m, sampler: random}\n",
       "searcher.sampler: is not an option of the single searcher"},
      {"name: a\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 20, samplr: tpe}\n",
       "searcher.samplr: unknown key in searcher (did you mean 'sampler'?)"},
      {"name: a\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 20, sampler: tp}\n",
       "exp.yaml:3:62: searcher.sampler: unknown value 'tp' (did you mean 'tpe'?)"},
      {"name: a\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 20, sampler: bayesian}\n",
       "searcher.sampler: unknown value 'bayesian' (use one of random, tpe)"},
      {"name: a\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 20, tpe: {gamma: 0.2}}\n",
       "exp.yaml:3:58: searcher.tpe: is set but the sampler is random (add sampler: tpe, or remove tpe)"},
      {"name: a\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 20, sampler: tpe, tpe: 3}\n",
       "searcher.tpe: expected a mapping, got a scalar"},
      {"name: a\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 20, sampler: tpe, tpe: {gama: 0.2}}\n",
       "searcher.tpe.gama: unknown key in searcher.tpe (did you mean 'gamma'?)"},
      {"name: a\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 20, sampler: tpe, tpe: {gamma: 0.7}}\n",
       "searcher.tpe.gamma: must be > 0 and <= 0.5, got 0.7 (the best fraction of results that counts as good, "
       "e.g. gamma: 0.25)"},
      {"name: a\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 20, sampler: tpe, tpe: {gamma: 0}}\n",
       "searcher.tpe.gamma: must be > 0 and <= 0.5, got 0"},
      {"name: a\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 20, sampler: tpe, tpe: {gamma: most}}\n",
       "searcher.tpe.gamma: expected a number, got 'most'"},
      {"name: a\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 20, sampler: tpe, tpe: {startup_trials: 1}}\n",
       "searcher.tpe.startup_trials: must be between 2 and 1000000, got 1 (TPE needs at least 2 results to tell "
       "good from bad"},
      {"name: a\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 20, sampler: tpe, tpe: {candidates: 0}}\n",
       "searcher.tpe.candidates: must be between 1 and 10000, got 0 (draws scored per new trial"},
      {"name: a\nentrypoint: x\nsearcher: {name: async_halving, metric: m, max_trials: 16, max_length: {epochs: 9}, "
       "sampler: tpe, tpe: {startup_trials: 16}}\n",
       "searcher.tpe.startup_trials: is 16, not fewer than max_trials (16): every trial would be a random point "
       "(lower tpe.startup_trials below max_trials, or use sampler: random)"},
      {"name: a\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 8, sampler: tpe}\n",
       "exp.yaml:3:61: searcher.tpe.startup_trials: is 10 (the default), not fewer than max_trials (8)"},
      {"name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\nresources: {mem_per_node: 4 GB}\n",
       "resources.mem_per_node: '4 GB' is not valid (use Slurm's --mem syntax"},
      {"name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\nresources: {time_limit: 1h}\n",
       "resources.time_limit: '1h' is not valid"},
      {"name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\nresources: {gpus_per_node: -1}\n",
       "resources.gpus_per_node: must be between 0 and 64, got -1"},
      {"name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\nresources: {sample_period: 0.05}\n",
       "exp.yaml:4:28: resources.sample_period: must be 0 or between 0.1 and 3600 seconds, got 0.05 (give the seconds "
       "between two samples of the trial's CPU, memory and I/O (0: none))"},
      {"name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\ncheckpoint: {period: {minutes: -5}}\n",
       "checkpoint.period.minutes: must be > 0, got -5"},
      {"name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\ncheckpoint: {period: {batches: 0}}\n",
       "checkpoint.period.batches: must be between 1 and"},
      {"name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\ncheckpoint: {keep_latest: 0, keep_best: 0}\n",
       "checkpoint: keep_latest and keep_best are both 0"},
      {"name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\nenvironment: {DLX_TRIAL_ID: 3}\n",
       "environment.DLX_TRIAL_ID: is reserved"},
      {"name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\nenvironment: {NCCL: [a]}\n",
       "environment.NCCL: must be a scalar value"},
      {"name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\nmax_restarts: -1\n",
       "max_restarts: must be between 0 and 1000, got -1"},
      {"name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\nseed: -3\n", "seed: must be between 0 and"},
      {"name: \"a\\tb\"\nentrypoint: x\nsearcher: {name: single, metric: m}\n", "contains a control character"},
      {"name: " + std::string(65, 'a') + "\nentrypoint: x\nsearcher: {name: single, metric: m}\n",
       "is 65 characters long, more than the limit of 64"},
      {"name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\n# caf\xe9\n",
       "exp.yaml:4:6: the file is not valid UTF-8 (byte 0xe9)"},
      {"name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\n# \xc0\xaf overlong\n",
       "the file is not valid UTF-8 (byte 0xc0)"},
      {"   \n", "exp.yaml: the file is empty"},
      {std::string("name: a\0b\n", 10), "exp.yaml:1:8: the file contains a NUL byte"},
  }));
  INFO(text);
  CHECK_THAT(error_of(text), Catch::Contains(expected));
}

TEST_CASE("without name, the file's name names the experiment", "[config]") {
  // It was an error before issue 20 ("name: is required but missing"); Determined lets name out.
  CHECK(parse_experiment("entrypoint: x\nsearcher: {name: grid, metric: loss}\n", "exp.yaml").name == "exp");
  CHECK_THAT(error_of_label("entrypoint: x\nsearcher: {name: grid, metric: loss}\n", "...yaml"),
             Catch::Contains("...yaml:1:1: name: is required but missing (add name: <experiment name>"));
}

TEST_CASE("alias bombs and deep nesting are rejected quickly", "[config]") {
  std::string bomb = "name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\n";
  bomb += "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level < 9; ++level) {
    bomb += "l" + std::to_string(level) + ": &l" + std::to_string(level) + " [";
    for (int k = 0; k < 10; ++k) bomb += (k ? ", *l" : "*l") + std::to_string(level - 1);
    bomb += "]\n";
  }
  CHECK_THAT(error_of(bomb), Catch::Contains("expands to more than"));

  std::string deep = "name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\nx: ";
  deep += std::string(200, '[') + std::string(200, ']') + "\n";
  CHECK_THAT(error_of(deep), Catch::Contains("nested more than 32 levels"));
}

TEST_CASE("a second YAML document is an error, not silently dropped", "[config]") {
  const std::string one = "name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\n";
  CHECK(error_of(one + "---\nname: b\n") ==
        "exp.yaml:5:1: a second YAML document starts here (after ---): dlx reads one document per file and "
        "would ignore it (remove the --- line to merge the two, or put each experiment in a file of its own)");
  // A leading ---, an end marker and a trailing empty document are plain YAML, not a second experiment.
  CHECK(error_of("---\n" + one) == "");
  CHECK(error_of(one + "...\n") == "");
  CHECK(error_of(one + "---\n") == "");
  CHECK(parse_experiment("---\n" + one + "---\n", "exp.yaml").name == "a");
  // A document after `...` needs no `---`; empty documents between do not hide a later one.
  CHECK_THAT(error_of(one + "...\nname: b\n"), Catch::StartsWith("exp.yaml:5:1: a second YAML document"));
  CHECK_THAT(error_of(one + "---\n---\n---\nname: b\n"), Catch::StartsWith("exp.yaml:7:1: a second YAML document"));
  // A stray flow end at the top (found by the fuzzer: yaml-cpp's LoadAll returns empty documents
  // for it forever) ends with an error, not a hang.
  CHECK(error_of(", x: 4}\nname: a\n---\n}\n") == "exp.yaml:1:1: the file must be a mapping of keys to values "
                                                       "(start with name: <experiment name>)");
  CHECK_THAT(error_of(one + "---\n}\n---\n}\n"), Catch::Contains("YAML syntax error"));
}

TEST_CASE("an oversized file is rejected before YAML parsing", "[config]") {
  std::string big = "name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\n";
  big += "# " + std::string(std::size_t{1} << 20, 'x') + "\n";
  CHECK_THAT(error_of(big), Catch::Contains("over the 1 MiB limit"));
}

TEST_CASE("the complete schema parses", "[config]") {
  auto experiment = parse_experiment(R"(name: full
description: every section
entrypoint: python3 train.py
seed: 3
max_restarts: 2
environment: {NCCL_DEBUG: WARN, OMP_NUM_THREADS: 4}
hyperparameters: {lr: {type: log, minval: -4, maxval: -1}}
searcher:
  name: adaptive_asha
  metric: loss
  max_trials: 64
  max_length: {epochs: 27}
  divisor: 3
  max_rungs: 4
  mode: aggressive
  stop_once: true
resources: {nodes_per_trial: 2, tasks_per_node: 4, gpus_per_node: 4, cpus_per_task: 8, mem_per_node: 256G,
            time_limit: "1-12:00:00", partition: gpu, sample_period: 5}
checkpoint: {period: {minutes: 15}, keep_latest: 2, keep_best: 1, keep_experiment_best: 3, async: false}
)", "full.yaml");
  CHECK(experiment.description == "every section");
  CHECK(experiment.max_restarts == 2);
  REQUIRE(experiment.environment.size() == 2);
  CHECK(experiment.environment[1] == std::pair<std::string, std::string>{"OMP_NUM_THREADS", "4"});
  CHECK(experiment.searcher.name == dlx::config::SearcherName::adaptive_asha);
  CHECK(experiment.searcher.max_length->unit == dlx::config::Length::Unit::epochs);
  CHECK(experiment.searcher.max_length->value == 27);
  CHECK(experiment.searcher.asha.divisor == 3);
  CHECK(experiment.searcher.asha.mode == dlx::config::AshaOptions::Mode::aggressive);
  CHECK(experiment.searcher.asha.stop_once);
  CHECK(experiment.resources.gpus_per_node == 4);
  CHECK(experiment.resources.mem_per_node == "256G");
  CHECK(experiment.resources.time_limit == "1-12:00:00");
  CHECK(experiment.resources.partition == "gpu");
  CHECK(experiment.resources.sample_period_s == 5.0);
  CHECK(experiment.checkpoint.period_minutes == 15.0);
  CHECK(experiment.checkpoint.keep_experiment_best == 3);
  CHECK_FALSE(experiment.checkpoint.async);

  auto pbt = parse_experiment(
      "name: p\nentrypoint: x\nsearcher: {name: pbt, metric: m, population_size: 8, num_rounds: 3, "
      "length_per_round: {batches: 100}, replace_function: {truncate_fraction: 0.25}, "
      "explore_function: {resample_probability: 0.2, perturb_factor: 0.1}}\n",
      "p.yaml");
  CHECK(pbt.searcher.pbt.population_size == 8);
  CHECK(pbt.searcher.pbt.truncate_fraction == 0.25);
  CHECK(pbt.searcher.pbt.perturb_factor == 0.1);
}

TEST_CASE("the sampler: random by default, tpe with its settings under random and ASHA", "[config][sampler]") {
  using dlx::config::SamplerName;
  auto plain = parse_experiment("name: r\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 4}\n", "r.yaml");
  CHECK(plain.searcher.sampler == SamplerName::random);

  auto defaults = parse_experiment(
      "name: t\nentrypoint: x\nsearcher: {name: async_halving, metric: m, max_trials: 64, "
      "max_length: {epochs: 9}, sampler: tpe}\n",
      "t.yaml");
  CHECK(defaults.searcher.sampler == SamplerName::tpe);
  CHECK(defaults.searcher.tpe.startup_trials == 10);
  CHECK(defaults.searcher.tpe.gamma == 0.25);
  CHECK(defaults.searcher.tpe.candidates == 24);

  auto tuned = parse_experiment(
      "name: t\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 40, sampler: tpe, "
      "tpe: {startup_trials: 5, gamma: 0.1, candidates: 64}}\n",
      "t.yaml");
  CHECK(tuned.searcher.tpe.startup_trials == 5);
  CHECK(tuned.searcher.tpe.gamma == 0.1);
  CHECK(tuned.searcher.tpe.candidates == 64);

  auto adaptive = parse_experiment(
      "name: t\nentrypoint: x\nsearcher: {name: adaptive_asha, metric: m, max_trials: 40, "
      "max_length: {epochs: 9}, sampler: random}\n",
      "t.yaml");
  CHECK(adaptive.searcher.sampler == SamplerName::random);
}

TEST_CASE("hyperparameter variables upper-case and replace . and -", "[config]") {
  CHECK(dlx::config::hyperparameter_variable("optim.lr") == "DLX_HP_OPTIM_LR");
  CHECK(dlx::config::hyperparameter_variable("drop-out") == "DLX_HP_DROP_OUT");
}

TEST_CASE("a missing file is reported with its path", "[config]") {
  try {
    dlx::config::parse_experiment_file("/nonexistent/exp.yaml");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::StartsWith("/nonexistent/exp.yaml: cannot read the experiment file"));
  }
}
