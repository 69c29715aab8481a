// SPDX-License-Identifier: Apache-2.0
#include "report_resources.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "dlx/common/byte_size.hpp"
#include "report_downsample.hpp"
#include "report_story.hpp"

namespace dlx::cli::report {

namespace {

// A series against time: milliseconds as the downsampler's steps, unix seconds on the page.
nlohmann::json timed(const record::MetricTable::Series& series, std::size_t points) {
  std::vector<std::int64_t> millis;
  millis.reserve(series.wall_times.size());
  for (const double wall : series.wall_times) millis.push_back(static_cast<std::int64_t>(std::llround(wall * 1000)));
  const auto curve = downsample_min_max(millis, series.values, {}, points);
  nlohmann::json times = nlohmann::json::array(), values = nlohmann::json::array();
  for (std::size_t i = 0; i < curve.steps.size(); ++i) {
    if (std::isnan(curve.values[i])) continue;
    times.push_back(static_cast<double>(curve.steps[i]) / 1000);
    values.push_back(round_for_page(curve.values[i]));
  }
  return {{"t", std::move(times)}, {"v", std::move(values)}};
}

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (const double value : values) sum += value;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

// Slurm's --mem (MiB without a unit; K, M, G, T) in bytes.
std::optional<double> memory_limit_bytes(const std::optional<std::string>& mem_per_node) {
  if (!mem_per_node || mem_per_node->empty()) return std::nullopt;
  double value = 0;
  try {
    value = std::stod(*mem_per_node);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  switch (mem_per_node->back()) {
    case 'K': case 'k': return value * 1024;
    case 'G': case 'g': return value * 1024 * 1024 * 1024;
    case 'T': case 't': return value * 1024 * 1024 * 1024 * 1024;
    default: return value * 1024 * 1024;  // MiB, Slurm's default unit
  }
}

}  // namespace

nlohmann::json trial_resources(const std::vector<record::SystemSeries>& all, std::size_t points) {
  if (all.empty()) return nullptr;
  nlohmann::json ranks = nlohmann::json::array();
  double cpu_mean_sum = 0, cpu_max = 0, mem_peak = 0;
  std::size_t samples = 0;
  int latest_attempt = 0;
  for (const auto& series : all) latest_attempt = std::max(latest_attempt, series.name.attempt);
  for (const auto& series : all) {
    const auto cpu = series.samples.series("cpu_percent");
    const auto mem = series.samples.series("memory_bytes");
    samples += series.samples.rows();
    if (series.name.attempt == latest_attempt) cpu_mean_sum += mean(cpu.values);
    if (!cpu.values.empty()) cpu_max = std::max(cpu_max, *std::max_element(cpu.values.begin(), cpu.values.end()));
    if (!mem.values.empty()) mem_peak = std::max(mem_peak, *std::max_element(mem.values.begin(), mem.values.end()));
    ranks.push_back({{"rank", series.name.rank}, {"node", series.name.node}, {"attempt", series.name.attempt},
                     {"cpu_mean", round_for_page(mean(cpu.values))}, {"cpu", timed(cpu, points)},
                     {"mem", timed(mem, points)}});
  }
  return {{"ranks", std::move(ranks)}, {"cpu_mean", round_for_page(cpu_mean_sum)}, {"cpu_max", round_for_page(cpu_max)},
          {"mem_peak", mem_peak}, {"samples", samples}};
}

nlohmann::json resources_summary(const nlohmann::json& trials, const config::Experiment& experiment) {
  nlohmann::json findings = nlohmann::json::array();
  const auto& resources = experiment.resources;
  const auto limit = memory_limit_bytes(resources.mem_per_node);
  std::size_t sampled = 0;
  std::optional<std::pair<int, double>> most_memory;
  for (const auto& trial : trials) {
    const auto& model = trial["resources"];
    if (model.is_null()) continue;
    ++sampled;
    const int id = trial["id"].get<int>();
    const double cpu_mean = model["cpu_mean"].get<double>();
    const double mem_peak = model["mem_peak"].get<double>();
    if (resources.cpus_per_task) {
      const double cores = static_cast<double>(*resources.cpus_per_task * resources.tasks_per_node * resources.nodes_per_trial);
      if (model["samples"].get<std::size_t>() >= 10 && cpu_mean < 25 * cores) {
        findings.push_back({{"trial", id},
                            {"text", fmt::format("trial {} used {:.0f}% of one core on average, of the {:.0f} cores it "
                                                 "asked for: waiting on data or on other ranks, or ask for fewer "
                                                 "(cpus_per_task)",
                                                 id, cpu_mean, cores)}});
      }
    }
    if (limit && mem_peak > 0.9 * *limit) {
      findings.push_back({{"trial", id},
                          {"text", fmt::format("trial {}'s memory peaked at {}, {:.0f}% of its limit (mem_per_node {}): "
                                               "close to being killed for memory",
                                               id, format_byte_size(static_cast<std::uint64_t>(mem_peak)),
                                               100 * mem_peak / *limit, *resources.mem_per_node)}});
    }
    // A rank far below the others of the same run.
    int attempt = 0;
    for (const auto& rank : model["ranks"]) attempt = std::max(attempt, rank["attempt"].get<int>());
    nlohmann::json ranks = nlohmann::json::array();  // of the latest run
    for (const auto& rank : model["ranks"]) {
      if (rank["attempt"].get<int>() == attempt) ranks.push_back(rank);
    }
    if (ranks.size() >= 2) {
      std::vector<double> means;
      for (const auto& rank : ranks) means.push_back(rank["cpu_mean"].get<double>());
      std::vector<double> sorted = means;
      std::sort(sorted.begin(), sorted.end());
      const double median = sorted[sorted.size() / 2];
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        if (median >= 20 && means[i] < 0.5 * median) {
          findings.push_back({{"trial", id},
                              {"text", fmt::format("trial {}: rank {} on {} used {:.0f}% of a core against {:.0f}% for "
                                                   "the median rank: it waited on the others, or they on it",
                                                   id, ranks[i]["rank"].get<int>(), ranks[i]["node"].get<std::string>(),
                                                   means[i], median)}});
        }
      }
    }
    if (!most_memory || mem_peak > most_memory->second) most_memory = {id, mem_peak};
  }
  if (most_memory && sampled >= 2) {
    findings.push_back({{"trial", most_memory->first},
                        {"text", fmt::format("trial {} used the most memory: {} at its peak", most_memory->first,
                                             format_byte_size(static_cast<std::uint64_t>(most_memory->second)))}});
  }
  return {{"trials", sampled}, {"findings", std::move(findings)}};
}

}  // namespace dlx::cli::report
