// SPDX-License-Identifier: Apache-2.0
#include "code_snapshot_step.hpp"

#include <fmt/format.h>

#include "dlx/common/byte_size.hpp"
#include "dlx/store/code_info.hpp"
#include "plugin_state.hpp"

namespace dlx::spank {

namespace fs = std::filesystem;

fs::path job_working_dir(const SbatchOptions& sbatch) {
  std::error_code error;
  const fs::path here = fs::current_path(error);
  if (auto chdir = sbatch.is_set("chdir") ? sbatch.get("chdir") : std::nullopt; chdir && !chdir->empty()) {
    return here / *chdir;  // an absolute --chdir replaces `here`
  }
  return here;
}

fs::path trial_start_dir(const std::optional<store::CodePlan>& plan, const SbatchOptions& sbatch) {
  return plan ? plan->root / plan->workdir : job_working_dir(sbatch);
}

std::optional<store::CodePlan> plan_code(config::Experiment& experiment, const SbatchOptions& sbatch) {
  if (!experiment.code.snapshot) return std::nullopt;
  store::CodeRequest request;
  request.submit_dir = job_working_dir(sbatch);
  request.max_size = experiment.code.max_size;
  if (experiment.code.dir) {
    const fs::path experiment_dir = fs::absolute(fs::path(experiment.source_file)).parent_path();
    request.dir = (experiment_dir / *experiment.code.dir).lexically_normal();
    experiment.code.dir = request.dir->string();
  }
  std::string not_yours;
  auto plan = store::plan_code_snapshot(request, &not_yours);
  if (!plan && !not_yours.empty()) {
    report_info(fmt::format("dlx: no code snapshot: {}", not_yours));
  } else if (!plan) {
    report_info(fmt::format("dlx: no code snapshot: {} is not in a git work tree, so trials run the files as they "
                            "are when they start (name the code with code: {{dir: PATH}} in {}, or silence this "
                            "with code: {{snapshot: false}})",
                            request.submit_dir.string(), experiment.source_file));
  }
  return plan;
}

void write_code(store::CodePlan& plan, const fs::path& experiment_dir) {
  store::write_code_snapshot(plan, experiment_dir);
  const std::size_t links = static_cast<std::size_t>(
      std::count_if(plan.files.begin(), plan.files.end(), [](const auto& entry) { return entry.symlink; }));
  std::string origin = "not in git";
  if (plan.git) {
    origin = plan.git->commit.empty() ? "no commit yet" : "commit " + plan.git->commit.substr(0, 12);
    if (plan.git->dirty) origin += ", dirty";
  }
  report_info(fmt::format("dlx: code snapshot: {} files ({}) from {} ({}) in {}/{}", plan.files.size() - links,
                          format_byte_size(plan.bytes), plan.root.string(), origin, experiment_dir.string(),
                          store::kCodeDirName));
  // What a script would open beside itself and no trial will find: said now, not at the first
  // trial's crash (traindata.pt under a *.pt line of .gitignore).
  if (const auto left = store::left_out_at_start(plan); !left.empty()) {
    constexpr std::size_t kNamed = 6;
    std::string names;
    for (std::size_t i = 0; i < left.size() && i < kNamed; ++i) {
      const auto& entry = left[i];
      names += fmt::format("{}{}{}", i ? ", " : "", entry.name,
                           entry.directory ? "/" : fmt::format(" ({})", format_byte_size(entry.bytes)));
    }
    if (left.size() > kNamed) names += fmt::format(" and {} more", left.size() - kNamed);
    report_info(fmt::format("dlx: code snapshot: left out of it (.gitignore or .dlxignore), so no trial finds them "
                            "in its working directory: {}; read data from an absolute path or stage it with "
                            "data: stage:, or commit what the trainer needs",
                            names));
  }
  if (!plan.skipped.empty()) {
    report_info(fmt::format("dlx: code snapshot: {} entries not copied (e.g. {}: {}); all are listed in {}/{}",
                            plan.skipped.size(), plan.skipped.front().path, plan.skipped.front().reason,
                            experiment_dir.string(), store::kCodeInfoFileName));
  }
}

}  // namespace dlx::spank
