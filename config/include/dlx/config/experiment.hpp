// SPDX-License-Identifier: Apache-2.0
#pragma once
// The experiment file's model: what `sbatch --dl-experiment=FILE` and `dlx validate` parse.
// Pure data, no Slurm. The parser (parse.hpp) fills it and reports every mistake as a ConfigError
// naming file, line, column, key, problem and fix; the snapshot writer (snapshot.hpp) turns it back
// into the frozen experiment.yaml that remote contexts and tools read.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dlx::config {

// A 1-based position in a source file (yaml-cpp's Marks are 0-based; the parser converts).
struct SourcePosition {
  std::string file;
  int line = 0;
  int column = 0;
};

enum class HyperparameterType { constant, integer, real, log, categorical };

struct Hyperparameter {
  std::string name;  // dotted for nested groups: "optim.lr"
  // The keys from the section down to this one ({"optim", "lr"}): the nesting that `name` alone
  // cannot tell, since a key may itself contain '.' (Determined allows "optim.lr: 0.1").
  std::vector<std::string> path;
  HyperparameterType type = HyperparameterType::constant;
  nlohmann::json value;              // constant: the value, any YAML value (null, list, mapping)
  double minval = 0, maxval = 0;     // integer, real, log (log: exponents of `base`)
  std::optional<int> count;          // grid points for integer/real/log
  double base = 10;                  // log
  std::vector<nlohmann::json> vals;  // categorical: any YAML values
  SourcePosition where;
};

enum class SearcherName { single, grid, random, async_halving, adaptive_asha, pbt };

// A training length in the searcher's units (Determined's max_length: {batches: N} ...). A bare
// number (Determined 0.38's unitless length, counted in the trainer's own steps) is batches.
struct Length {
  enum class Unit { batches, records, epochs };
  Unit unit = Unit::batches;
  std::int64_t value = 0;
};

// ASHA (async_halving and adaptive_asha), with Determined's names and defaults.
struct AshaOptions {
  double divisor = 4;     // keep the top 1/divisor of each rung; any number > 1 (Determined: 2.5, 3.0)
  int max_rungs = 5;      // adaptive_asha: max_rungs; async_halving: num_rungs (max_rungs accepted too)
  enum class Mode { aggressive, standard, conservative } mode = Mode::standard;  // adaptive_asha
  std::vector<int> bracket_rungs;  // adaptive_asha: explicit brackets' rung counts; empty: from mode
  bool stop_once = false;  // stopping variant: trials are stopped, never paused and promoted
};

struct PbtOptions {
  int population_size = 0;
  int num_rounds = 0;
  Length length_per_round;
  double truncate_fraction = 0.2;   // replace_function: {truncate_fraction: F}
  double resample_probability = 0;  // explore_function: {resample_probability: P,
  double perturb_factor = 0.2;      //                    perturb_factor: F}
};

// Where random, async_halving and adaptive_asha get new trials' hyperparameters: independent
// random draws, or the TPE model fitted to the results so far (Bergstra et al. 2011; inside ASHA
// this is BOHB-style search).
enum class SamplerName { random, tpe };

struct TpeOptions {
  int startup_trials = 10;  // random points until this many trials have a result at one length
  double gamma = 0.25;      // the best fraction of results that shapes the "good" density l(x)
  int candidates = 24;      // draws from l(x) scored by l(x)/g(x) for each new trial
};

struct SearcherConfig {
  SearcherName name = SearcherName::single;
  std::string metric;             // validation metric the searcher optimises
  bool smaller_is_better = true;
  int max_trials = 1;             // random and ASHA: how many trials; grid: an upper bound
  // The job array's throttle (`%N`): 0 is no limit. Omitted: Determined's default of 16 (PBT: the
  // population, which a round needs at once).
  int max_concurrent_trials = 16;
  std::optional<Length> max_length;
  AshaOptions asha;
  PbtOptions pbt;
  SamplerName sampler = SamplerName::random;  // random, async_halving, adaptive_asha
  TpeOptions tpe;                             // sampler: tpe
  SourcePosition where;           // of the searcher section, for errors found when planning
  // Determined keys that are accepted but change nothing in dlx, each "key (why)", for the one
  // warning line (source_trial_id, source_checkpoint_uuid).
  std::vector<std::string> ignored;
};

