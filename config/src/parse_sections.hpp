#pragma once
// One function per section of the experiment file; parse.cpp puts them together.
#include <utility>
#include <vector>

#include "dlx/config/experiment.hpp"
#include "yaml_reader.hpp"

namespace dlx::config::detail {

std::vector<Hyperparameter> parse_hyperparameters(const MappingReader& section);
SearcherConfig parse_searcher(const MappingReader& section);
Length parse_length(const MappingReader& parent, const char* key);
// `sampler` and `tpe` of the methods that draw new trials (takes_sampler); after max_trials.
bool takes_sampler(SearcherName name);
void parse_sampler(const MappingReader& section, SearcherConfig& into);
void parse_resources(const MappingReader& section, Resources& into);
void parse_checkpoint(const MappingReader& section, CheckpointPolicy& into);
void parse_environment(const MappingReader& section,
                       std::vector<std::pair<std::string, std::string>>& into);
// The `code` section (parse_code.cpp). A site's defaults may set only max_size and run_from.
enum class CodeKeys { experiment, site };
void parse_code(const MappingReader& section, CodeConfig& into, CodeKeys keys);
void emit_code(YAML::Emitter& out, const CodeConfig& code);

// Rules that span sections (grid needs finite axes, limits versus the trial count, ...).
void check_cross_field_rules(const Experiment& experiment, const MappingReader& root);

}  // namespace dlx::config::detail
