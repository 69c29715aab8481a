// SPDX-License-Identifier: Apache-2.0
#include "dlx/hparams.hpp"

#include <cmath>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dlx/config/closest_match.hpp"
#include "dlx/config/hparam_tree.hpp"

namespace dlx {

struct Hparams::Warnings {
  std::FILE* sink = nullptr;
  std::function<void(const NameWarning&)> hook;
  std::mutex mutex;                   // reads are const and may come from several threads
  std::set<std::string> said;         // "<kind>:<name>": each is warned about once
  std::vector<std::string> texts;
  std::vector<std::string> defined;   // the dotted names of the values
  std::set<std::string, std::less<>> read;
  std::map<std::string, std::string, std::less<>> defaulted;  // name -> the default taken (JSON)
};

void Hparams::warn_on(std::FILE* sink) {
  if (!warnings_) {
    warnings_ = std::make_shared<Warnings>();
    // Named: items() of a temporary would outlive it (the range-for keeps only items()'s proxy).
    const auto flat = config::flatten_hyperparameters(values_);
    for (const auto& [key, value] : flat.items()) warnings_->defined.push_back(key);
  }
  warnings_->sink = sink;
}

void Hparams::on_warning(std::function<void(const NameWarning&)> hook) {
  if (!warnings_) return;
  std::lock_guard lock(warnings_->mutex);
  warnings_->hook = std::move(hook);
}

std::vector<std::string> Hparams::warnings() const {
  if (!warnings_) return {};
  std::lock_guard lock(warnings_->mutex);
  return warnings_->texts;
}

const nlohmann::ordered_json& Hparams::json() const {
  if (warnings_) {
    std::lock_guard lock(warnings_->mutex);
    warnings_->read.insert(warnings_->defined.begin(), warnings_->defined.end());
  }
  return values_;
}

void Hparams::note_read(std::string_view name) const {
  if (!warnings_) return;
  std::lock_guard lock(warnings_->mutex);
  // A group read as a whole counts for every name under it.
  for (const auto& defined : warnings_->defined) {
    if (defined == name || (defined.size() > name.size() && defined.starts_with(name) && defined[name.size()] == '.')) {
      warnings_->read.insert(defined);
    }
  }
}

void Hparams::say(NameWarning warning) const {
  if (!warnings_->said.insert(warning.kind + ":" + warning.name).second) return;
  warnings_->texts.push_back(warning.message);
  if (warnings_->sink != nullptr) {
    fmt::print(warnings_->sink, "{}\n", warning.message);
    std::fflush(warnings_->sink);
  }
  if (warnings_->hook) warnings_->hook(warning);
}

void Hparams::note_default(std::string_view name, const std::string& fallback,
                           std::string_view type) const {
  std::lock_guard lock(warnings_->mutex);
  warnings_->defaulted.emplace(std::string(name), fallback);
  const auto& defined = warnings_->defined;
  std::vector<std::string> unread;
  for (const auto& key : defined) {
    if (!warnings_->read.contains(key)) unread.push_back(key);
  }
  // An unread name first: the one a typo most likely meant.
  std::string guess = config::closest_match(name, unread);
  if (guess.empty()) guess = config::closest_match(name, defined);
  say({"default", std::string(name),
       fmt::format("dlx: warning: hyperparameter '{}' is not defined by the experiment, so hparam<{}>(\"{}\", "
                   "...) uses its default {} ({}the experiment defines: {})", name, type, name, fallback,
                   guess.empty() ? "" : fmt::format("did you mean '{}'? ", guess),
                   defined.empty() ? "none" : fmt::format("{}", fmt::join(defined, ", ")))});
}

void Hparams::check_unread() const {
  if (!warnings_) return;
  std::lock_guard lock(warnings_->mutex);
  // A trainer that read no name through dlx (neither a value nor a default) reads its
  // hyperparameters some other way, DLX_HP_<NAME> or DLX_HPARAMS, which dlx cannot see: nothing
  // is said then, rather than a warning about every name it does read (as in the Python package).
  if (warnings_->read.empty() && warnings_->defaulted.empty()) return;
  std::vector<std::string> defaulted;
  for (const auto& [name, value] : warnings_->defaulted) defaulted.push_back(name);
  for (const auto& name : warnings_->defined) {
    if (warnings_->read.contains(name)) continue;
    const std::string guess = config::closest_match(name, defaulted);
    const std::string hint =
        guess.empty() ? fmt::format(" (remove it from the experiment, or read it: hparam<T>(\"{}\"))", name)
                      : fmt::format(": did you mean '{}', which it asked for and got the default {}?", guess,
                                    warnings_->defaulted.find(guess)->second);
    say({"unread", name,
         fmt::format("dlx: warning: the experiment defines hyperparameter '{}', which this trial has not read{}", name,
                     hint)});
  }
}

Hparams::Hparams(nlohmann::ordered_json values) : values_(std::move(values)) {
  if (!values_.is_object()) {
    throw HparamError(fmt::format("dlx: hyperparameters must be a JSON object, got {}",
                                  values_.dump()));
  }
}

const nlohmann::ordered_json* Hparams::find(std::string_view name) const {
  const auto* found = config::find_hyperparameter(values_, name);
  if (found != nullptr) note_read(name);
  return found;
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
