// SPDX-License-Identifier: Apache-2.0
#pragma once
// The small syntaxes of experiment-file values, each checked by hand in one pass over the text.
// Not std::regex: libstdc++'s matcher recurses once per character, so a 100,000-character value
// overflowed the stack of `dlx validate`, of sbatch (the plugin) and of slurmstepd. These run in
// all three. Callers check the length first (the limits in names.hpp) so that a message can say
// that the value is too long rather than that it is malformed.
#include <string_view>

namespace dlx::config {

// Slurm's --mem: digits with an optional unit, \d+[KMGT]?  (4096, 64G)
bool is_slurm_memory(std::string_view text);

// Slurm's --time as dlx accepts it: (\d+-)?\d+(:\d+){0,2}  (30, 2:00:00, 1-12, 1-12:00:00)
bool is_slurm_time(std::string_view text);

// A partition name: [A-Za-z0-9_.-]+
bool is_partition_name(std::string_view text);

// An environment variable name: [A-Za-z_][A-Za-z0-9_]*
bool is_variable_name(std::string_view text);

// One key of the hyperparameters section (a name or a group): [A-Za-z_][A-Za-z0-9_.-]*
// ('.' as Determined allows it: "optim.lr: 0.1" is one flat name)
bool is_hyperparameter_key(std::string_view text);

}  // namespace dlx::config
