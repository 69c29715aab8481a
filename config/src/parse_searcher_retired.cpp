// SPDX-License-Identifier: Apache-2.0
// Searcher names and keys that Determined retired or that have no dlx meaning: each is refused
// with what replaces it, so a Determined file from 0.12-0.38 gets a fix, not "unknown key".
#include <charconv>

#include <fmt/format.h>

#include "parse_sections.hpp"

namespace dlx::config::detail {

namespace {

// Pre-0.13 Determined measured training in steps of `batches_per_step` batches (100 unless the
// file set it at the top level).
constexpr std::int64_t kDeterminedBatchesPerStep = 100;

std::string steps_as_batches(const YAML::Node& value, const char* new_key) {
  std::int64_t steps = 0;
  const std::string text = value.IsScalar() ? value.Scalar() : std::string();
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), steps);
  if (text.empty() || error != std::errc{} || end != text.data() + text.size() || steps <= 0 ||
      steps > (std::int64_t{1} << 40)) {
    return fmt::format("write {}: {{batches: N}} with N = steps x batches_per_step (100 by default)", new_key);
  }
  return fmt::format("write {}: {{batches: {}}} ({} steps x 100 batches per step; with another batches_per_step, "
                     "multiply by it)",
                     new_key, steps * kDeterminedBatchesPerStep, steps);
}

}  // namespace

void refuse_retired_searcher_name(const MappingReader& section) {
  YAML::Node node = section.raw("name");
  if (!node || !node.IsScalar()) return;
  const std::string name = node.Scalar();
  if (name == "custom") {
    section.fail(node, "searcher.name",
                 "'custom' is Determined's searcher driven by your own Python search code, which dlx has no API for",
                 "use one of single, grid, random, async_halving, adaptive_asha (with sampler: tpe for a "
                 "model-based search) or pbt");
  }
  if (name == "adaptive_simple") {
    section.fail(node, "searcher.name", "'adaptive_simple' was retired by Determined",
                 "use name: adaptive_asha with the same max_trials, mode, max_rungs and divisor, and max_length in "
                 "place of max_steps");
  }
  if (name == "adaptive") {
    section.fail(node, "searcher.name", "'adaptive' was retired by Determined",
                 "use name: adaptive_asha with max_trials: N in place of budget (same mode, max_rungs, divisor, "
                 "bracket_rungs)");
  }
  if (name == "sync_halving") {
    section.fail(node, "searcher.name", "'sync_halving' was retired by Determined",
                 "use name: async_halving with num_rungs, divisor, max_length and max_trials: N in place of budget");
  }
}

void refuse_retired_searcher_keys(const MappingReader& section) {
  for (const auto& entry : section.node()) {
    const std::string key = entry.first.Scalar();
    const YAML::Node& value = entry.second;
    const std::string path = section.path(key.c_str());
    if (key == "max_steps" || key == "target_trial_steps") {
      section.fail(entry.first, path, "is a pre-0.13 Determined key (training was counted in steps)",
                   steps_as_batches(value, "max_length"));
    }
    if (key == "steps_per_round") {
      section.fail(entry.first, path, "is a pre-0.13 Determined key (training was counted in steps)",
                   steps_as_batches(value, "length_per_round"));
    }
    if (key == "step_budget" || key == "budget") {
      section.fail(entry.first, path, "was a total training budget of Determined's retired adaptive searchers",
                   "remove it: max_trials and max_length bound the search");
    }
    if (key == "train_stragglers") {
      section.fail(entry.first, path, "was an option of Determined's retired sync_halving and adaptive searchers",
                   "remove it");
    }
  }
}

}  // namespace dlx::config::detail
