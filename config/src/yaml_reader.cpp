// SPDX-License-Identifier: Apache-2.0
#include "yaml_reader.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "dlx/config/closest_match.hpp"
#include "dlx/config/display_text.hpp"

namespace dlx::config::detail {

SourcePosition position_of(const YAML::Node& node, const std::string& file) {
  if (!node.IsDefined()) return {file, 0, 0};  // a missing key has no position of its own
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) return {file, 0, 0};
  return {file, mark.line + 1, mark.column + 1};
}

namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and transpositions of
// neighbours ("serach" is 3 from "searcher"), the typos people make in keys.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

const char* kind_name(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Null: return "nothing (null)";
    case YAML::NodeType::Scalar: return "a scalar";
    default: return "an undefined value";
  }
}

bool is_plain(const YAML::Node& scalar) { return scalar.Tag() != "!"; }

template <typename T>
std::optional<T> parse_number(const std::string& text) {
  T value{};
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (!text.empty() && *begin == '+') ++begin;
  auto [stop, error] = std::from_chars(begin, end, value);
  if (error != std::errc{} || stop != end || begin == end) return std::nullopt;
  return value;
}

std::optional<bool> parse_boolean(const std::string& text) {
  static const std::set<std::string> truthy{"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
  static const std::set<std::string> falsy{"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
  if (truthy.count(text)) return true;
  if (falsy.count(text)) return false;
  return std::nullopt;
}

}  // namespace

namespace {

// "rnd" for "random": the letters in order, the first one the same.
bool abbreviates(std::string_view word, std::string_view candidate) {
  if (word.size() < 2 || word.front() != candidate.front()) return false;
  std::size_t at = 0;
  for (char c : candidate) {
    if (at < word.size() && word[at] == c) ++at;
  }
  return at == word.size();
}

std::vector<std::string_view> words_of(std::string_view key) {
  std::vector<std::string_view> words;
  for (std::size_t start = 0;;) {
    auto end = key.find('_', start);
    words.push_back(key.substr(start, end == std::string_view::npos ? key.npos : end - start));
    if (end == std::string_view::npos) return words;
    start = end + 1;
  }
}

// Whether `candidate`, `distance` edits from `word`, is what the user meant to type: few edits for
// the length, and in keys of several words no whole word swapped for another ("slots_per_trial"
// is not a typo of "nodes_per_trial").
bool plausible_typo(std::string_view word, std::string_view candidate, std::size_t distance) {
  if (abbreviates(word, candidate)) return true;
  const std::size_t longer = std::max(word.size(), candidate.size());
  if (distance > std::max<std::size_t>(2, (longer + 1) / 3)) return false;
  auto typed = words_of(word), meant = words_of(candidate);
  if (typed.size() > 1 && typed.size() == meant.size()) {
    for (std::size_t k = 0; k < typed.size(); ++k) {
      const std::size_t length = std::max(typed[k].size(), meant[k].size());
      if (edit_distance(typed[k], meant[k]) > std::max<std::size_t>(1, length / 3)) return false;
    }
  }
  return true;
}

}  // namespace

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  // Far longer than any candidate is no typo, and the distance costs |word| x |candidate|.
  constexpr std::size_t kLongestTypo = 64;
  if (word.size() > kLongestTypo) return "";
  std::string best;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  for (const auto& candidate : candidates) {
    if (candidate.empty()) continue;
    std::size_t distance = edit_distance(word, candidate);
    if (!plausible_typo(word, candidate, distance)) continue;
    // On a tie, a candidate with the same first letter is the likelier typo ("rnd" -> "random").
    bool same_start = !word.empty() && word.front() == candidate.front();
    bool best_same_start = !best.empty() && !word.empty() && best.front() == word.front();
    if (distance < best_distance || (distance == best_distance && same_start && !best_same_start)) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

void check_structure(const YAML::Node& root, const std::string& file, int max_depth) {
  // Aliases share nodes, so a small file can describe a huge tree ("billion laughs"): count every
  // visit and stop early rather than walking it.
  constexpr std::size_t kMaxVisits = 100'000;
  std::size_t visits = 0;
  std::vector<std::pair<YAML::Node, int>> pending{{root, 1}};
  while (!pending.empty()) {
    if (++visits > kMaxVisits) {
      throw ConfigError({file, 0, 0}, "",
                        fmt::format("the document expands to more than {} values (aliases?)", kMaxVisits),
                        "an experiment file needs far fewer values; remove repeated aliases");
    }
    auto [node, depth] = pending.back();
    pending.pop_back();
    if (depth > max_depth) {
      throw ConfigError(position_of(node, file), "",
                        fmt::format("the document is nested more than {} levels deep", max_depth),
                        "flatten the experiment file");
    }
    if (node.IsMap()) {
      std::set<std::string> seen;
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) {
          throw ConfigError(position_of(entry.first, file), "", "a mapping key must be a plain name",
                            "use a string key");
        }
        const auto& key = entry.first.Scalar();
        if (!seen.insert(key).second) {
          throw ConfigError(position_of(entry.first, file), key,
                            "duplicate key (YAML keeps only one of them silently)",
                            "remove or rename one of the two");
        }
        pending.emplace_back(entry.second, depth + 1);
      }
    } else if (node.IsSequence()) {
      for (const auto& item : node) pending.emplace_back(item, depth + 1);
    }
  }
}

