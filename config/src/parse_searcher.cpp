// SPDX-License-Identifier: Apache-2.0
// The `searcher` section, with Determined's names. Options belong to their method: `divisor`
// under grid is an error that says which methods take it.
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "dlx/config/names.hpp"
#include "parse_sections.hpp"

namespace dlx::config::detail {

namespace {

const std::vector<std::string> kMethods{"single", "grid", "random", "async_halving", "adaptive_asha", "pbt"};
const std::vector<std::string> kCommonKeys{"name",       "metric",        "smaller_is_better",
                                           "max_trials", "max_concurrent_trials", "max_length",
                                           "source_trial_id", "source_checkpoint_uuid"};
// time_metric/max_time: Determined 0.38's other way to give ASHA's max_length.
const std::vector<std::string> kAshaKeys{"divisor", "max_rungs", "mode", "stop_once", "time_metric", "max_time"};
const std::vector<std::string> kAsyncHalvingKeys{"num_rungs"};  // Determined's name for max_rungs there
const std::vector<std::string> kAdaptiveAshaKeys{"bracket_rungs"};
const std::vector<std::string> kPbtKeys{"population_size", "num_rounds", "length_per_round",
                                        "replace_function", "explore_function"};
const std::vector<std::string> kSamplerKeys{"sampler", "tpe"};

bool contains(const std::vector<std::string>& names, const std::string& key) {
  return std::find(names.begin(), names.end(), key) != names.end();
}

void append(std::vector<std::string>& to, const std::vector<std::string>& more) {
  to.insert(to.end(), more.begin(), more.end());
}

// A key of another method's options: which methods take it.
const char* owner_of(const std::string& key) {
  if (contains(kSamplerKeys, key)) return "random, async_halving and adaptive_asha";
  if (contains(kAshaKeys, key)) return "async_halving and adaptive_asha";
  if (contains(kAsyncHalvingKeys, key)) return "async_halving (adaptive_asha calls it max_rungs)";
  if (contains(kAdaptiveAshaKeys, key)) return "adaptive_asha";
  if (contains(kPbtKeys, key)) return "pbt";
  return nullptr;
}

void check_keys_for(const MappingReader& section, SearcherName name) {
  const bool asha = name == SearcherName::async_halving || name == SearcherName::adaptive_asha;
  std::vector<std::string> allowed = kCommonKeys;
  if (asha) append(allowed, kAshaKeys);
  if (name == SearcherName::async_halving) append(allowed, kAsyncHalvingKeys);
  if (name == SearcherName::adaptive_asha) append(allowed, kAdaptiveAshaKeys);
  if (name == SearcherName::pbt) append(allowed, kPbtKeys);
  if (takes_sampler(name)) append(allowed, kSamplerKeys);
  for (const auto& entry : section.node()) {
    const std::string key = entry.first.Scalar();
    if (contains(allowed, key)) continue;
    if (const char* owner = owner_of(key)) {
      const bool renamed = key == "num_rungs" && name == SearcherName::adaptive_asha;
      section.fail(entry.first, section.path(key.c_str()),
                   fmt::format("is not an option of the {} searcher", to_string(name)),
                   renamed ? std::string("write max_rungs: N") : fmt::format("it belongs to {}; remove it", owner));
    }
    // Suggest only keys of this method (another method's key is refused above anyway), and not
    // the two keys dlx ignores: `slots_per_trial` (a resources key put here) is no typo of
    // `source_trial_id`.
    std::vector<std::string> candidates;
    for (const auto& known : allowed) {
      if (known != "source_trial_id" && known != "source_checkpoint_uuid") candidates.push_back(known);
    }
    std::string suggestion = closest_match(key, candidates);
    section.fail(entry.first, section.path(key.c_str()), "unknown key in searcher",
                 suggestion.empty() ? fmt::format("known keys for {}: {}", to_string(name), fmt::join(allowed, ", "))
                                    : fmt::format("did you mean '{}'?", suggestion));
  }
}

double fraction(const MappingReader& section, const char* key, double low, double high, bool low_open,
                double fallback) {
  auto value = section.optional_number(key);
  if (!value) return fallback;
  if (*value > high || *value < low || (low_open && *value == low)) {
    section.fail(section.raw(key), section.path(key),
                 fmt::format("must be {} {} and <= {}, got {}", low_open ? ">" : ">=", low, high, *value),
                 "give a fraction");
  }
  return *value;
}

void parse_pbt(const MappingReader& section, PbtOptions& pbt) {
  if (!section.has("population_size")) section.missing("population_size", "pbt needs population_size: N");
  if (!section.has("num_rounds")) section.missing("num_rounds", "pbt needs num_rounds: N");
  if (!section.has("length_per_round")) {
    section.missing("length_per_round", "pbt needs length_per_round: {batches: N}");
  }
  pbt.population_size = static_cast<int>(*section.optional_integer_in(
      "population_size", 2, kMaxTrials, "a population needs at least 2 trials"));
  pbt.num_rounds = static_cast<int>(*section.optional_integer_in("num_rounds", 1, 100'000, "at least 1 round"));
  pbt.length_per_round = parse_length(section, "length_per_round");
  if (section.has("replace_function")) {
    auto replace = section.mapping("replace_function");
    replace.allow_only({"truncate_fraction"});
    pbt.truncate_fraction = fraction(replace, "truncate_fraction", 0, 0.5, true, pbt.truncate_fraction);
  }
  if (section.has("explore_function")) {
    auto explore = section.mapping("explore_function");
    explore.allow_only({"resample_probability", "perturb_factor"});
    pbt.resample_probability = fraction(explore, "resample_probability", 0, 1, false, pbt.resample_probability);
    pbt.perturb_factor = fraction(explore, "perturb_factor", 0, 1, false, pbt.perturb_factor);
  }
}

std::vector<int> parse_bracket_rungs(const MappingReader& section) {
  YAML::Node list = section.raw("bracket_rungs");
  std::vector<int> rungs;
  if (!list || list.IsNull()) return rungs;
  if (!list.IsSequence()) {
    section.fail(list, "searcher.bracket_rungs", "expected a list of rung counts",
                 "e.g. bracket_rungs: [4, 3] for one bracket of 4 rungs and one of 3");
  }
  if (list.size() > 100) {
    section.fail(list, "searcher.bracket_rungs", fmt::format("has {} brackets, more than 100", list.size()),
                 "give fewer brackets");
  }
  for (const auto& item : list) {
    std::int64_t value = 0;
    const std::string text = item.IsScalar() ? item.Scalar() : std::string();
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc{} || end != text.data() + text.size() || value < 1 || value > 100) {
      section.fail(item, "searcher.bracket_rungs",
                   fmt::format("each bracket's rung count must be an integer between 1 and 100, got '{}'",
                               item.IsScalar() ? item.Scalar() : std::string("a collection")),
                   "e.g. bracket_rungs: [4, 3]");
    }
    rungs.push_back(static_cast<int>(value));
  }
  return rungs;
}

void parse_asha(const MappingReader& section, SearcherName name, AshaOptions& asha) {
  if (auto divisor = section.optional_number("divisor")) {
    if (!(*divisor > 1) || !std::isfinite(*divisor)) {
      section.fail(section.raw("divisor"), "searcher.divisor", fmt::format("must be a number > 1, got {}", *divisor),
                   "keep 1/divisor of the trials per rung, e.g. divisor: 4");
    }
    asha.divisor = *divisor;
  }
  if (section.has("num_rungs") && section.has("max_rungs")) {
    section.fail(section.raw("num_rungs"), "searcher.num_rungs", "is given together with max_rungs",
                 "keep one: async_halving's num_rungs is the same as max_rungs");
  }
  const char* rungs_key = section.has("num_rungs") ? "num_rungs" : "max_rungs";
  if (auto rungs = section.optional_integer_in(rungs_key, 1, 100, "e.g. 5 rungs")) asha.max_rungs = static_cast<int>(*rungs);
  if (auto mode = section.optional_choice("mode", {"aggressive", "standard", "conservative"})) {
    asha.mode = *mode == "aggressive"     ? AshaOptions::Mode::aggressive
                : *mode == "conservative" ? AshaOptions::Mode::conservative
                                          : AshaOptions::Mode::standard;
  }
  if (name == SearcherName::adaptive_asha) asha.bracket_rungs = parse_bracket_rungs(section);
  asha.stop_once = section.optional_boolean("stop_once").value_or(false);
}

// Determined 0.38: `time_metric: batches, max_time: N` is ASHA's max_length in that metric's units;
// dlx's trainers report their length in batches, records or epochs, so those three map.
void parse_time_metric(const MappingReader& section, SearcherConfig& out) {
  const bool metric = section.has("time_metric"), time = section.has("max_time");
  if (!metric && !time) return;
  if (metric != time) {
    section.fail(section.raw(metric ? "time_metric" : "max_time"), metric ? "searcher.time_metric" : "searcher.max_time",
                 "needs both time_metric and max_time (Determined ignores one alone)",
                 "give time_metric: batches and max_time: N together, or max_length: {batches: N}");
  }
  auto unit = section.optional_choice("time_metric", {"batches", "records", "epochs"});
  auto value = section.optional_integer_in("max_time", 1, std::int64_t{1} << 50, "a positive length, e.g. max_time: 1000");
  if (section.has("max_length")) {
    section.fail(section.raw("max_length"), "searcher.max_length", "is given together with time_metric and max_time",
                 "keep one: max_length: {batches: N} is the same as time_metric: batches, max_time: N");
  }
  out.max_length = Length{*unit == "records" ? Length::Unit::records
                          : *unit == "epochs" ? Length::Unit::epochs
                                              : Length::Unit::batches,
                          *value};
}

void note_ignored(const MappingReader& section, SearcherConfig& out) {
  // Determined starts every trial from this checkpoint; dlx has no such warm start.
  if (section.has("source_trial_id")) {
    section.optional_integer_in("source_trial_id", 0, std::numeric_limits<std::int64_t>::max(), "a trial id");
    out.ignored.push_back(
        "searcher.source_trial_id (dlx trials start from scratch: load those weights in your trainer)");
  }
  if (section.has("source_checkpoint_uuid")) {
    section.optional_string("source_checkpoint_uuid");
    out.ignored.push_back(
        "searcher.source_checkpoint_uuid (dlx trials start from scratch: load those weights in your trainer)");
  }
}

}  // namespace

Length parse_length(const MappingReader& parent, const char* key) {
  if (YAML::Node bare = parent.raw(key); bare && bare.IsScalar()) {
    // Determined 0.38's unitless length (the trainer's own steps): dlx counts it in batches.
    auto value = parent.optional_integer_in(key, 1, std::int64_t{1} << 50, "a positive length, e.g. 1000");
    return Length{Length::Unit::batches, *value};
  }
  auto section = parent.mapping(key);
  section.allow_only({"batches", "records", "epochs"});
  if (section.node().size() != 1) {
    parent.fail(parent.raw(key), parent.path(key), "must give exactly one of batches, records, epochs",
                fmt::format("e.g. {}: {{batches: 1000}}", key));
  }
  Length length;
  const std::string unit = section.node().begin()->first.Scalar();
  length.unit = unit == "records" ? Length::Unit::records
                : unit == "epochs" ? Length::Unit::epochs
                                   : Length::Unit::batches;
  length.value = *section.optional_integer_in(unit.c_str(), 1, std::int64_t{1} << 50, "a positive length");
  return length;
}

SearcherConfig parse_searcher(const MappingReader& section) {
  SearcherConfig out;
  out.where = section.position(section.node());
  refuse_retired_searcher_name(section);
  auto name = section.optional_choice("name", kMethods);
  if (!name) section.missing("name", "use name: single, grid, random, async_halving, adaptive_asha or pbt");
  out.name = static_cast<SearcherName>(std::find(kMethods.begin(), kMethods.end(), *name) - kMethods.begin());
  refuse_retired_searcher_keys(section);
  check_keys_for(section, out.name);

  auto metric = section.optional_string("metric");
  if (!metric || metric->empty()) {
    section.missing("metric", "name the validation metric to optimise, e.g. metric: accuracy");
  }
  if (metric->size() > kMaxKeyLength) {
    section.fail(section.raw("metric"), "searcher.metric",
                 fmt::format("is {} characters long, more than the limit of {}", metric->size(), kMaxKeyLength),
                 "use the metric's name as the trainer reports it");
  }
  out.metric = *metric;
  out.smaller_is_better = section.optional_boolean("smaller_is_better").value_or(true);
  out.max_trials = static_cast<int>(
      section.optional_integer_in("max_trials", 1, kMaxTrials, "give how many trials to run, at least 1").value_or(0));
  const bool asha = out.name == SearcherName::async_halving || out.name == SearcherName::adaptive_asha;
  const bool needs_max_trials = out.name == SearcherName::random || asha;
  if (needs_max_trials && out.max_trials == 0) {
    section.missing("max_trials", fmt::format("the {} searcher needs max_trials: N", to_string(out.name)));
  }
  if (section.has("max_length")) out.max_length = parse_length(section, "max_length");
  if (asha) parse_time_metric(section, out);
  if (!out.max_length && asha) {
    section.missing("max_length", "ASHA needs the full training length, e.g. max_length: {batches: 1000}");
  }
  if (asha) parse_asha(section, out.name, out.asha);
  if (out.name == SearcherName::pbt) parse_pbt(section, out.pbt);
  // Omitted: Determined's default of 16; PBT runs its whole population at once (a round waits for
  // every member, so fewer would deadlock and more only start tasks that wait).
  const int default_limit = out.name == SearcherName::pbt ? out.pbt.population_size : 16;
  out.max_concurrent_trials = static_cast<int>(
      section.optional_integer_in("max_concurrent_trials", 0, kMaxTrials, "0 means no limit").value_or(default_limit));
  if (takes_sampler(out.name)) parse_sampler(section, out);
  note_ignored(section, out);
  return out;
}

}  // namespace dlx::config::detail
