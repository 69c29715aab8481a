// SPDX-License-Identifier: Apache-2.0
#pragma once
// `dlx ckpt`: one function per subcommand (cmd_ckpt_*.cpp) and what they share.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "dlx/checkpoint/retention.hpp"
#include "options.hpp"

namespace dlx::cli::ckpt {

int run_ls(const Arguments& arguments);
int run_verify(const Arguments& arguments);
int run_show(const Arguments& arguments);
int run_gc(const Arguments& arguments);

// What each accepts and says of itself (dlx ckpt SUBCOMMAND --help).
CommandLine ls_command_line();
CommandLine verify_command_line();
CommandLine show_command_line();
CommandLine gc_command_line();

// What `dlx ckpt ls/gc` was pointed at: an experiment directory, or one trial of it.
struct Target {
  std::filesystem::path experiment_dir;
  std::optional<std::int64_t> trial_id;  // nullopt: every trial
};
Target locate_target(const std::string& trial_or_experiment);

// The retention policy of the experiment's frozen snapshot (defaults when there is none).
checkpoint::RetentionPolicy policy_of(const std::filesystem::path& experiment_dir);

// trial -> (step -> why) for the checkpoints the experiment's searcher still needs, from a
// read-only catch-up with its journal (journal.snapshot when it matches, then the records after
// it: searcher::catch_up; none without a journal). Throws when the records it reads are damaged
// or were written by another method: retention must not run on a guess.
std::map<std::int64_t, checkpoint::ReferencedSteps> searcher_references(
    const std::filesystem::path& experiment_dir);

// The retention plan of `target`'s experiment under its policy and the searcher's references.
std::map<std::int64_t, std::vector<checkpoint::CheckpointStatus>> retention_plan(const Target& target);

// "latest,referenced by searcher: PBT round 1: trial 3 starts from it"
std::string kept_by_text(const checkpoint::CheckpointStatus& file);

std::string human_bytes(std::uint64_t bytes);

}  // namespace dlx::cli::ckpt
