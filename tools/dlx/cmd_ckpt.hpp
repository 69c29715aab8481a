#pragma once
// `dlx ckpt`: one function per subcommand (cmd_ckpt_*.cpp) and what they share.
#include <filesystem>
#include <optional>

#include "commands.hpp"
#include "dlx/checkpoint/retention.hpp"

namespace dlx::cli::ckpt {

int run_ls(const Arguments& arguments);
int run_verify(const Arguments& arguments);
int run_show(const Arguments& arguments);
int run_gc(const Arguments& arguments);

// What `dlx ckpt ls/gc` was pointed at: an experiment directory, or one trial of it.
struct Target {
  std::filesystem::path experiment_dir;
  std::optional<std::int64_t> trial_id;  // nullopt: every trial
};
Target locate_target(const std::string& trial_or_experiment);

// The retention policy of the experiment's frozen snapshot (defaults when there is none).
checkpoint::RetentionPolicy policy_of(const std::filesystem::path& experiment_dir);

std::string human_bytes(std::uint64_t bytes);

}  // namespace dlx::cli::ckpt
