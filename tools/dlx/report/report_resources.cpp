// SPDX-License-Identifier: Apache-2.0
#include "report_resources.hpp"

#include <algorithm>
#include <cmath>
#include <map>
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

// A rank's GPU utilisation at each sample: the mean over its GPUs (gpu<k>_util_percent) of the
// samples that have them, by wall time.
record::MetricTable::Series rank_gpu_util(const record::MetricTable& samples) {
  std::map<double, std::pair<double, int>> at;
  for (int k = 0;; ++k) {
    const auto series = samples.series(fmt::format("gpu{}_util_percent", k));
    if (series.values.empty()) break;
    for (std::size_t i = 0; i < series.values.size(); ++i) {
      auto& [sum, count] = at[series.wall_times[i]];
      sum += series.values[i];
      ++count;
    }
  }
  record::MetricTable::Series out;
  for (const auto& [wall, sum_count] : at) {
    out.wall_times.push_back(wall);
    out.values.push_back(sum_count.first / sum_count.second);
  }
  return out;
}

double largest_gpu_memory(const record::MetricTable& samples) {
  double most = 0;
  for (int k = 0;; ++k) {
    const auto series = samples.series(fmt::format("gpu{}_memory_bytes", k));
    if (series.values.empty()) break;
    most = std::max(most, *std::max_element(series.values.begin(), series.values.end()));
  }
  return most;
}

// The share of a rank's GPU samples under kGpuIdlePercent, and of those, the share in which its
// CPU was saturated (at least 90% of the cores a rank has): a GPU waiting on its input.
constexpr double kGpuIdlePercent = 10;
std::pair<double, double> gpu_idle_shares(const record::MetricTable::Series& gpu, const record::MetricTable::Series& cpu,
                                          double cores_per_rank) {
  std::map<double, double> cpu_at;
  for (std::size_t i = 0; i < cpu.values.size(); ++i) cpu_at[cpu.wall_times[i]] = cpu.values[i];
  std::size_t idle = 0, idle_cpu_bound = 0;
  for (std::size_t i = 0; i < gpu.values.size(); ++i) {
    if (gpu.values[i] >= kGpuIdlePercent) continue;
    ++idle;
    const auto found = cpu_at.find(gpu.wall_times[i]);
    if (found != cpu_at.end() && found->second >= 90 * cores_per_rank) ++idle_cpu_bound;
  }
  if (gpu.values.empty()) return {0, 0};
  return {static_cast<double>(idle) / static_cast<double>(gpu.values.size()),
          idle == 0 ? 0 : static_cast<double>(idle_cpu_bound) / static_cast<double>(idle)};
}

}  // namespace

nlohmann::json trial_resources(const std::vector<record::SystemSeries>& all, std::size_t points, double cores_per_rank) {
  if (all.empty()) return nullptr;
  nlohmann::json ranks = nlohmann::json::array();
  double cpu_mean_sum = 0, cpu_max = 0, mem_peak = 0, gpu_mean_sum = 0, gpu_mem_peak = 0;
  int gpu_ranks = 0;
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
    nlohmann::json rank = {{"rank", series.name.rank}, {"node", series.name.node}, {"attempt", series.name.attempt},
                           {"cpu_mean", round_for_page(mean(cpu.values))}, {"cpu", timed(cpu, points)},
                           {"mem", timed(mem, points)}};
    const auto gpu = rank_gpu_util(series.samples);
    if (!gpu.values.empty()) {
      const auto [idle, idle_cpu_bound] = gpu_idle_shares(gpu, cpu, cores_per_rank);
      rank["gpu"] = timed(gpu, points);
      rank["gpu_mean"] = round_for_page(mean(gpu.values));
      rank["gpu_idle_share"] = round_for_page(idle);
      rank["gpu_idle_cpu_bound_share"] = round_for_page(idle_cpu_bound);
      rank["gpu_samples"] = gpu.values.size();
      if (series.name.attempt == latest_attempt) {
        gpu_mean_sum += mean(gpu.values);
        ++gpu_ranks;
      }
      gpu_mem_peak = std::max(gpu_mem_peak, largest_gpu_memory(series.samples));
    }
    ranks.push_back(std::move(rank));
  }
  nlohmann::json model = {{"ranks", std::move(ranks)}, {"cpu_mean", round_for_page(cpu_mean_sum)},
                          {"cpu_max", round_for_page(cpu_max)}, {"mem_peak", mem_peak}, {"samples", samples}};
  if (gpu_ranks > 0) {
    model["gpu_mean"] = round_for_page(gpu_mean_sum / gpu_ranks);
    model["gpu_mem_peak"] = gpu_mem_peak;
  }
  return model;
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
    // A GPU that waited: idle (under 10%) much of the time, and why it may have.
    for (const auto& rank : ranks) {
      if (!rank.contains("gpu_idle_share") || rank["gpu_samples"].get<std::size_t>() < 10) continue;
      const double idle = rank["gpu_idle_share"].get<double>();
      if (idle < 0.3) continue;
      const bool cpu_bound = rank["gpu_idle_cpu_bound_share"].get<double>() >= 0.5;
      findings.push_back(
          {{"trial", id},
           {"text", fmt::format("trial {}: rank {}'s GPU was idle {:.0f}% of the time {}", id, rank["rank"].get<int>(),
                                100 * idle,
                                cpu_bound ? "while its CPU was saturated: input-bound? (more DataLoader workers, "
                                            "or more cpus_per_task)"
                                          : "with its CPU not saturated: waiting on storage, on the other ranks, "
                                            "or too small a model for the GPU (trials_per_gpu)")}});
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
