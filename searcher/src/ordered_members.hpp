// SPDX-License-Identifier: Apache-2.0
#pragma once
// An ordered_json object built member by member as `object[name] = value` would build it (a
// repeated name keeps its first place and takes the last value), in time linear in the number of
// members: ordered_json's own operator[] looks for the name among the members one by one, so a
// whole object of N names costs N^2 / 2 comparisons (a random point of 10,000 hyperparameters, a
// crafted journal's list of 100,000 pairs). The names must outlive the builder (it keeps views).
#include <cstddef>
#include <iterator>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

namespace dlx::searcher::detail {

class OrderedMembers {
 public:
  explicit OrderedMembers(std::size_t expected = 0) {
    members().reserve(expected);
    place_.reserve(expected);
  }

  void set(std::string_view name, nlohmann::ordered_json value) {
    auto& list = members();
    if (const auto [at, added] = place_.emplace(name, list.size()); added) {
      list.emplace_back(std::string(name), std::move(value));
    } else {
      std::next(list.begin(), static_cast<std::ptrdiff_t>(at->second))->second = std::move(value);
    }
  }

  nlohmann::ordered_json take() && { return std::move(object_); }

 private:
  nlohmann::ordered_json::object_t& members() { return object_.get_ref<nlohmann::ordered_json::object_t&>(); }

  nlohmann::ordered_json object_ = nlohmann::ordered_json::object();
  std::unordered_map<std::string_view, std::size_t> place_;
};

}  // namespace dlx::searcher::detail
