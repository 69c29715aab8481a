// SPDX-License-Identifier: Apache-2.0
#include "slurm_facts.hpp"

#include <sstream>

namespace dlx::doctor {

namespace {

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  const auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

// Lines of Key=Value words, each a record when it has `name_key`.
std::vector<std::map<std::string, std::string>> parse_records(const std::string& report, const char* name_key) {
  std::vector<std::map<std::string, std::string>> records;
  std::istringstream lines(report);
  std::string line;
  while (std::getline(lines, line)) {
    std::map<std::string, std::string> record;
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      const auto equals = word.find('=');
      if (equals != std::string::npos) record.emplace(word.substr(0, equals), word.substr(equals + 1));
    }
    if (record.count(name_key)) records.push_back(std::move(record));
  }
  return records;
}

}  // namespace

std::map<std::string, std::string> parse_scontrol_config(const std::string& report) {
  std::map<std::string, std::string> config;
  std::istringstream lines(report);
  std::string line;
  while (std::getline(lines, line)) {
    const auto equals = line.find(" = ");
    if (equals == std::string::npos) continue;  // headers ("Configuration data as of ...")
    const std::string key = trim(line.substr(0, equals));
    if (key.empty() || key.find(' ') != std::string::npos) continue;
    config.emplace(key, trim(line.substr(equals + 3)));
  }
  return config;
}

std::vector<Partition> parse_partitions(const std::string& report) { return parse_records(report, "PartitionName"); }

std::vector<Node> parse_nodes(const std::string& report) { return parse_records(report, "NodeName"); }

std::optional<PluginLine> find_plugin_line(const std::string& plugstack_text) {
  std::istringstream lines(plugstack_text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    std::istringstream words(line);
    PluginLine plugin;
    plugin.line_number = number;
    if (!(words >> plugin.control) || plugin.control.front() == '#') continue;
    if (!(words >> plugin.plugin_path)) continue;
    const auto slash = plugin.plugin_path.find_last_of('/');
    const std::string file = slash == std::string::npos ? plugin.plugin_path : plugin.plugin_path.substr(slash + 1);
    if (file != "dlx_spank.so") continue;
    std::string word;
    while (words >> word && word.front() != '#') plugin.arguments.push_back(word);
    return plugin;
  }
  return std::nullopt;
}

}  // namespace dlx::doctor
