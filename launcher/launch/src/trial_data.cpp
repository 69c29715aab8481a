// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/trial_data.hpp"

#include <chrono>

#include <fmt/format.h>

#include "dlx/common/byte_size.hpp"

namespace dlx::launch {

namespace fs = std::filesystem;

data::LocalRootContext local_root_context(const env::TaskPlacement& placement, const env::EnvMap& env) {
  return data::local_root_context([&env](const char* name) { return env::lookup(env, name); }, placement.node_name);
}

fs::path data_local_root(const config::DataConfig& data, const data::LocalRootContext& local) {
  if (data.to) return data::expand_local_dir(*data.to, local.node_name, local.user_name, "data.to");
  return site_local_root(local);
}

fs::path site_local_root(const data::LocalRootContext& local) { return data::resolve_local_root(local); }

std::string describe_staged(const data::StagedDataset& dataset, const std::string& node_name, double elapsed) {
  if (dataset.reused) {
    return fmt::format("dlx-launch: data on {}: {}: reused {} (cached; found in {:.3f} s) in {}", node_name,
                       dataset.source.string(), format_byte_size(dataset.bytes), elapsed, dataset.dir.string());
  }
  const double rate = dataset.seconds > 0 ? static_cast<double>(dataset.bytes) / dataset.seconds : 0;
  return fmt::format("dlx-launch: data on {}: {}: copied {} in {:.2f} s ({}/s) to {}", node_name,
                     dataset.source.string(), format_byte_size(dataset.bytes), dataset.seconds,
                     format_byte_size(static_cast<std::uint64_t>(rate)), dataset.dir.string());
}

std::optional<TrialData> TrialData::stage(const config::DataConfig& data, const data::LocalRootContext& local,
                                          std::FILE* log) {
  if (data.stage.empty()) return std::nullopt;
  data::StageRequest request;
  for (const auto& source : data.stage) request.sources.emplace_back(source);
  request.local_root = data_local_root(data, local);
  request.checksum = data.checksum;
  request.policy.max_bytes = data.max_bytes;
  request.policy.high_watermark = data.high_watermark;
  request.policy.low_watermark = data.low_watermark;
  const auto started = std::chrono::steady_clock::now();
  TrialData result(data::StagedData::stage(request, nullptr));
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (log) {
    for (const auto& dataset : result.staged_.datasets()) {
      fmt::print(log, "{}\n", describe_staged(dataset, local.node_name, elapsed));
    }
    std::fflush(log);
  }
  return result;
}

EnvVars TrialData::variables() const {
  const auto& datasets = staged_.datasets();
  std::string all;
  for (const auto& dataset : datasets) all += (all.empty() ? "" : ":") + dataset.dir.string();
  EnvVars vars{{"DLX_DATA_DIRS", all}};
  if (datasets.size() == 1) vars.emplace_back("DLX_DATA_DIR", datasets.front().dir.string());
  return vars;
}

}  // namespace dlx::launch
