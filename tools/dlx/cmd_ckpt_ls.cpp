// SPDX-License-Identifier: Apache-2.0
// dlx ckpt ls TRIAL_OR_EXP [--json]: every checkpoint with its size, whether it is valid (and why
// not) and which retention rules keep it, under the experiment's policy.
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cmd_ckpt.hpp"
#include "json_output.hpp"
#include "options.hpp"
#include "table.hpp"

namespace dlx::cli::ckpt {

CommandLine ls_command_line() {
  namespace po = boost::program_options;
  CommandLine command("ckpt ls", "TRIAL_DIR|EXPERIMENT_DIR|JOBID [--json]",
                      "Every checkpoint of one trial, or of all an experiment's trials, with its size,\n"
                      "whether it is valid (its metadata and index; why not) and which retention rules\n"
                      "keep it under the experiment's policy, the searcher's references included: what\n"
                      "dlx ckpt gc would delete is marked. dlx ckpt verify reads every byte.",
                      "dlx ckpt ls 42\n"
                      "dlx ckpt ls /shared/dlx/alice/logreg-grid/trials/3 --json");
  command.options.add_options()("json", "print JSON");
  command.operands.add_options()("target", po::value<std::string>()->required(), "trial or experiment");
  command.positional.add("target", 1);
  return command;
}

int run_ls(const Arguments& arguments) {
  auto values = parse_options(arguments, ls_command_line());

  auto target = locate_target(values["target"].as<std::string>());
  auto policy = policy_of(target.experiment_dir);
  // A listing is still useful when the journal cannot be replayed: say so and mark nothing.
  std::map<std::int64_t, std::vector<checkpoint::CheckpointStatus>> plan;
  try {
    plan = retention_plan(target);
  } catch (const Error& error) {
    fmt::print(stderr, "dlx ckpt ls: warning: {}; checkpoints the searcher references are not "
               "marked\n", error.what());
    plan = checkpoint::plan_experiment_retention(target.experiment_dir, policy);
  }
  if (target.trial_id) std::erase_if(plan, [&](const auto& t) { return t.first != *target.trial_id; });

  if (values.count("json")) {
    auto out = nlohmann::ordered_json::array();
    for (const auto& [trial, files] : plan)
      for (const auto& f : files)
        out.push_back({{"trial", trial}, {"step", f.step}, {"path", f.path.string()},
                       {"bytes", f.file_bytes}, {"valid", f.valid}, {"problem", f.problem},
                       {"kept_by", f.kept_by}, {"referenced_by", f.referenced_by},
                       {"metric", f.metric_value ? nlohmann::ordered_json(*f.metric_value)
                                                 : nlohmann::ordered_json()}});
    std::cout << json_text(out) << "\n";
    return 0;
  }
  fmt::print("# {}\n", target.experiment_dir.string());
  fmt::print("# policy: keep_latest {}, keep_best {}, keep_experiment_best {}, metric {} ({})\n",
             policy.keep_latest, policy.keep_best, policy.keep_experiment_best,
             policy.metric.empty() ? "-" : policy.metric,
             policy.smaller_is_better ? "smaller is better" : "larger is better");
  Table table({"trial", "step", "size", "valid", policy.metric.empty() ? "metric" : policy.metric,
               "kept by"});
  std::vector<std::string> problems;
  std::size_t count = 0, invalid = 0;
  for (const auto& [trial, files] : plan) {
    for (const auto& f : files) {
      ++count;
      if (!f.valid) {
        ++invalid;
        problems.push_back(fmt::format("# trial {} step {}: {}", trial, f.step, f.problem));
      }
      table.add_row({std::to_string(trial), std::to_string(f.step), human_bytes(f.file_bytes),
                     f.valid ? "yes" : "NO",
                     f.metric_value ? fmt::format("{:.6g}", *f.metric_value) : "-",
                     f.valid ? (f.kept_by.empty() ? "(gc deletes)" : kept_by_text(f))
                             : "(invalid)"});
    }
  }
  std::cout << table.render();
  for (const auto& line : problems) fmt::print("{}\n", line);
  fmt::print("# {} checkpoints, {} invalid (validity here: metadata and index; "
             "`dlx ckpt verify` reads every byte)\n",
             count, invalid);
  return 0;
}

}  // namespace dlx::cli::ckpt
