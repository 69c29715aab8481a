// The `hyperparameters` section, with Determined's names and meanings:
//   lr: 0.1                                   a bare scalar is a constant
//   lr: {type: log, minval: -4, maxval: -1, base: 10, count: 4}
//   layers: {type: int, minval: 1, maxval: 4}
//   dropout: {type: double, minval: 0, maxval: 0.5, count: 3}
//   optimizer: {type: categorical, vals: [sgd, adam]}
//   optim: {momentum: 0.9, lr: {...}}         a mapping without `type` groups (optim.momentum)
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
    hp.fail(hp.node(), out.name, "minval and maxval must be finite numbers", "use finite bounds");
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
  for (const auto& item : vals) {
    if (!item.IsScalar()) {
      hp.fail(item, hp.path("vals"), "each choice must be a scalar (number, string or boolean)",
              "use plain values in vals");
    }
    out.vals.push_back(scalar_to_json(item));
  }
}

Hyperparameter parse_typed(const MappingReader& hp, const std::string& name) {
  Hyperparameter out;
  out.name = name;
  out.where = hp.position(hp.node());
  out.type = parse_type(hp);
  switch (out.type) {
    case HyperparameterType::constant: {
      hp.allow_only({"type", "val"});
      YAML::Node val = hp.raw("val");
      if (!val) hp.missing("val", "a const hyperparameter needs val: <value>");
      if (!val.IsScalar()) hp.fail(val, hp.path("val"), "must be a scalar", "give a number, string or boolean");
      out.value = scalar_to_json(val);
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

void parse_group(const MappingReader& group, const std::string& prefix,
                 std::vector<Hyperparameter>& out) {
  for (const auto& entry : group.node()) {
    const std::string key = entry.first.Scalar();
    const std::string name = prefix.empty() ? key : prefix + "." + key;
    // The whole dotted name is bounded (it also names the trial's DLX_HP_ variable), and checked
    // before its syntax.
    if (name.size() > kMaxKeyLength) {
      group.fail(entry.first, "hyperparameters." + name,
                 fmt::format("the name is {} characters long, more than the limit of {}", name.size(), kMaxKeyLength),
                 "use a shorter name");
    }
    if (!is_hyperparameter_key(key)) {
      group.fail(entry.first, "hyperparameters." + name, "is not a valid hyperparameter name",
                 "use letters, digits, '_' and '-', starting with a letter or '_'");
    }
    const YAML::Node& value = entry.second;
    if (value.IsScalar()) {
      Hyperparameter constant;
      constant.name = name;
      constant.where = group.position(value);
      constant.value = scalar_to_json(value);
      out.push_back(std::move(constant));
    } else if (value.IsMap()) {
      MappingReader nested(value, "hyperparameters." + name, group.file());
      if (value["type"]) {
        out.push_back(parse_typed(nested, name));
      } else {
        parse_group(nested, name, out);
      }
    } else {
      group.fail(value, "hyperparameters." + name, "expected a value or a mapping",
                 "write name: value, or name: {type: ..., ...}");
    }
  }
}

}  // namespace

std::vector<Hyperparameter> parse_hyperparameters(const MappingReader& section) {
  std::vector<Hyperparameter> out;
  parse_group(section, "", out);
  return out;
}

}  // namespace dlx::config::detail