nlohmann::json scalar_to_json(const YAML::Node& scalar) {
  const std::string& text = scalar.Scalar();
  if (is_plain(scalar)) {
    if (auto integer = parse_number<std::int64_t>(text)) return *integer;
    if (auto number = parse_number<double>(text)) return *number;
    if (auto boolean = parse_boolean(text)) return *boolean;
  }
  return text;
}

void Diagnostics::throw_if_any() const {
  if (problems_.empty()) return;
  std::vector<ConfigError> sorted = problems_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const ConfigError& a, const ConfigError& b) {
    return std::pair(a.where().line, a.where().column) < std::pair(b.where().line, b.where().column);
  });
  throw ConfigErrors(std::move(sorted));
}

nlohmann::json yaml_to_json(const YAML::Node& node) {
  // Recursive, and bounded: check_structure has limited the document's depth (32) and size.
  switch (node.Type()) {
    case YAML::NodeType::Scalar: return scalar_to_json(node);
    case YAML::NodeType::Sequence: {
      auto array = nlohmann::json::array();
      for (const auto& item : node) array.push_back(yaml_to_json(item));
      return array;
    }
    case YAML::NodeType::Map: {
      auto object = nlohmann::json::object();
      for (const auto& entry : node) object[entry.first.Scalar()] = yaml_to_json(entry.second);
      return object;
    }
    default: return nullptr;
  }
}

MappingReader::MappingReader(const YAML::Node& node, std::string key_path, const std::string& file,
                             Diagnostics* sink)
    : node_(node), key_path_(std::move(key_path)), file_(file), sink_(sink) {}

void MappingReader::report(const YAML::Node& at, const std::string& key, const std::string& problem,
                           const std::string& fix) const {
  if (!sink_) fail(at, key, problem, fix);
  sink_->add(ConfigError(position_of(at, file_), key, problem, fix));
}

std::string MappingReader::path(const char* key) const {
  return key_path_.empty() ? std::string(key) : key_path_ + "." + key;
}

void MappingReader::fail(const YAML::Node& at, const std::string& key, const std::string& problem,
                         const std::string& fix) const {
  throw ConfigError(position_of(at, file_), key, problem, fix);
}

void MappingReader::missing(const char* key, const std::string& fix) const {
  fail(node_, path(key), "is required but missing", fix);
}

void MappingReader::allow_only(std::initializer_list<const char*> known) const {
  allow_only(std::vector<std::string>(known.begin(), known.end()));
}

void MappingReader::allow_only(const std::vector<std::string>& names) const { allow_only(names, names, ""); }

