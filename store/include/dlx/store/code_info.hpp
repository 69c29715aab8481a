// SPDX-License-Identifier: Apache-2.0
#pragma once
// <experiment>/code.json: what the code snapshot holds and where it came from (written last, so
// its presence means code/ is complete). Read by dlx-launch, `dlx status`, `dlx report` and the
// experiment.h5 writer; its fields are listed in docs/file-format.md.
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "dlx/store/code_snapshot.hpp"

namespace dlx::store {

inline constexpr int kCodeInfoFormatVersion = 1;

nlohmann::ordered_json code_info_json(const CodePlan& plan, std::uint64_t bytes_copied, double copy_seconds);

// The parsed code.json, or nullopt when the experiment has no (complete) snapshot. Throws
// SystemError or Error for a file that exists but cannot be read or parsed.
std::optional<nlohmann::json> read_code_info(const std::filesystem::path& experiment_dir);

// "3f2a9c1d0b7e (dirty)", "3f2a9c1d0b7e", "no commit (dirty)" or "not in git", for humans.
std::string describe_code(const nlohmann::json& info);

}  // namespace dlx::store
