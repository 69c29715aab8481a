// SPDX-License-Identifier: Apache-2.0
// dlx data ls|gc [--dir LOCAL_ROOT]: this user's node-local data cache on this node (data/,
// docs/file-format.md "Node-local data cache"): its entries, and removing the unused ones.
// Without --dir the cache is where dlx-launch puts it when the experiment names no data.to: in a
// job step the site's local_dir= or Slurm's TmpFS (the plugin exports both), else $TMPDIR, else
// /tmp (dlx::data::resolve_local_root). The cache is opened as dlx-launch opens it
// (dlx/data/node_local_dir.hpp): a base another user could change is refused before anything in
// it is read or removed.
#include <ctime>

#include <fmt/format.h>

#include "commands.hpp"
#include "dlx/common/byte_size.hpp"
#include "dlx/common/clock.hpp"
#include "dlx/config/display_text.hpp"
#include "dlx/data/stage.hpp"
#include "options.hpp"
#include "table.hpp"

namespace dlx::cli {

namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

void add_dir_option(CommandLine& command) {
  command.options.add_options()("dir", po::value<std::string>()->value_name("LOCAL_ROOT"),
                                "the node-local directory holding dlx-<uid>/data (default: in a job step the site's "
                                "local_dir= or Slurm's TmpFS, else $TMPDIR, else /tmp; give the experiment's "
                                "data: to: when it sets one)");
}

fs::path local_root_of(const po::variables_map& values) {
  if (values.count("dir")) return fs::absolute(values["dir"].as<std::string>()).lexically_normal();
  return data::resolve_local_root(data::local_root_context_from_environment());
}

std::string age_of(std::int64_t unix_seconds) {
  const std::int64_t seconds = std::max<std::int64_t>(0, unix_seconds_now() - unix_seconds);
  if (seconds < 120) return fmt::format("{} s ago", seconds);
  if (seconds < 7200) return fmt::format("{} min ago", seconds / 60);
  if (seconds < 172800) return fmt::format("{} h ago", seconds / 3600);
  return fmt::format("{} d ago", seconds / 86400);
}

CommandLine ls_command_line() {
  CommandLine command("data ls", "[--dir LOCAL_ROOT]",
                      "Lists the entries of your data cache on this node, most recently used first:\n"
                      "key, size, last use, whether a trial holds it now, and the source it copies.",
                      "dlx data ls\n"
                      "dlx data ls --dir /local/scratch");
  add_dir_option(command);
  return command;
}

CommandLine gc_command_line() {
  CommandLine command("data gc", "[--dir LOCAL_ROOT] [--all | --max-bytes N]",
                      "Removes unfinished copies whose stager is gone, then (with --all) every entry\n"
                      "of your data cache on this node, or (with --max-bytes) the least recently used\n"
                      "ones until the cache holds at most N bytes. An entry a trial holds is never\n"
                      "removed.",
                      "dlx data gc\n"
                      "dlx data gc --max-bytes 50GB\n"
                      "dlx data gc --all");
  add_dir_option(command);
  command.options.add_options()("all", "remove every entry no trial holds")(
      "max-bytes", po::value<std::string>()->value_name("N"),
      "remove least recently used entries until the cache holds at most N (100GB, 512MiB, bytes)");
  return command;
}

CommandLine data_command_line() {
  CommandLine command("data", "ls|gc [--dir LOCAL_ROOT] ...",
                      "Your node-local cache of staged datasets (the experiment's data: stage:) on\n"
                      "this node: list its entries, and remove those no trial uses.\n"
                      "docs/file-format.md describes the cache.",
                      "dlx data ls\n"
                      "dlx data gc --all");
  command.subcommands = {{"ls", "the entries of your cache on this node", ls_command_line},
                         {"gc", "remove unfinished copies and unused entries", gc_command_line}};
  return command;
}

int run_data_ls(const Arguments& arguments) {
  const auto values = parse_options(arguments, ls_command_line());
  const fs::path root = local_root_of(values);
  const auto entries = data::list_cache(root);
  fmt::print("# data cache {}: {} entries\n", data::user_cache_dir(root).string(), entries.size());
  if (entries.empty()) return 0;
  Table table({"key", "size", "last_used", "in_use", "source"});
  std::uint64_t total = 0;
  for (const auto& entry : entries) {
    table.add_row({entry.key.substr(0, 16), format_byte_size(entry.bytes), age_of(entry.last_used_unix),
                   entry.in_use ? "yes" : "no", entry.source.string()});
    total += entry.bytes;
  }
  fmt::print("{}# total {}\n", table.render(), format_byte_size(total));
  return 0;
}

int run_data_gc(const Arguments& arguments) {
  const auto command = gc_command_line();
  const auto values = parse_options(arguments, command);
  data::GcRequest request;
  request.all = values.count("all") > 0;
  if (values.count("max-bytes")) {
    if (request.all) throw UsageError("--all and --max-bytes exclude each other (choose one)", usage_text(command));
    const std::string text = values["max-bytes"].as<std::string>();
    request.max_bytes = parse_byte_size(text);
    if (!request.max_bytes) {
      throw UsageError(fmt::format("--max-bytes '{}' is not a size (write a whole number with an optional unit: "
                                   "100GB, 512MiB, 4096)", config::abbreviated(text)), usage_text(command));
    }
  }
  const fs::path root = local_root_of(values);
  const auto result = data::collect_garbage(root, request);
  for (const auto& entry : result.removed) {
    fmt::print("removed {} ({}, {})\n", entry.dir.string(), format_byte_size(entry.bytes),
               config::printable(entry.source.string()));
  }
  fmt::print("# data cache {}: removed {} entries and {} unfinished copies; {} in use kept; {} left\n",
             data::user_cache_dir(root).string(), result.removed.size(), result.leftovers_removed, result.kept_in_use,
             format_byte_size(result.bytes_left));
  return 0;
}

}  // namespace

int run_data(const Arguments& arguments) {
  const auto command = data_command_line();
  answer_help(arguments, command);
  if (arguments.empty()) throw UsageError("dlx data needs a subcommand: ls or gc", usage_text(command));
  const auto& sub = arguments.front();
  Arguments rest(arguments.begin() + 1, arguments.end());
  if (sub == "ls") return run_data_ls(rest);
  if (sub == "gc") return run_data_gc(rest);
  throw UsageError(fmt::format("unknown dlx data subcommand '{}' (ls, gc)", config::abbreviated(sub)),
                   usage_text(command));
}

}  // namespace dlx::cli
