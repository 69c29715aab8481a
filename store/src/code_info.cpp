// SPDX-License-Identifier: Apache-2.0
#include "dlx/store/code_info.hpp"

#include <ctime>

#include <fmt/format.h>

#include "dlx/common/durable_file.hpp"

namespace dlx::store {

nlohmann::ordered_json code_info_json(const CodePlan& plan, std::uint64_t bytes_copied, double copy_seconds) {
  nlohmann::ordered_json info;
  info["format_version"] = kCodeInfoFormatVersion;
  info["source"] = plan.root.string();
  info["workdir"] = plan.workdir;
  info["git"] = plan.git.has_value();
  if (plan.git) {
    info["commit"] = plan.git->commit;
    info["branch"] = plan.git->branch;
    info["remote"] = plan.git->remote;
    info["dirty"] = plan.git->dirty;
    info["status"] = plan.git->status;
    info["diff_file"] = plan.git->commit.empty() ? "" : kCodeDiffFileName;
  }
  std::size_t links = 0;
  for (const auto& entry : plan.files) links += entry.symlink ? 1 : 0;
  info["files"] = plan.files.size() - links;
  info["symlinks"] = links;
  info["bytes"] = bytes_copied;
  info["max_size"] = plan.max_size;
  auto skipped = nlohmann::ordered_json::array();
  for (const auto& entry : plan.skipped) skipped.push_back({{"path", entry.path}, {"reason", entry.reason}});
  info["skipped"] = std::move(skipped);
  info["seconds"] = plan.planning_seconds + copy_seconds;
  info["created_unix"] = static_cast<std::int64_t>(std::time(nullptr));
  return info;
}

std::optional<nlohmann::json> read_code_info(const std::filesystem::path& experiment_dir) {
  const auto path = experiment_dir / kCodeInfoFileName;
  std::error_code error;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, error))) return std::nullopt;
  const auto text = read_small_file(path, std::size_t{64} << 20);
  auto info = nlohmann::json::parse(text, nullptr, false);
  if (info.is_discarded() || !info.is_object()) {
    throw Error(fmt::format("{} is not valid JSON (it is written once at submission; was it edited?)", path.string()));
  }
  return info;
}

std::string describe_code(const nlohmann::json& info) {
  if (!info.value("git", false)) return "not in git";
  const std::string commit = info.value("commit", "");
  const std::string shown = commit.empty() ? "no commit" : commit.substr(0, 12);
  return info.value("dirty", false) ? shown + " (dirty)" : shown;
}

}  // namespace dlx::store
