// SPDX-License-Identifier: Apache-2.0
#pragma once
// Naming rules shared by the parser, the plugin and the tools.
#include <string>
#include <string_view>

namespace dlx::config {

inline constexpr int kMaxTrials = 1'000'000;
inline constexpr std::size_t kMaxNameLength = 64;
inline constexpr std::size_t kMaxFileBytes = 1 << 20;
// Length limits checked before any syntax (docs/config-reference.md, "Limits"): a hyperparameter's
// full dotted name, an environment variable's name, the metric's name, and the string values of
// `resources` (mem_per_node, time_limit, partition). Real ones are a few dozen bytes.
inline constexpr std::size_t kMaxKeyLength = 255;
inline constexpr std::size_t kMaxValueLength = 255;

// "optim.lr" -> "DLX_HP_OPTIM_LR": upper-cased, '.' and '-' become '_'.
std::string hyperparameter_variable(std::string_view name);

// An experiment name that is safe as one directory component: letters, digits, '.', '_', '-',
// not starting with '.', at most kMaxNameLength. Returns "" when valid, else why not.
std::string experiment_name_problem(std::string_view name);

}  // namespace dlx::config
