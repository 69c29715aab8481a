// SPDX-License-Identifier: Apache-2.0
// The `hyperparameters` section, with Determined's names and meanings:
//   lr: 0.1                                   a bare scalar is a constant
//   lr: {type: log, minval: -4, maxval: -1, base: 10, count: 4}
//   layers: {type: int, minval: 1, maxval: 4}
//   dropout: {type: double, minval: 0, maxval: 0.5, count: 3}
//   optimizer: {type: categorical, vals: [sgd, adam]}
//   optim: {momentum: 0.9, lr: {...}}         a mapping without `type` groups (optim.momentum)
//   layers: [64, 32]   head: null             any other YAML value is a constant, as Determined
//                                             passes it through (also inside val and vals)
//   optim.lr: 0.1                             a key may contain '.' (Determined allows it)
// Each hyperparameter is its own recovery boundary: one bad entry does not hide the next.
#include <cmath>

#include <fmt/format.h>

#include "dlx/config/display_text.hpp"
#include "dlx/config/names.hpp"
#include "dlx/config/syntax.hpp"
#include "parse_sections.hpp"

namespace dlx::config::detail {

namespace {

HyperparameterType parse_type(const MappingReader& hp) {
  const std::string type = *hp.optional_string("type");
  if (type == "const") return HyperparameterType::constant;
  if (type == "int") return HyperparameterType::integer;
  if (type == "double") return HyperparameterType::real;
  if (type == "log") return HyperparameterType::log;
  if (type == "categorical") return HyperparameterType::categorical;
  std::string suggestion = closest_match(type, {"const", "int", "double", "log", "categorical"});
  hp.fail(hp.raw("type"), hp.path("type"), fmt::format("unknown hyperparameter type '{}'", abbreviated(type)),
          suggestion.empty() ? "use one of const, int, double, log, categorical"
                             : fmt::format("did you mean '{}'?", suggestion));
}

void read_range(const MappingReader& hp, Hyperparameter& out) {
  const bool integral = out.type == HyperparameterType::integer;
  auto read_bound = [&](const char* key) {
    if (!hp.has(key)) hp.missing(key, fmt::format("a {} hyperparameter needs minval and maxval",
                                                  to_string(out.type)));
    return integral ? static_cast<double>(*hp.optional_integer(key)) : *hp.optional_number(key);
  };
  out.minval = read_bound("minval");
  out.maxval = read_bound("maxval");
  if (!std::isfinite(out.minval) || !std::isfinite(out.maxval)) {
    hp.fail(hp.node(), "hyperparameters." + out.name, "minval and maxval must be finite numbers",
            "use finite bounds");
  }
  if (out.minval > out.maxval) {
    hp.fail(hp.raw("minval"), hp.path("minval"),
            fmt::format("minval {} is greater than maxval {}", out.minval, out.maxval),
            "swap them or fix the range");
  }
  if (auto count = hp.optional_integer("count")) {
    if (*count < 1 || *count > 1'000'000) {
      hp.fail(hp.raw("count"), hp.path("count"),
              fmt::format("must be between 1 and 1000000, got {}", *count),
              "give the number of grid points, e.g. count: 3");
    }
    out.count = static_cast<int>(*count);
  }
  if (out.type == HyperparameterType::log) {
    out.base = hp.optional_number("base").value_or(10.0);
    if (!(out.base > 0) || out.base == 1) {
      hp.fail(hp.raw("base"), hp.path("base"), fmt::format("must be > 0 and != 1, got {}", out.base),
              "use base: 10 (minval/maxval are exponents of base)");
    }
  }
}

void read_categorical(const MappingReader& hp, Hyperparameter& out) {
  YAML::Node vals = hp.raw("vals");
  if (!vals) hp.missing("vals", "list the choices, e.g. vals: [sgd, adam]");
  if (!vals.IsSequence() || vals.size() == 0) {
    hp.fail(vals, hp.path("vals"), "must be a non-empty list", "list the choices, e.g. vals: [sgd, adam]");
  }
  for (const auto& item : vals) out.vals.push_back(yaml_to_json(item));  // any value, lists too
}

Hyperparameter parse_typed(const MappingReader& hp, const std::string& name, const std::vector<std::string>& path) {
  Hyperparameter out;
  out.name = name;
  out.path = path;
  out.where = hp.position(hp.node());
  out.type = parse_type(hp);
  switch (out.type) {
    case HyperparameterType::constant: {
      hp.allow_only({"type", "val"});
      YAML::Node val = hp.raw("val");
      if (!val) hp.missing("val", "a const hyperparameter needs val: <value>");
      out.value = yaml_to_json(val);  // any value: null, a list, a mapping
      break;
    }
    case HyperparameterType::integer:
    case HyperparameterType::real:
      hp.allow_only({"type", "minval", "maxval", "count"});
      read_range(hp, out);
      break;
    case HyperparameterType::log:
      hp.allow_only({"type", "minval", "maxval", "base", "count"});
      read_range(hp, out);
      break;
    case HyperparameterType::categorical:
      hp.allow_only({"type", "vals"});
      read_categorical(hp, out);
      break;
  }
  return out;
}

void parse_entry(const MappingReader& group, const YAML::Node& key_node, const YAML::Node& value,
                 const std::vector<std::string>& prefix, std::vector<Hyperparameter>& out);

void parse_group(const MappingReader& group, const std::vector<std::string>& prefix,
                 std::vector<Hyperparameter>& out) {
  for (const auto& entry : group.node()) {
    if (Diagnostics* sink = group.sink()) {
      sink->attempt([&] { parse_entry(group, entry.first, entry.second, prefix, out); });
    } else {
      parse_entry(group, entry.first, entry.second, prefix, out);
    }
  }
}

void parse_entry(const MappingReader& group, const YAML::Node& key_node, const YAML::Node& value,
                 const std::vector<std::string>& prefix, std::vector<Hyperparameter>& out) {
  const std::string key = key_node.Scalar();
  std::vector<std::string> path = prefix;
  path.push_back(key);
  std::string name;
  for (const auto& part : path) name += (name.empty() ? "" : ".") + part;
  const std::string shown = "hyperparameters." + name;
  // The whole dotted name is bounded (it also names the trial's DLX_HP_ variable), and checked
  // before its syntax.
  if (name.size() > kMaxKeyLength) {
    group.fail(key_node, shown,
               fmt::format("the name is {} characters long, more than the limit of {}", name.size(), kMaxKeyLength),
               "use a shorter name");
  }
  if (!is_hyperparameter_key(key)) {
    group.fail(key_node, shown, "is not a valid hyperparameter name",
               "use letters, digits, '_', '-' and '.', starting with a letter or '_'");
  }
  if (value.IsMap() && value["type"]) {
    out.push_back(parse_typed(group.nested(value, shown), name, path));
  } else if (value.IsMap() && value.size() > 0) {
    parse_group(group.nested(value, shown), path, out);
  } else {
    // A scalar, null, a list (empty too) or an empty mapping: a constant, passed through as is.
    Hyperparameter constant;
    constant.name = name;
    constant.path = path;
    constant.where = group.position(value.IsNull() ? key_node : value);
    constant.value = yaml_to_json(value);
    out.push_back(std::move(constant));
  }
}

}  // namespace

std::vector<Hyperparameter> parse_hyperparameters(const MappingReader& section) {
  std::vector<Hyperparameter> out;
  parse_group(section, {}, out);
  return out;
}

}  // namespace dlx::config::detail
