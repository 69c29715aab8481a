// SPDX-License-Identifier: Apache-2.0
#pragma once
// A trial's hyperparameters (DLX_HPARAMS: a JSON object, groups nested the way Determined passes
// them: {"optim": {"lr": 0.1}, "batch": 64}) with typed access. A name is found by its dotted
// path ("optim.lr") or as a literal key (the flat form of earlier versions, a name with a '.'):
// dlx/config/hparam_tree.hpp. Conversions are strict and every failure names the hyperparameter,
// its value and the type asked for: integers accept JSON integers and integral floats (16.0) in
// range; floating types accept any number; bool accepts only true/false; std::string only
// strings; nlohmann::ordered_json takes any value as it is (a group, a list, null, a mapping).
// A name read with a default that the hyperparameters do not hold is a warning, once per name,
// where warn_on() says (the Trial: rank 0's stderr, the trial's log), naming the closest defined
// name: a typo in the experiment or the trainer shows on the first trial. check_unread() warns
// about each defined name not read so far (Trial::finish() asks), naming the closest name read
// with a default. The Trial also keeps each warning in trial.h5 (on_warning), where `dlx status`
// and `dlx report` show them.
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlx/common/error.hpp"

namespace dlx {

class HparamError : public Error {
 public:
  using Error::Error;
};

template <class T>
concept HparamType = std::same_as<T, bool> || std::same_as<T, std::string> ||
                     std::same_as<T, nlohmann::ordered_json> || std::integral<T> ||
                     std::floating_point<T>;

class Hparams {
 public:
  Hparams() = default;
  explicit Hparams(nlohmann::ordered_json values);  // throws HparamError unless an object

  template <HparamType T>
  T get(std::string_view name) const {
    const auto* value = find(name);
    if (value == nullptr) missing(name, type_name<T>());
    return convert<T>(name, *value);
  }

  template <HparamType T>
  T get(std::string_view name, T fallback) const {
    const auto* value = find(name);
    if (value == nullptr) {
      if (warnings_) note_default(name, nlohmann::ordered_json(fallback).dump(), type_name<T>());
      return fallback;
    }
    return convert<T>(name, *value);
  }

  bool contains(std::string_view name) const { return find(name) != nullptr; }
  // All of them (with warnings on, every name now counts as read: the caller has them all).
  const nlohmann::ordered_json& json() const;
  // The same without counting them as read (a binding that hands them on to code that checks
  // its own reads: the Python package).
  const nlohmann::ordered_json& values() const noexcept { return values_; }

  // One warning: kind "default" (read with a default the experiment lacks) or "unread" (defined,
  // not read), the name, and the text said.
  struct NameWarning {
    std::string kind;
    std::string name;
    std::string message;
  };
  // Where the warnings go (nullptr: nowhere, the default); turns the checks on. Copies share it.
  void warn_on(std::FILE* sink);
  // Called with each warning once it is said (after warn_on; the Trial records it).
  void on_warning(std::function<void(const NameWarning&)> hook);
  // The warnings said so far, in order.
  std::vector<std::string> warnings() const;
  // Warns once about each defined name not read so far (with warnings on).
  void check_unread() const;

 private:
  struct Warnings;
  const nlohmann::ordered_json* find(std::string_view name) const;
  void note_read(std::string_view name) const;
  void say(NameWarning warning) const;  // under the warnings' mutex
  void note_default(std::string_view name, const std::string& fallback, std::string_view type) const;
  [[noreturn]] void missing(std::string_view name, std::string_view type) const;
  [[noreturn]] static void wrong(std::string_view name, const nlohmann::ordered_json& value,
                                 std::string_view type, std::string_view problem);
  static std::int64_t integral_value(std::string_view name, const nlohmann::ordered_json& value,
                                     std::string_view type);

  template <class T>
  static constexpr std::string_view type_name() {
    if constexpr (std::same_as<T, bool>) return "bool";
    else if constexpr (std::same_as<T, std::string>) return "std::string";
    else if constexpr (std::same_as<T, nlohmann::ordered_json>) return "nlohmann::ordered_json";
    else if constexpr (std::same_as<T, int>) return "int";
    else if constexpr (std::same_as<T, double>) return "double";
    else if constexpr (std::same_as<T, float>) return "float";
    else if constexpr (std::integral<T>) return std::is_signed_v<T> ? "a signed integer" : "an unsigned integer";
    else return "a floating-point type";
  }

  template <class T>
  static T convert(std::string_view name, const nlohmann::ordered_json& value) {
    constexpr auto type = type_name<T>();
    if constexpr (std::same_as<T, nlohmann::ordered_json>) {
      return value;
    } else if constexpr (std::same_as<T, bool>) {
      if (!value.is_boolean()) wrong(name, value, type, "not true or false");
      return value.get<bool>();
    } else if constexpr (std::same_as<T, std::string>) {
      if (!value.is_string()) wrong(name, value, type, "not a string");
      return value.get<std::string>();
    } else if constexpr (std::floating_point<T>) {
      if (!value.is_number()) wrong(name, value, type, "not a number");
      return static_cast<T>(value.get<double>());
    } else {
      const std::int64_t wide = integral_value(name, value, type);
      if (std::cmp_less(wide, std::numeric_limits<T>::min()) ||
          std::cmp_greater(wide, std::numeric_limits<T>::max())) {
        wrong(name, value, type, "out of range");
      }
      return static_cast<T>(wide);
    }
  }

  nlohmann::ordered_json values_ = nlohmann::ordered_json::object();
  std::shared_ptr<Warnings> warnings_;  // set by warn_on(); shared: const reads may warn
};

}  // namespace dlx