// Requests that become sbatch options unless the user gave the same option. Unset optionals are
// left to Slurm (or to the site defaults, merged in before this is used).
struct Resources {
  int nodes_per_trial = 1;
  int tasks_per_node = 1;
  std::optional<int> gpus_per_node;
  std::optional<int> cpus_per_task;
  std::optional<std::string> mem_per_node;  // Slurm's --mem syntax: 4096, 16G
  std::optional<std::string> time_limit;    // Slurm's --time syntax: 30, 2:00:00, 1-12
  std::optional<std::string> partition;
  // Seconds between two samples of the trial's CPU, memory and I/O by dlx-launch (0: none):
  // trials/<id>/system/ (dlx/record/system_series.hpp).
  double sample_period_s = 1.0;
  // At most this many array tasks: when the searcher has more tickets, task t runs tickets t,
  // t + N, t + 2N, ... one after another (searcher/trial_plan.hpp). Unset: one task per ticket.
  // The plugin sets it to the cluster's MaxArraySize when the tickets would not fit, and freezes it.
  std::optional<int> max_array_tasks;
  // Packing: trials one array task runs at once, each its own process with its own trial id,
  // record, checkpoints and logs (launcher/launch/task_slots.hpp). trials_per_gpu N (or
  // gpus_per_trial 1/N) shares each of the task's GPUs among N trials; trials_per_task N packs N
  // trials into a task whatever it holds (CPU trials). Unset: one trial at a time.
  std::optional<int> trials_per_gpu;
  std::optional<int> trials_per_task;
  // The cluster's gres/shard count per GPU (gres.conf; usually the site file's defaults). With it,
  // trials_per_gpu N shares GPUs through Slurm instead: each trial is an array task of its own
  // that asks for shards_per_gpu / N shards (--gres=shard:K), and Slurm places up to N on a GPU.
  std::optional<int> shards_per_gpu;
  // CUDA MPS for trials packed on a task's GPUs (trials_per_gpu, not shards): dlx-launch starts
  // the user's own MPS control daemon for the task and stops it after (launch/mps_daemon.hpp),
  // so that the trials' kernels run at once instead of in turns. Only where the site file allows
  // it (limits: {mps: true}; the plugin checks, check_site_allows below).
  bool mps = false;
};

// Trials one array task runs at once: trials_per_task, else trials_per_gpu x gpus_per_node
// (1 when the GPUs are shared through shards), else 1.
int packed_trials(const Resources& resources);
// Whether trials share GPUs as Slurm's shards (trials_per_gpu with shards_per_gpu).
bool shares_gpus_by_shards(const Resources& resources);
// The shards each trial asks for when it does: shards_per_gpu / trials_per_gpu.
int shards_per_trial(const Resources& resources);

// The `checkpoint` section: when to save and which checkpoints retention keeps.
struct CheckpointPolicy {
  std::optional<std::int64_t> period_batches;  // save every N batches
  std::optional<double> period_minutes;        // or every M minutes of training
  int keep_latest = 1;                         // newest checkpoints of each trial
  int keep_best = 1;                           // best by the searcher metric, per trial
  int keep_experiment_best = 0;                // best over the whole experiment
  bool async = true;                           // snapshot, then write in the background
};

// The `code` section: the copy of the trainer's source taken at submission, which every trial and
// every requeued attempt runs from (docs/config-reference.md, docs/file-format.md).
struct CodeConfig {
  bool snapshot = true;
  std::optional<std::string> dir;  // this directory instead of the submit directory's git work tree
  std::uint64_t max_size = 100'000'000;  // bytes copied at most (site default, experiment override)
  enum class RunFrom { node_local, shared } run_from = RunFrom::node_local;  // where trials run it
  // Bytes of the files a trainer writes in its node-local working directory kept in
  // <trial>/outputs/ per attempt (launch/trial_outputs.hpp); 0: none.
  std::uint64_t keep_outputs = 1'000'000'000;
};

