// SPDX-License-Identifier: Apache-2.0
// `searcher.sampler` and `searcher.tpe`: where random and ASHA get new trials' hyperparameters.
#include <fmt/format.h>

#include "dlx/config/names.hpp"
#include "parse_sections.hpp"

namespace dlx::config::detail {

namespace {

void parse_tpe(const MappingReader& section, TpeOptions& tpe) {
  tpe.startup_trials = static_cast<int>(
      section
          .optional_integer_in("startup_trials", 2, kMaxTrials,
                               "TPE needs at least 2 results to tell good from bad, e.g. startup_trials: 10")
          .value_or(tpe.startup_trials));
  if (auto gamma = section.optional_number("gamma")) {
    if (!(*gamma > 0 && *gamma <= 0.5)) {
      section.fail(section.raw("gamma"), section.path("gamma"), fmt::format("must be > 0 and <= 0.5, got {}", *gamma),
                   "the best fraction of results that counts as good, e.g. gamma: 0.25");
    }
    tpe.gamma = *gamma;
  }
  tpe.candidates = static_cast<int>(
      section.optional_integer_in("candidates", 1, 10'000, "draws scored per new trial, e.g. candidates: 24")
          .value_or(tpe.candidates));
}

}  // namespace

bool takes_sampler(SearcherName name) {
  // Grid and single have no draws to model; PBT's later rounds come from exploit and explore.
  return name == SearcherName::random || name == SearcherName::async_halving || name == SearcherName::adaptive_asha;
}

void parse_sampler(const MappingReader& section, SearcherConfig& into) {
  if (auto name = section.optional_choice("sampler", {"random", "tpe"})) {
    into.sampler = *name == "tpe" ? SamplerName::tpe : SamplerName::random;
  }
  if (section.has("tpe")) {
    if (into.sampler != SamplerName::tpe) {
      section.fail(section.raw("tpe"), section.path("tpe"), "is set but the sampler is random",
                   "add sampler: tpe, or remove tpe");
    }
    auto tpe = section.mapping("tpe");
    tpe.allow_only({"startup_trials", "gamma", "candidates"});
    parse_tpe(tpe, into.tpe);
  }
  if (into.sampler == SamplerName::tpe && into.tpe.startup_trials >= into.max_trials) {
    // Every trial would start before the model has its startup results: TPE would never act.
    const bool given = section.has("tpe") && section.raw("tpe")["startup_trials"];
    section.fail(given ? section.raw("tpe")["startup_trials"] : section.raw("sampler"), "searcher.tpe.startup_trials",
                 fmt::format("is {}{}, not fewer than max_trials ({}): every trial would be a random point",
                             into.tpe.startup_trials, given ? "" : " (the default)", into.max_trials),
                 "lower tpe.startup_trials below max_trials, or use sampler: random");
  }
}

}  // namespace dlx::config::detail