void MappingReader::allow_only(const std::vector<std::string>& names, const std::vector<std::string>& listed,
                               const std::string& more) const {
  for (const auto& entry : node_) {
    const std::string& key = entry.first.Scalar();
    if (std::find(names.begin(), names.end(), key) != names.end()) continue;
    std::string suggestion = closest_match(key, names);
    std::string where = key_path_.empty() ? "at the top level" : "in " + key_path_;
    std::string fix = suggestion.empty()
                          ? fmt::format("known keys {}: {}{}", where, fmt::join(listed, ", "), more)
                          : fmt::format("did you mean '{}'?", suggestion);
    report(entry.first, path(key.c_str()), fmt::format("unknown key {}", where), fix);
  }
}

void MappingReader::require_scalar(const YAML::Node& value, const char* key,
                                   const char* expected) const {
  if (!value.IsScalar()) {
    fail(value, path(key), fmt::format("expected {}, got {}", expected, kind_name(value)),
         fmt::format("write {}: <{}>", key, expected));
  }
}

std::optional<std::string> MappingReader::optional_string(const char* key) const {
  YAML::Node value = node_[key];
  if (!value) return std::nullopt;
  require_scalar(value, key, "a string");
  return value.Scalar();
}

std::optional<std::int64_t> MappingReader::optional_integer(const char* key) const {
  YAML::Node value = node_[key];
  if (!value) return std::nullopt;
  require_scalar(value, key, "an integer");
  auto parsed = parse_number<std::int64_t>(value.Scalar());
  if (!parsed || !is_plain(value)) {
    fail(value, path(key), fmt::format("expected an integer, got '{}'", abbreviated(value.Scalar())),
         "write a whole number such as 4");
  }
  return parsed;
}

std::optional<double> MappingReader::optional_number(const char* key) const {
  YAML::Node value = node_[key];
  if (!value) return std::nullopt;
  require_scalar(value, key, "a number");
  auto parsed = parse_number<double>(value.Scalar());
  if (!parsed || !is_plain(value)) {
    fail(value, path(key), fmt::format("expected a number, got '{}'", abbreviated(value.Scalar())),
         "write a number such as 0.01 or 1e-3");
  }
  return parsed;
}

std::optional<bool> MappingReader::optional_boolean(const char* key) const {
  YAML::Node value = node_[key];
  if (!value) return std::nullopt;
  require_scalar(value, key, "true or false");
  auto parsed = parse_boolean(value.Scalar());
  if (!parsed || !is_plain(value)) {
    fail(value, path(key), fmt::format("expected true or false, got '{}'", abbreviated(value.Scalar())),
         "write true or false");
  }
  return parsed;
}

std::optional<std::int64_t> MappingReader::optional_integer_in(const char* key, std::int64_t low,
                                                               std::int64_t high, const char* fix) const {
  auto value = optional_integer(key);
  if (value && (*value < low || *value > high)) {
    fail(raw(key), path(key), fmt::format("must be between {} and {}, got {}", low, high, *value), fix);
  }
  return value;
}

std::optional<std::string> MappingReader::optional_choice(const char* key,
                                                          const std::vector<std::string>& choices) const {
  auto value = optional_string(key);
  if (!value || std::find(choices.begin(), choices.end(), *value) != choices.end()) return value;
  std::string suggestion = closest_match(*value, choices);
  fail(raw(key), path(key), fmt::format("unknown value '{}'", abbreviated(*value)),
       suggestion.empty() ? fmt::format("use one of {}", fmt::join(choices, ", "))
                          : fmt::format("did you mean '{}'?", suggestion));
}

MappingReader MappingReader::mapping(const char* key) const {
  YAML::Node value = node_[key];
  if (!value) missing(key, fmt::format("add a {} section", key));
  if (!value.IsMap()) {
    fail(value, path(key), fmt::format("expected a mapping, got {}", kind_name(value)),
         fmt::format("write {}: followed by indented key: value lines", key));
  }
  return MappingReader(value, path(key), file_, sink_);
}

}  // namespace dlx::config::detail

namespace dlx::config {

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  return detail::closest_match(word, candidates);
}

}  // namespace dlx::config