// The `data` section: datasets that dlx-launch stages once per node into the user's node-local
// cache and hands to the trainer as DLX_DATA_DIR / DLX_DATA_DIRS (docs/config-reference.md).
// The cache limits come from the site file (limits: data:) and are frozen with the rest; an
// experiment may only lower them.
struct DataConfig {
  // Files, directories or archives, as written; sbatch resolves relative ones against the
  // experiment file's directory and freezes the absolute paths into the snapshot.
  std::vector<std::string> stage;
  // The node-local base directory (%n: node name, %u: user name); unset: the plugstack's
  // local_dir=, else $TMPDIR, else /tmp, on the node.
  std::optional<std::string> to;
  bool checksum = false;  // key the cache by the files' content instead of size + mtime
  std::uint64_t max_bytes = 0;   // one user's cache on one node; 0: no cap
  double high_watermark = 0.90;  // file-system use that starts an eviction before a copy
  double low_watermark = 0.80;   // the use eviction goes down to
};

// The container image trials run in (docs/containers.md): the experiment's `environment.image`
// (one reference, or Determined's {cpu: REF, cuda: REF}), `environment.force_pull_image` and the
// top-level `bind_mounts`; the site's `container:` (runtime, image_cache, default_image), frozen
// with the rest. No image anywhere: trials run on the bare node, as before.
struct ContainerConfig {
  std::optional<std::string> image;       // for every trial
  std::optional<std::string> image_cpu;   // Determined's {cpu:, cuda:}: by whether trials have GPUs
  std::optional<std::string> image_cuda;
  bool force_pull = false;  // fetch the reference again even when the cache holds it
  struct BindMount {
    std::string host_path;       // absolute, on every node
    std::string container_path;  // absolute; the host path when not given
    bool read_only = false;
    bool operator==(const BindMount&) const = default;
  };
  std::vector<BindMount> bind_mounts;
  // The site's: which runtime runs the image (apptainer, podman, enroot, crun, auto), where the
  // content-addressed image cache lives on shared storage, the image when an experiment names none.
  std::string runtime = "auto";
  std::optional<std::string> image_cache;
  std::optional<std::string> default_image;

  // The image for a trial with or without GPUs; nullopt: the bare node.
  std::optional<std::string> image_for(bool gpus) const;
};

inline constexpr const char* kContainerRuntimes[] = {"auto", "apptainer", "podman", "enroot", "crun"};

// What the parser made of Determined's keys, for the warning and `dlx convert-determined`.
struct DeterminedNotes {
  std::vector<std::string> mapped;   // "resources.slots_per_trial: 8 -> 2 nodes x 4 GPUs (4 tasks each)"
  std::vector<std::string> ignored;  // "bind_mounts (no containers: ...)"
  // resources.slots_per_trial when the layout was derived from it: a message about the GPUs
  // then names the key the user wrote, in Determined's meaning (GPUs, not processes).
  std::optional<int> slots_per_trial;
};

struct Experiment {
  std::string name;  // a safe directory name (derived from the file name or a free-text name)
  std::string description;
  std::vector<std::string> labels;
  std::vector<std::string> entrypoint;  // one string runs through /bin/sh -c; a list is exec'd
  bool entrypoint_is_shell = false;
  std::vector<Hyperparameter> hyperparameters;  // in file order
  SearcherConfig searcher;
  Resources resources;
  CheckpointPolicy checkpoint;
  std::vector<std::pair<std::string, std::string>> environment;  // extra variables for the trial
  int max_restarts = 5;  // crashes a trial may survive (preemptions do not count)
  CodeConfig code;
  DataConfig data;
  ContainerConfig container;
  std::uint64_t seed = 0;  // the snapshot always records one (chosen at submission if absent)
  bool seed_given = false;
  // Records in one epoch (Determined's records_per_epoch): turns lengths in epochs into records.
  std::optional<std::int64_t> records_per_epoch;
  std::string source_file;
  DeterminedNotes determined;
  // Lines for the user that are no error (at most one today: the Determined keys dlx ignores).
  // sbatch (the plugin) and `dlx validate` print them.
  std::vector<std::string> warnings;
};

const char* to_string(HyperparameterType type);
const char* to_string(SearcherName name);
const char* to_string(Length::Unit unit);
const char* to_string(AshaOptions::Mode mode);
const char* to_string(SamplerName name);
const char* to_string(CodeConfig::RunFrom where);

}  // namespace dlx::config
