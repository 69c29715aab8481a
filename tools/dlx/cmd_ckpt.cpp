// SPDX-License-Identifier: Apache-2.0
// dlx ckpt: dispatch, and the helpers the subcommands share (target, policy, sizes).
#include "cmd_ckpt.hpp"

#include <charconv>

#include <fmt/format.h>

#include "dlx/config/display_text.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/searcher/journal.hpp"
#include "dlx/searcher/journal_snapshot.hpp"
#include "dlx/searcher/references.hpp"
#include "dlx/searcher/search_state.hpp"
#include "experiment_locator.hpp"

namespace dlx::cli {

namespace ckpt {

namespace fs = std::filesystem;

Target locate_target(const std::string& trial_or_experiment) {
  fs::path path(trial_or_experiment);
  std::error_code error;
  if (fs::is_directory(path / "trials", error) || fs::exists(path / "experiment.yaml", error))
    return {path, std::nullopt};
  if (fs::is_directory(path / "checkpoints", error)) {  // <experiment>/trials/<id>
    auto name = fs::absolute(path).lexically_normal().filename().string();
    if (name.empty()) name = fs::absolute(path).lexically_normal().parent_path().filename().string();
    std::int64_t id = 0;
    auto [end, parse_error] = std::from_chars(name.data(), name.data() + name.size(), id);
    if (parse_error == std::errc{} && end == name.data() + name.size())
      return {fs::absolute(path).lexically_normal().parent_path().parent_path(), id};
  }
  if (!fs::exists(path, error)) return {locate_experiment(trial_or_experiment), std::nullopt};
  throw UsageError(fmt::format("{}: not an experiment directory (no trials/) nor a trial "
                               "directory (no checkpoints/)",
                               trial_or_experiment));
}

checkpoint::RetentionPolicy policy_of(const fs::path& experiment_dir) {
  checkpoint::RetentionPolicy policy;
  std::error_code error;
  if (!fs::exists(experiment_dir / "experiment.yaml", error)) return policy;
  auto experiment = config::load_snapshot(experiment_dir);
  policy.keep_latest = experiment.checkpoint.keep_latest;
  policy.keep_best = experiment.checkpoint.keep_best;
  policy.keep_experiment_best = experiment.checkpoint.keep_experiment_best;
  policy.metric = experiment.searcher.metric;
  policy.smaller_is_better = experiment.searcher.smaller_is_better;
  return policy;
}

std::map<std::int64_t, checkpoint::ReferencedSteps> searcher_references(
    const fs::path& experiment_dir) {
  std::map<std::int64_t, checkpoint::ReferencedSteps> out;
  std::error_code error;
  const auto journal = experiment_dir / searcher::kJournalFileName;
  if (!fs::exists(experiment_dir / "experiment.yaml", error) || !fs::exists(journal, error))
    return out;
  const auto experiment = config::load_snapshot(experiment_dir);
  // journal.snapshot and the tail after it, read-only (as dlx status does): the same state as a
  // full replay, without replaying 10,000 trials' journal for every listing. Strict, unlike dlx
  // status: a journal this searcher no longer reproduces throws, as retention must not delete
  // by references from a method state that could not be rebuilt.
  searcher::SearchState state(experiment);
  const auto caught_up =
      searcher::catch_up(state, searcher::Journal(journal), searcher::journal_snapshot_path(journal));
  if (!caught_up.ignored.empty()) fmt::print(stderr, "dlx ckpt: warning: {}\n", caught_up.ignored);
  if (!caught_up.corruption.empty())
    throw UsageError(fmt::format("{}: {}; the searcher's checkpoint references cannot be read, so "
                                 "retention is not applied (see dlx replay)",
                                 journal.string(), caught_up.corruption));
  for (const auto& reference : searcher::referenced_checkpoints(state))
    out[reference.trial].emplace(reference.length, reference.why);
  return out;
}

std::map<std::int64_t, std::vector<checkpoint::CheckpointStatus>> retention_plan(const Target& target) {
  return checkpoint::plan_experiment_retention(target.experiment_dir, policy_of(target.experiment_dir),
                                               searcher_references(target.experiment_dir));
}

std::string kept_by_text(const checkpoint::CheckpointStatus& file) {
  std::string out;
  for (const auto& rule : file.kept_by) {
    if (!out.empty()) out += ",";
    out += rule == "referenced" && !file.referenced_by.empty()
               ? "referenced by searcher: " + file.referenced_by
               : rule;
  }
  return out;
}

std::string human_bytes(std::uint64_t bytes) {
  constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, units[unit]);
}

namespace {

CommandLine ckpt_command_line() {
  CommandLine command("ckpt", "ls|verify|show|gc ARGS...",
                      "The checkpoints of an experiment's trials: list them with their validity and\n"
                      "the retention rules that keep them, verify every byte, show what one holds, and\n"
                      "delete what the experiment's retention policy no longer keeps (never what the\n"
                      "searcher still references). docs/checkpoint-format.md describes the files.",
                      "dlx ckpt ls 42\n"
                      "dlx ckpt gc 42 --dry-run");
  command.subcommands = {
      {"ls", "each checkpoint with its size, validity and what keeps it", ls_command_line},
      {"verify", "read every byte of checkpoint files against their checksums", verify_command_line},
      {"show", "a checkpoint's metadata, state and tensors", show_command_line},
      {"gc", "delete what retention no longer keeps and dead saves' temporary files", gc_command_line}};
  return command;
}

}  // namespace

}  // namespace ckpt

int run_ckpt(const Arguments& arguments) {
  const auto command = ckpt::ckpt_command_line();
  answer_help(arguments, command);
  if (arguments.empty()) throw UsageError("dlx ckpt needs a subcommand: ls, verify, show or gc", usage_text(command));
  const auto& sub = arguments.front();
  Arguments rest(arguments.begin() + 1, arguments.end());
  if (sub == "ls") return ckpt::run_ls(rest);
  if (sub == "verify") return ckpt::run_verify(rest);
  if (sub == "show") return ckpt::run_show(rest);
  if (sub == "gc") return ckpt::run_gc(rest);
  throw UsageError(fmt::format("unknown dlx ckpt subcommand '{}' (ls, verify, show, gc)", config::abbreviated(sub)),
                   usage_text(command));
}

}  // namespace dlx::cli
