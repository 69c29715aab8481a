// SPDX-License-Identifier: Apache-2.0
#include "dlx/config/names.hpp"

#include <cctype>

#include <fmt/format.h>

namespace dlx::config {

std::string hyperparameter_variable(std::string_view name) {
  std::string variable = "DLX_HP_";
  for (char c : name) {
    if (c == '.' || c == '-') {
      variable += '_';
    } else {
      variable += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
  }
  return variable;
}

std::string experiment_name_problem(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxNameLength) {
    return fmt::format("is {} characters long, more than the limit of {}", name.size(), kMaxNameLength);
  }
  if (name.front() == '.') return "starts with '.' (it could name a hidden or parent directory)";
  for (unsigned char c : name) {
    if (!(std::isalnum(c) || c == '.' || c == '_' || c == '-')) {
      if (c == '/') return "contains '/' (it names one directory, not a path)";
      if (std::iscntrl(c)) return "contains a control character";
      return fmt::format("contains '{}'", static_cast<char>(c));
    }
  }
  return "";
}

}  // namespace dlx::config
