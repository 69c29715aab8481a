// SPDX-License-Identifier: Apache-2.0
#include "gpu_request_check.hpp"

#include <cctype>
#include <charconv>
#include <cstdint>

#include <fmt/format.h>

namespace dlx::spank {

namespace {

// "4", "2K" (Slurm's suffixes count in 1024s); nullopt for anything else.
std::optional<long long> gres_number(std::string_view text) {
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || value < 0) return std::nullopt;
  std::string_view suffix(end, static_cast<std::size_t>(text.data() + text.size() - end));
  if (suffix.empty()) return value;
  if (suffix.size() != 1) return std::nullopt;
  constexpr std::string_view kSuffixes = "KMGTP";
  const auto power = kSuffixes.find(suffix.front());
  if (power == std::string_view::npos) return std::nullopt;
  for (std::size_t i = 0; i <= power; ++i) {
    if (value > INT64_MAX / 1024) return std::nullopt;
    value *= 1024;
  }
  return value;
}

// One entry of a node's list, without its "(S:0-1)" or "(IDX:...)": "name", "name:count" or
// "name:type[:...]:count". The count of `name` it holds, 0 for another name, nullopt unreadable.
std::optional<long long> entry_count(std::string_view entry, std::string_view name) {
  if (const auto open = entry.find('('); open != std::string_view::npos) entry = entry.substr(0, open);
  const auto first = entry.find(':');
  if (entry.substr(0, first) != name) return 0;
  if (first == std::string_view::npos) return 1;  // "Gres=gpu": one
  const auto last = entry.rfind(':');
  if (auto count = gres_number(entry.substr(last + 1))) return count;
  // "gpu:a100": a type (a name, so starting with a letter) without a count is one of it.
  const auto type = entry.substr(last + 1);
  const bool named_type = !type.empty() && std::isalpha(static_cast<unsigned char>(type.front()));
  return last == first && named_type ? std::optional<long long>(1) : std::nullopt;
}

std::string plural(long long count, const char* word) {
  return fmt::format("{} {}{}", count, word, count == 1 ? "" : "s");
}

struct Request {
  std::string gres;      // "gpu" or "shard"
  long long per_node = 0;
  std::string asks;      // "resources.gpus_per_node: 3 asks for 3 GPUs on each node"
  std::string thing;     // "GPU", "shard"
};

std::optional<Request> request_of(const config::Experiment& experiment) {
  const auto& resources = experiment.resources;
  if (config::shares_gpus_by_shards(resources)) {
    const int shards = config::shards_per_trial(resources);
    return Request{"shard", shards,
                   fmt::format("resources.shards_per_gpu: {} with trials_per_gpu: {} asks for {} (gres/shard) on "
                               "each node",
                               resources.shards_per_gpu.value_or(0), resources.trials_per_gpu.value_or(0),
                               plural(shards, "shard")),
                   "shard"};
  }
  const int gpus = resources.gpus_per_node.value_or(0);
  if (gpus <= 0) return std::nullopt;
  if (const auto slots = experiment.determined.slots_per_trial) {
    const int nodes = resources.nodes_per_trial;
    return Request{"gpu", gpus,
                   fmt::format("resources.slots_per_trial: {} asks for {}{}", *slots, plural(gpus, "GPU"),
                               nodes > 1 ? fmt::format(" on each of {} nodes", nodes) : std::string(" on one node")),
                   "GPU"};
  }
  return Request{"gpu", gpus,
                 fmt::format("resources.gpus_per_node: {} asks for {} on each node", gpus, plural(gpus, "GPU")),
                 "GPU"};
}

// What to write instead, by the key the user wrote and whether the cluster has any at all.
std::string fix_for(const config::Experiment& experiment, const Request& request, long long most) {
  if (request.gres == "shard") {
    return most == 0 ? "remove shards_per_gpu: trials_per_gpu then shares the GPUs of one array task"
                     : "check shards_per_gpu against the shards per GPU in the cluster's gres.conf";
  }
  if (experiment.determined.slots_per_trial) {
    return most == 0 ? "dlx reads slots as GPUs: use slots_per_trial: 0 for a CPU trial, or "
                       "resources: {tasks_per_node: N} for N CPU processes"
                     : fmt::format("use slots_per_trial: {} or fewer, or a multiple of {} with slurm: "
                                   "{{slots_per_node: {}}} to spread the trial over nodes",
                                   most, most, most);
  }
  return most == 0 ? "remove gpus_per_node for a CPU trial (resources: {tasks_per_node: N} for N processes), or "
                     "submit to a cluster with GPUs"
                   : fmt::format("use gpus_per_node: {} or fewer; a trial of more GPUs spans nodes (nodes_per_trial)",
                                 most);
}

}  // namespace

std::optional<long long> gres_count(std::string_view gres, std::string_view name) {
  long long total = 0;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= gres.size(); ++i) {
    const char c = i < gres.size() ? gres[i] : ',';
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c != ',' || depth > 0) continue;
    const auto entry = gres.substr(start, i - start);
    start = i + 1;
    if (entry.empty() || entry == "(null)") continue;
    const auto count = entry_count(entry, name);
    if (!count) return std::nullopt;
    total += *count;
  }
  return total;
}

std::optional<std::string> unplaceable_gpu_request(const config::Experiment& experiment,
                                                   const std::vector<NodeGres>& nodes) {
  const auto request = request_of(experiment);
  if (!request || nodes.empty()) return std::nullopt;
  long long most = 0;
  const NodeGres* holder = nullptr;
  for (const auto& node : nodes) {
    const auto count = gres_count(node.gres, request->gres);
    if (!count) return std::nullopt;
    if (*count >= request->per_node) return std::nullopt;
    if (*count > most) {
      most = *count;
      holder = &node;
    }
  }
  const std::string lack = holder == nullptr
                               ? fmt::format("no node of this cluster has a {}", request->thing)
                               : fmt::format("the most one node of this cluster has is {} ({})", most, holder->node);
  return fmt::format("{}, but {}: {}", request->asks, lack, fix_for(experiment, *request, most));
}

}  // namespace dlx::spank
