// SPDX-License-Identifier: Apache-2.0
#include "dlx/config/hparam_tree.hpp"

#include <map>
#include <vector>

#include <fmt/format.h>

namespace dlx::config {

namespace {

using Json = nlohmann::ordered_json;

std::vector<std::string> name_parts(const std::string& name) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto dot = name.find('.', start);
    parts.push_back(name.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (parts.back().empty()) {
      throw HparamTreeError(fmt::format(
          "hyperparameter name '{}' has an empty part between dots (each part of a dotted name "
          "names a group or a hyperparameter)", name));
    }
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

[[noreturn]] void both(const std::string& value_name, const std::string& member) {
  throw HparamTreeError(fmt::format(
      "hyperparameter '{}' is a value and also the group of '{}', so the two cannot be passed "
      "nested (rename one of them)", value_name, member));
}

void flatten_into(const Json& tree, const std::string& prefix, Json& out) {
  for (const auto& [key, value] : tree.items()) {
    const std::string name = prefix.empty() ? key : prefix + "." + key;
    if (value.is_object() && !value.empty()) {
      flatten_into(value, name, out);
    } else {
      out[name] = value;
    }
  }
}

}  // namespace

Json nest_hyperparameters(const Json& flat) {
  if (!flat.is_object()) {
    throw HparamTreeError(fmt::format("hyperparameters must be a JSON object, not {}", flat.type_name()));
  }
  Json out = Json::object();
  std::map<std::string, std::string, std::less<>> groups;  // group path -> its first member
  for (const auto& [name, value] : flat.items()) {
    const auto parts = name_parts(name);
    Json* node = &out;
    std::string path;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      path += (i == 0 ? "" : ".") + parts[i];
      auto found = node->find(parts[i]);
      if (found == node->end()) {
        groups.emplace(path, name);
        node = &((*node)[parts[i]] = Json::object());
      } else if (!groups.contains(path)) {
        both(path, name);
      } else {
        node = &*found;
      }
    }
    if (auto group = groups.find(name); group != groups.end()) both(name, group->second);
    (*node)[parts.back()] = value;
  }
  return out;
}

const Json* find_hyperparameter(const Json& tree, std::string_view name) {
  if (!tree.is_object()) return nullptr;
  if (auto found = tree.find(std::string(name)); found != tree.end()) return &*found;
  for (auto dot = name.find('.'); dot != std::string_view::npos; dot = name.find('.', dot + 1)) {
    auto group = tree.find(std::string(name.substr(0, dot)));
    if (group == tree.end() || !group->is_object()) continue;
    if (const Json* value = find_hyperparameter(*group, name.substr(dot + 1))) return value;
  }
  return nullptr;
}

Json flatten_hyperparameters(const Json& tree, std::span<const std::string> names) {
  Json out = Json::object();
  for (const auto& name : names) {
    if (const Json* value = find_hyperparameter(tree, name)) out[name] = *value;
  }
  return out;
}

Json flatten_hyperparameters(const Json& tree) {
  Json out = Json::object();
  if (tree.is_object()) flatten_into(tree, "", out);
  return out;
}

std::string hyperparameter_variable_value(const Json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

}  // namespace dlx::config
