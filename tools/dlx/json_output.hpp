// SPDX-License-Identifier: Apache-2.0
#pragma once
// The text of a JSON document that dlx prints (--json). Strings read from files (a checkpoint's
// experiment name, state values and tensor names, a path) may hold bytes that are not UTF-8, which
// nlohmann's dump() refuses with an exception (type_error 316) by default: here each such byte
// becomes U+FFFD, so the output is always one valid JSON document, and the rest of it is kept.
#include <string>

namespace dlx::cli {

template <typename Json>
std::string json_text(const Json& value, int indent = 2) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace dlx::cli
