#pragma once
// Naming rules shared by the parser, the plugin and the tools.
#include <string>
#include <string_view>

namespace dlx::config {

inline constexpr int kMaxTrials = 1'000'000;
inline constexpr std::size_t kMaxNameLength = 64;
inline constexpr std::size_t kMaxFileBytes = 1 << 20;

// "optim.lr" -> "DLX_HP_OPTIM_LR": upper-cased, '.' and '-' become '_'.
std::string hyperparameter_variable(std::string_view name);

// An experiment name that is safe as one directory component: letters, digits, '.', '_', '-',
// not starting with '.', at most kMaxNameLength. Returns "" when valid, else why not.
std::string experiment_name_problem(std::string_view name);

}  // namespace dlx::config
