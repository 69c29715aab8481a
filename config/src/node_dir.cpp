// SPDX-License-Identifier: Apache-2.0
#include "dlx/config/node_dir.hpp"

#include "dlx/config/display_text.hpp"

namespace dlx::config {

std::string node_dir_problem(std::string_view pattern) {
  if (pattern.empty()) return "is empty";
  if (pattern.front() != '/') return "is not an absolute path";
  if (printable(pattern) != pattern) return "holds a control character";
  if (pattern.find(':') != std::string_view::npos) return "holds a ':', which would split DLX_DATA_DIRS";
  for (std::size_t at = pattern.find('%'); at != std::string_view::npos; at = pattern.find('%', at + 2)) {
    if (at + 1 == pattern.size()) return "ends with a lone '%'";
    const char code = pattern[at + 1];
    if (code != 'n' && code != 'u' && code != '%') {
      return std::string("has the unknown placeholder %") + code + " (%n is the node's name, %u the user's, %% a '%')";
    }
  }
  return "";
}

}  // namespace dlx::config
