#pragma once
// One function per section of the experiment file; parse.cpp puts them together.
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
void parse_checkpoint(const MappingReader& section, CheckpointPolicy& into);
void parse_environment(const MappingReader& section,
                       std::vector<std::pair<std::string, std::string>>& into);

// Rules that span sections (grid needs finite axes, limits versus the trial count, ...).
void check_cross_field_rules(const Experiment& experiment, const MappingReader& root);

}  // namespace dlx::config::detail
