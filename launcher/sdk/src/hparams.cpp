// SPDX-License-Identifier: Apache-2.0
#include "dlx/hparams.hpp"

#include <cmath>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dlx/config/closest_match.hpp"
#include "dlx/config/hparam_tree.hpp"

namespace dlx {

struct Hparams::Warnings {
  std::FILE* sink = nullptr;
  std::mutex mutex;               // reads are const and may come from several threads
  std::set<std::string> said;     // each name is warned about once
  std::vector<std::string> texts;
};

void Hparams::warn_on(std::FILE* sink) {
  if (!warnings_) warnings_ = std::make_shared<Warnings>();
  warnings_->sink = sink;
}

std::vector<std::string> Hparams::warnings() const {
  if (!warnings_) return {};
  std::lock_guard lock(warnings_->mutex);
  return warnings_->texts;
}

void Hparams::note_default(std::string_view name, const std::string& fallback,
                           std::string_view type) const {
  std::lock_guard lock(warnings_->mutex);
  if (!warnings_->said.emplace(name).second) return;
  const auto flat = config::flatten_hyperparameters(values_);
  std::vector<std::string> defined;
  for (const auto& [key, value] : flat.items()) defined.push_back(key);
  const std::string guess = config::closest_match(name, defined);
  const std::string text = fmt::format(
      "dlx: warning: hyperparameter '{}' is not defined by the experiment, so hparam<{}>(\"{}\", "
      "...) uses its default {} ({}the experiment defines: {})", name, type, name, fallback,
      guess.empty() ? "" : fmt::format("did you mean '{}'? ", guess),
      defined.empty() ? "none" : fmt::format("{}", fmt::join(defined, ", ")));
  warnings_->texts.push_back(text);
  if (warnings_->sink != nullptr) {
    fmt::print(warnings_->sink, "{}\n", text);
    std::fflush(warnings_->sink);
  }
}

Hparams::Hparams(nlohmann::ordered_json values) : values_(std::move(values)) {
  if (!values_.is_object()) {
    throw HparamError(fmt::format("dlx: hyperparameters must be a JSON object, got {}",
                                  values_.dump()));
  }
}

const nlohmann::ordered_json* Hparams::find(std::string_view name) const {
  return config::find_hyperparameter(values_, name);
}

void Hparams::missing(std::string_view name, std::string_view type) const {
  std::string known;  // the dotted names of the values (a group is named by its members)
  const auto flat = config::flatten_hyperparameters(values_);
  for (const auto& [key, value] : flat.items()) {
    known += known.empty() ? key : ", " + key;
  }
  throw HparamError(fmt::format(
      "dlx: hyperparameter '{}' is not set for this trial (set: {}); add it to the experiment's "
      "hyperparameters, or give a default: hparam<{}>(\"{}\", ...)",
      name, known.empty() ? "none" : known, type, name));
}

void Hparams::wrong(std::string_view name, const nlohmann::ordered_json& value,
                    std::string_view type, std::string_view problem) {
  throw HparamError(fmt::format("dlx: hyperparameter '{}' is {}: {}, so it cannot be read as {}",
                                name, value.dump(), problem, type));
}

std::int64_t Hparams::integral_value(std::string_view name, const nlohmann::ordered_json& value,
                                     std::string_view type) {
  if (value.is_number_unsigned()) {
    const auto unsigned_value = value.get<std::uint64_t>();
    if (unsigned_value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      wrong(name, value, type, "out of range");
    }
    return static_cast<std::int64_t>(unsigned_value);
  }
  if (value.is_number_integer()) return value.get<std::int64_t>();
  if (value.is_number_float()) {
    const double real = value.get<double>();
    if (!std::isfinite(real) || std::trunc(real) != real) wrong(name, value, type, "not an integer");
    if (std::fabs(real) > 9.0e15) wrong(name, value, type, "out of range");
    return static_cast<std::int64_t>(real);
  }
  wrong(name, value, type, "not a number");
}

}  // namespace dlx
