// SPDX-License-Identifier: Apache-2.0
#pragma once
// The schema walker under the experiment parser: typed reads from a yaml-cpp tree where every
// failure becomes a ConfigError with file, line, column, the dotted key, the problem and the fix.
// Sections declare their keys; an unknown key is rejected with a did-you-mean suggestion.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "dlx/config/parse.hpp"

namespace dlx::config::detail {

SourcePosition position_of(const YAML::Node& node, const std::string& file);

// The closest of `candidates` to `word` when it is plausibly a typo, else "". Plausible: at most
// a third of the longer word's letters differ (at least 1, at most 3 edits), so that "slurm" is
// not offered "seed" nor "time_metric" "metric".
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// Rejects duplicate keys (yaml-cpp keeps them silently) and documents nested deeper than
// `max_depth`, in one iterative pass.
void check_structure(const YAML::Node& root, const std::string& file, int max_depth);

// Where one parse collects its problems so that a file's mistakes are all reported in one run.
// A section reports by throwing ConfigError, as ever; a recovery boundary (attempt) catches it,
// records it and goes on with the next key, hyperparameter or section. Problems that leave the
// rest readable (an unknown key) are recorded without throwing (MappingReader::report).
class Diagnostics {
 public:
  void add(ConfigError problem) { problems_.push_back(std::move(problem)); }
  // Runs `step`; a ConfigError it throws is recorded. Returns whether it completed.
  template <typename Step>
  bool attempt(Step&& step) {
    try {
      step();
      return true;
    } catch (const ConfigErrors& several) {
      for (const auto& problem : several.problems()) add(problem);
    } catch (const ConfigError& problem) {
      add(problem);
    }
    return false;
  }
  bool empty() const noexcept { return problems_.empty(); }
  // Throws ConfigErrors with every problem sorted by line and column, if there is any.
  void throw_if_any() const;

 private:
  std::vector<ConfigError> problems_;
};

class MappingReader {
 public:
  // `key_path` is the dotted path of this mapping ("" for the document root, "searcher", ...).
  // With `sink`, problems that need not stop the parse are recorded there (and passed on to
  // every nested reader); without, every problem throws.
  MappingReader(const YAML::Node& node, std::string key_path, const std::string& file,
                Diagnostics* sink = nullptr);

  // Reports every key of this mapping not in `known`, suggesting the closest known key of this
  // same mapping when one is close; the keys in `elsewhere` (handled by the caller) are let by.
  void allow_only(std::initializer_list<const char*> known) const;
  void allow_only(const std::vector<std::string>& known) const;
  // The same, listing only `listed` (and then `more`) where no key is close: the top level knows
  // Determined's keys too, too many to list in every message.
  void allow_only(const std::vector<std::string>& known, const std::vector<std::string>& listed,
                  const std::string& more) const;

  // A problem that does not stop the parse: recorded in the sink, thrown without one.
  void report(const YAML::Node& at, const std::string& key, const std::string& problem,
              const std::string& fix) const;
  Diagnostics* sink() const { return sink_; }
  MappingReader nested(const YAML::Node& node, const std::string& key_path) const {
    return MappingReader(node, key_path, file_, sink_);
  }

  bool has(const char* key) const { return static_cast<bool>(node_[key]); }
  YAML::Node raw(const char* key) const { return node_[key]; }
  const YAML::Node& node() const { return node_; }
  std::string path(const char* key) const;
  SourcePosition position(const YAML::Node& at) const { return position_of(at, file_); }
  const std::string& file() const { return file_; }

  [[noreturn]] void fail(const YAML::Node& at, const std::string& key, const std::string& problem,
                         const std::string& fix) const;
  [[noreturn]] void missing(const char* key, const std::string& fix) const;

  std::optional<std::string> optional_string(const char* key) const;
  std::optional<std::int64_t> optional_integer(const char* key) const;
  std::optional<double> optional_number(const char* key) const;
  std::optional<bool> optional_boolean(const char* key) const;
  MappingReader mapping(const char* key) const;  // the key must be present and a mapping

  // An integer in [low, high]; the message names the range and `fix`.
  std::optional<std::int64_t> optional_integer_in(const char* key, std::int64_t low, std::int64_t high,
                                                  const char* fix) const;
  // One of `choices`, with a did-you-mean suggestion otherwise.
  std::optional<std::string> optional_choice(const char* key, const std::vector<std::string>& choices) const;

 private:
  void require_scalar(const YAML::Node& value, const char* key, const char* expected) const;

  YAML::Node node_;
  std::string key_path_;
  std::string file_;
  Diagnostics* sink_ = nullptr;
};

// A scalar as JSON: plain scalars become integer, number or boolean when they read as one;
// quoted scalars stay strings. Sequences and mappings are rejected by the caller.
nlohmann::json scalar_to_json(const YAML::Node& scalar);
// Any YAML value as JSON: null, scalars as scalar_to_json, lists, and mappings (keys as strings).
nlohmann::json yaml_to_json(const YAML::Node& node);

}  // namespace dlx::config::detail
