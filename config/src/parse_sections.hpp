// SPDX-License-Identifier: Apache-2.0
#pragma once
// One function per section of the experiment file; parse.cpp puts them together.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dlx/config/experiment.hpp"
#include "yaml_reader.hpp"

namespace dlx::config::detail {

std::vector<Hyperparameter> parse_hyperparameters(const MappingReader& section);
SearcherConfig parse_searcher(const MappingReader& section);
// `{batches|records|epochs: N}`, or a bare N (Determined 0.38's unitless length) in batches.
Length parse_length(const MappingReader& parent, const char* key);
// Determined's retired searcher names and pre-0.13 keys, refused with what replaces each.
void refuse_retired_searcher_name(const MappingReader& section);
void refuse_retired_searcher_keys(const MappingReader& section);
// `sampler` and `tpe` of the methods that draw new trials (takes_sampler); after max_trials.
bool takes_sampler(SearcherName name);
void parse_sampler(const MappingReader& section, SearcherConfig& into);
void parse_resources(const MappingReader& section, Resources& into);
const std::vector<std::string>& resource_keys();           // dlx's keys of `resources`
void read_resources(const MappingReader& section, Resources& into);  // without checking for unknown keys
void parse_checkpoint(const MappingReader& section, CheckpointPolicy& into);
void parse_environment(const MappingReader& section,
                       std::vector<std::pair<std::string, std::string>>& into);
// The `code` section (parse_code.cpp). A site's defaults may set only max_size and run_from.
enum class CodeKeys { experiment, site };
void parse_code(const MappingReader& section, CodeConfig& into, CodeKeys keys);
void emit_code(YAML::Emitter& out, const CodeConfig& code);
// The `data` section (parse_data.cpp). Site defaults may set `to` and `checksum`, the site's limits
// the cache's max_bytes and watermarks; an experiment everything, its limits checked against the
// site's (already in `into`) by check_data_limits.
// Whether a top-level `data:` is dlx's (a mapping with one of dlx's keys) rather than Determined's
// free-form data for its Trial API, which dlx ignores with a warning.
bool is_dlx_data(const YAML::Node& data);
enum class DataKeys { experiment, site_defaults, site_limits };
void parse_data(const MappingReader& section, DataConfig& into, DataKeys keys);
void check_data_limits(const MappingReader& section, const DataConfig& experiment, const DataConfig& site,
                       const std::string& site_file);
void emit_data(YAML::Emitter& out, const DataConfig& data);
// The container (parse_container.cpp): dlx's `container:` section (every key; a site's only
// runtime, image_cache and default_image), Determined's environment.image and top-level
// bind_mounts, and the snapshot's section.
enum class ContainerKeys { experiment, site };
void parse_container(const MappingReader& section, ContainerConfig& into, ContainerKeys keys);
void parse_image(const MappingReader& section, ContainerConfig& into);  // section.image
void parse_bind_mounts(const MappingReader& parent, const char* key, ContainerConfig& into);
void emit_container(YAML::Emitter& out, const ContainerConfig& container);
// One variable NAME=value for the trial, its name checked (length, syntax, not reserved); `at`
// and `path` place a problem. A later value of the same name replaces the earlier one.
void add_variable(const MappingReader& section, const YAML::Node& at, const std::string& path, const std::string& key,
                  const std::string& value, std::vector<std::pair<std::string, std::string>>& into);

// Determined's keys (parse_determined.cpp): the top-level ones dlx maps or ignores, and the
// whole translation of what a Determined file says beyond dlx's own schema.
const std::vector<std::string>& determined_top_keys();
void parse_determined_top(const MappingReader& root, Experiment& experiment);
// `resources` with Determined's keys besides dlx's; `gpus_per_node` is the site's figure (from the
// site defaults, or the file's slurm/pbs slots_per_node) that slots_per_trial is spread by.
void parse_experiment_resources(const MappingReader& section, Experiment& experiment,
                                std::optional<int> gpus_per_node);
// slurm.slots_per_node or pbs.slots_per_node: the GPUs of one node Determined's launcher was told.
std::optional<int> launcher_slots_per_node(const MappingReader& root);
// `environment`: dlx's NAME: value mapping, or Determined's (image, environment_variables, ...).
void parse_experiment_environment(const MappingReader& section, Experiment& experiment);
// Determined's {batches|records|epochs: N} under `key` (min_checkpoint_period,
// min_validation_period): nullopt for N = 0, Determined's "none".
struct DeterminedPeriod {
  std::string unit;
  std::int64_t amount = 0;
};
std::optional<DeterminedPeriod> read_determined_period(const MappingReader& root, const char* key);
// Determined's min_checkpoint_period, after hyperparameters and records_per_epoch are known.
void parse_min_checkpoint_period(const MappingReader& root, Experiment& experiment);
// Determined's Trial API (parse_trial_api.cpp). The harness that runs a PyTorchTrial, which
// dlx-launch's PYTHONPATH makes importable as `determined`.
inline constexpr const char* kTrialHarness = "determined.exec.harness";
// "model_def:MNistTrial": a Determined Trial class, not a command.
bool is_trial_class(const std::string& entrypoint);
// The class a string entrypoint names: model_def:MNistTrial, or Determined's
// `python3 -m determined.launch.torch_distributed [--trust] --trial model_def:MNistTrial`.
std::optional<std::string> trial_class_of(const std::string& entrypoint);
// Whether the entrypoint (as parsed) runs the harness.
bool runs_trial_harness(const Experiment& experiment);
// A Determined top-level key the harness follows (min_validation_period, optimizations), made
// into its arguments; false when the key is not one or the entrypoint is no Trial class.
bool map_trial_option(const MappingReader& root, Experiment& experiment, std::string_view key);
// A safe experiment (directory) name from free text, or "" when nothing usable remains.
std::string safe_experiment_name(std::string_view text);

// Rules that span sections (grid needs finite axes, limits versus the trial count, ...).
void check_cross_field_rules(const Experiment& experiment, const MappingReader& root);

}  // namespace dlx::config::detail
