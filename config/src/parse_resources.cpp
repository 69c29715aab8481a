// SPDX-License-Identifier: Apache-2.0
// The `resources`, `checkpoint` and `environment` sections: what a trial asks of Slurm and of
// its surroundings. Values use Slurm's own syntax where they become sbatch options.
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "dlx/config/display_text.hpp"
#include "dlx/config/names.hpp"
#include "dlx/config/syntax.hpp"
#include "parse_sections.hpp"

namespace dlx::config::detail {

namespace {

// A string value in Slurm's syntax for `key`: its length first (kMaxValueLength), then `valid`.
std::optional<std::string> slurm_value(const MappingReader& section, const char* key, bool (*valid)(std::string_view),
                                       const char* fix) {
  auto value = section.optional_string(key);
  if (!value) return value;
  if (value->size() > kMaxValueLength) {
    section.fail(section.raw(key), section.path(key),
                 fmt::format("is {} characters long, more than the limit of {}: '{}'", value->size(),
                             kMaxValueLength, abbreviated(*value, 32)),
                 fix);
  }
  if (!valid(*value)) {
    section.fail(section.raw(key), section.path(key), fmt::format("'{}' is not valid", abbreviated(*value)), fix);
  }
  return value;
}

// trials_per_gpu: N, or the same as gpus_per_trial: 1/N (Ray's and Slurm's way to say it), and
// trials_per_task. Whether the trial has GPUs to share, and one process per trial, are checked
// across sections (parse_rules.cpp): gpus_per_node may come from the site's defaults.
void read_packing(const MappingReader& section, Resources& into) {
  constexpr int kMostPerGpu = 64;
  if (section.has("trials_per_gpu") && section.has("gpus_per_trial")) {
    section.fail(section.raw("gpus_per_trial"), section.path("gpus_per_trial"),
                 "says again what trials_per_gpu says (gpus_per_trial: 1/N is trials_per_gpu: N)", "keep one of them");
  }
  if (auto per_gpu = section.optional_integer_in("trials_per_gpu", 1, kMostPerGpu,
                                                 "give how many trials share one GPU at once (e.g. 4)")) {
    into.trials_per_gpu = static_cast<int>(*per_gpu);
  }
  if (section.has("gpus_per_trial")) {
    const auto fail = [&](const std::string& got) {
      section.fail(section.raw("gpus_per_trial"), section.path("gpus_per_trial"),
                   fmt::format("must be 1/N of a GPU for N from 1 to {} (1/4, or 1, 0.5, 0.25, 0.125, ...), got {}",
                               kMostPerGpu, got),
                   "give a fraction 1/N, or trials_per_gpu: N; a trial of whole GPUs uses gpus_per_node");
    };
    const YAML::Node value = section.raw("gpus_per_trial");
    const std::string text = value.IsScalar() ? value.Scalar() : std::string();
    double whole = 0;
    if (text.starts_with("1/")) {  // "1/4", as a fraction is written
      int n = 0;
      const auto [end, error] = std::from_chars(text.data() + 2, text.data() + text.size(), n);
      if (error != std::errc() || end != text.data() + text.size() || n < 1 || n > kMostPerGpu) fail(abbreviated(text));
      whole = n;
    } else {
      const double share = *section.optional_number("gpus_per_trial");
      const double per_gpu = share > 0 ? 1.0 / share : 0;
      whole = std::round(per_gpu);
      if (!(share > 0 && share <= 1) || whole > kMostPerGpu || std::abs(per_gpu - whole) > 1e-6 * whole) {
        fail(fmt::format("{}", share));
      }
    }
    into.trials_per_gpu = static_cast<int>(whole);
  }
  if (auto per_task = section.optional_integer_in("trials_per_task", 1, 256,
                                                  "give how many trials one array task runs at once (e.g. 4)")) {
    into.trials_per_task = static_cast<int>(*per_task);
  }
  if (auto mps = section.optional_boolean("mps")) into.mps = *mps;
  if (auto shards = section.optional_integer_in("shards_per_gpu", 1, 4096,
                                                "give the gres/shard count of each GPU in the cluster's gres.conf")) {
    into.shards_per_gpu = static_cast<int>(*shards);
  }
}

}  // namespace

const std::vector<std::string>& resource_keys() {
  static const std::vector<std::string> keys{"nodes_per_trial", "tasks_per_node", "gpus_per_node", "cpus_per_task",
                                             "mem_per_node",    "time_limit",     "partition",
                                             "sample_period",   "max_array_tasks", "trials_per_gpu",
                                             "gpus_per_trial",  "trials_per_task", "shards_per_gpu",
                                             "mps"};
  return keys;
}

void parse_resources(const MappingReader& section, Resources& into) {
  section.allow_only(resource_keys());
  read_resources(section, into);
}

void read_resources(const MappingReader& section, Resources& into) {
  if (auto nodes = section.optional_integer_in("nodes_per_trial", 1, 100'000, "give the number of nodes each trial uses")) {
    into.nodes_per_trial = static_cast<int>(*nodes);
  }
  if (auto tasks = section.optional_integer_in("tasks_per_node", 1, 4096,
                                               "give the number of ranks per node (usually one per GPU)")) {
    into.tasks_per_node = static_cast<int>(*tasks);
  }
  if (auto gpus = section.optional_integer_in("gpus_per_node", 0, 64, "give the GPUs each node of a trial uses")) {
    into.gpus_per_node = static_cast<int>(*gpus);
  }
  if (auto cpus = section.optional_integer_in("cpus_per_task", 1, 4096, "give the CPU cores per rank")) {
    into.cpus_per_task = static_cast<int>(*cpus);
  }
  if (auto value = slurm_value(section, "mem_per_node", is_slurm_memory, "use Slurm's --mem syntax, e.g. 64G or 4096 (MiB)")) {
    into.mem_per_node = value;
  }
  if (auto value = slurm_value(section, "time_limit", is_slurm_time,
                            "use Slurm's --time syntax: MINUTES, HH:MM:SS or DAYS-HH[:MM[:SS]]")) {
    into.time_limit = value;
  }
  if (auto value = slurm_value(section, "partition", is_partition_name, "give a partition name as sinfo shows it")) {
    into.partition = value;
  }
  if (auto seconds = section.optional_number("sample_period")) {
    if (!(*seconds == 0 || (*seconds >= 0.1 && *seconds <= 3600))) {
      section.fail(section.raw("sample_period"), section.path("sample_period"),
                   fmt::format("must be 0 or between 0.1 and 3600 seconds, got {}", *seconds),
                   "give the seconds between two samples of the trial's CPU, memory and I/O (0: none)");
    }
    into.sample_period_s = *seconds;
  }
  if (auto tasks = section.optional_integer_in("max_array_tasks", 1, 4'000'000,
                                               "give the most array tasks the experiment may use (each then runs "
                                               "several trials in turn)")) {
    into.max_array_tasks = static_cast<int>(*tasks);
  }
  read_packing(section, into);
}

void parse_checkpoint(const MappingReader& section, CheckpointPolicy& into) {
  section.allow_only({"period", "keep_latest", "keep_best", "keep_experiment_best", "async"});
  if (section.has("period")) {
    auto period = section.mapping("period");
    period.allow_only({"batches", "minutes"});
    if (period.node().size() != 1) {
      section.fail(section.raw("period"), "checkpoint.period", "must give exactly one of batches, minutes",
                   "e.g. period: {batches: 500} or period: {minutes: 10}");
    }
    into.period_batches.reset();
    into.period_minutes.reset();
    if (period.has("batches")) {
      into.period_batches = period.optional_integer_in("batches", 1, std::int64_t{1} << 50, "a positive number of batches");
    } else {
      double minutes = *period.optional_number("minutes");
      if (!(minutes > 0)) {
        period.fail(period.raw("minutes"), "checkpoint.period.minutes", fmt::format("must be > 0, got {}", minutes),
                    "give a positive number of minutes");
      }
      into.period_minutes = minutes;
    }
  }
  auto count = [&](const char* key, int& field) {
    if (auto value = section.optional_integer_in(key, 0, 1000, "give how many checkpoints to keep")) {
      field = static_cast<int>(*value);
    }
  };
  count("keep_latest", into.keep_latest);
  count("keep_best", into.keep_best);
  count("keep_experiment_best", into.keep_experiment_best);
  if (auto async = section.optional_boolean("async")) into.async = *async;
}

void add_variable(const MappingReader& section, const YAML::Node& at, const std::string& path, const std::string& key,
                  const std::string& value, std::vector<std::pair<std::string, std::string>>& into) {
  if (key.size() > kMaxKeyLength) {
    section.fail(at, path, fmt::format("is {} characters long, more than the limit of {}", key.size(), kMaxKeyLength),
                 "use a shorter variable name");
  }
  if (!is_variable_name(key)) {
    section.fail(at, path, "is not a valid variable name", "use letters, digits and '_', not starting with a digit");
  }
  if (key.rfind("DLX_", 0) == 0 || key.rfind("SLURM_", 0) == 0) {
    section.fail(at, path, "is reserved (DLX_ and SLURM_ variables are set by dlx and Slurm)", "choose another name");
  }
  auto existing = std::find_if(into.begin(), into.end(), [&](const auto& pair) { return pair.first == key; });
  if (existing != into.end()) {
    existing->second = value;  // the experiment file overrides a site default
  } else {
    into.emplace_back(key, value);
  }
}

void parse_environment(const MappingReader& section, std::vector<std::pair<std::string, std::string>>& into) {
  for (const auto& entry : section.node()) {
    const std::string key = entry.first.Scalar();
    const std::string path = "environment." + key;
    if (!entry.second.IsScalar()) {
      std::vector<std::pair<std::string, std::string>> name_only;  // the name's own problems first
      add_variable(section, entry.first, path, key, "", name_only);
      section.fail(entry.second, path, "must be a scalar value", "write NAME: value");
    }
    add_variable(section, entry.first, path, key, entry.second.Scalar(), into);
  }
}

}  // namespace dlx::config::detail
