// The `searcher` section, with Determined's names. Options belong to their method: `divisor`
// under grid is an error that says which methods take it.
#include <fmt/format.h>

#include "dlx/config/names.hpp"
#include "parse_sections.hpp"

namespace dlx::config::detail {

namespace {

const std::vector<std::string> kMethods{"single", "grid", "random", "async_halving", "adaptive_asha", "pbt"};
const std::vector<std::string> kCommonKeys{"name", "metric", "smaller_is_better", "max_trials",
                                           "max_concurrent_trials", "max_length"};
const std::vector<std::string> kAshaKeys{"divisor", "max_rungs", "mode", "stop_once"};
const std::vector<std::string> kPbtKeys{"population_size", "num_rounds", "length_per_round",
                                        "replace_function", "explore_function"};
const std::vector<std::string> kSamplerKeys{"sampler", "tpe"};

bool contains(const std::vector<std::string>& names, const std::string& key) {
  return std::find(names.begin(), names.end(), key) != names.end();
}

void check_keys_for(const MappingReader& section, SearcherName name) {
  const bool asha = name == SearcherName::async_halving || name == SearcherName::adaptive_asha;
  const bool pbt = name == SearcherName::pbt;
  std::vector<std::string> allowed = kCommonKeys;
  if (asha) allowed.insert(allowed.end(), kAshaKeys.begin(), kAshaKeys.end());
  if (pbt) allowed.insert(allowed.end(), kPbtKeys.begin(), kPbtKeys.end());
  if (takes_sampler(name)) allowed.insert(allowed.end(), kSamplerKeys.begin(), kSamplerKeys.end());
  for (const auto& entry : section.node()) {
    const std::string key = entry.first.Scalar();
    if (contains(allowed, key)) continue;
    if (contains(kSamplerKeys, key)) {
      section.fail(entry.first, section.path(key.c_str()),
                   fmt::format("is not an option of the {} searcher", to_string(name)),
                   "it belongs to random, async_halving and adaptive_asha; remove it");
    }
    if (contains(kAshaKeys, key) || contains(kPbtKeys, key)) {
      section.fail(entry.first, section.path(key.c_str()),
                   fmt::format("is not an option of the {} searcher", to_string(name)),
                   contains(kAshaKeys, key) ? "it belongs to async_halving and adaptive_asha; remove it"
                                            : "it belongs to pbt; remove it");
    }
    std::vector<std::string> everything = kCommonKeys;
    everything.insert(everything.end(), kAshaKeys.begin(), kAshaKeys.end());
    everything.insert(everything.end(), kPbtKeys.begin(), kPbtKeys.end());
    everything.insert(everything.end(), kSamplerKeys.begin(), kSamplerKeys.end());
    std::string suggestion = closest_match(key, everything);
    section.fail(entry.first, section.path(key.c_str()), "unknown key in searcher",
                 suggestion.empty() ? fmt::format("known keys: {}", fmt::join(allowed, ", "))
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

void parse_asha(const MappingReader& section, AshaOptions& asha) {
  if (auto divisor = section.optional_integer_in("divisor", 2, 1000, "keep 1/divisor per rung, e.g. 4")) {
    asha.divisor = static_cast<int>(*divisor);
  }
  if (auto rungs = section.optional_integer_in("max_rungs", 1, 100, "e.g. max_rungs: 5")) {
    asha.max_rungs = static_cast<int>(*rungs);
  }
  if (auto mode = section.optional_choice("mode", {"aggressive", "standard", "conservative"})) {
    asha.mode = *mode == "aggressive"     ? AshaOptions::Mode::aggressive
                : *mode == "conservative" ? AshaOptions::Mode::conservative
                                          : AshaOptions::Mode::standard;
  }
  asha.stop_once = section.optional_boolean("stop_once").value_or(false);
}

}  // namespace

Length parse_length(const MappingReader& parent, const char* key) {
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
  auto name = section.optional_choice("name", kMethods);
  if (!name) section.missing("name", "use name: single, grid, random, async_halving, adaptive_asha or pbt");
  out.name = static_cast<SearcherName>(std::find(kMethods.begin(), kMethods.end(), *name) - kMethods.begin());
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
  const bool needs_max_trials = out.name == SearcherName::random || out.name == SearcherName::async_halving ||
                                out.name == SearcherName::adaptive_asha;
  if (needs_max_trials && out.max_trials == 0) {
    section.missing("max_trials", fmt::format("the {} searcher needs max_trials: N", to_string(out.name)));
  }
  out.max_concurrent_trials = static_cast<int>(
      section.optional_integer_in("max_concurrent_trials", 0, kMaxTrials, "0 means no limit").value_or(0));
  if (section.has("max_length")) out.max_length = parse_length(section, "max_length");
  if (!out.max_length && (out.name == SearcherName::async_halving || out.name == SearcherName::adaptive_asha)) {
    section.missing("max_length", "ASHA needs the full training length, e.g. max_length: {batches: 1000}");
  }
  if (out.name == SearcherName::async_halving || out.name == SearcherName::adaptive_asha) parse_asha(section, out.asha);
  if (out.name == SearcherName::pbt) parse_pbt(section, out.pbt);
  if (takes_sampler(out.name)) parse_sampler(section, out);
  return out;
}

}  // namespace dlx::config::detail
