// SPDX-License-Identifier: Apache-2.0
#pragma once
// What every YAML file dlx reads goes through before its schema: size, emptiness, NUL bytes,
// UTF-8, YAML syntax, duplicate keys, depth and alias expansion, a mapping at the top.
#include <filesystem>
#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>

namespace dlx::config::detail {

// Reads a config file (at most kMaxFileBytes); ConfigError naming the file when it can't.
std::string read_config_file(const std::filesystem::path& path, const char* what);

// The checked document: a YAML mapping. Throws ConfigError with file, line and column.
YAML::Node load_document(std::string_view text, const std::string& file_label);

}  // namespace dlx::config::detail
