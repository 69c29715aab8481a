// SPDX-License-Identifier: Apache-2.0
#include "site_checks.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <charconv>
#include <cstdint>
#include <optional>
#include <sstream>
#include <sys/stat.h>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/common/trusted_path.hpp"
#include "dlx/store/user_directories.hpp"
#include "plugin_options.hpp"

namespace dlx::doctor {

namespace fs = std::filesystem;

namespace {

std::string value_of(const SiteFacts& facts, const std::string& key) {
  auto found = facts.config.find(key);
  return found == facts.config.end() ? "" : found->second;
}

bool is_unset(const std::string& value) { return value.empty() || value == "(null)"; }

// The seconds of "cred_expire=N" in AuthInfo ("socket=...,cred_expire=10"), read by hand: no
// std::regex on text from outside. A value too large for 64 bits reads as a huge one.
std::optional<std::int64_t> cred_expire_seconds(std::string_view auth_info) {
  constexpr std::string_view key = "cred_expire=";
  for (auto at = auth_info.find(key); at != std::string_view::npos; at = auth_info.find(key, at + 1)) {
    const auto digits = auth_info.substr(at + key.size());
    if (digits.empty() || digits.front() < '0' || digits.front() > '9') continue;
    std::int64_t seconds = 0;
    if (std::from_chars(digits.data(), digits.data() + digits.size(), seconds).ec != std::errc{}) {
      return INT64_MAX / 2;  // only too large is left: far beyond any sensible value, and +1 still fits
    }
    return seconds;
  }
  return std::nullopt;
}

// RequeueExit is a list of codes and ranges: "85", "85,90-95".
bool list_contains_code(const std::string& list, int code) {
  std::istringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    const auto dash = item.find('-');
    char* end = nullptr;
    const long low = std::strtol(item.c_str(), &end, 10);
    if (end == item.c_str()) continue;
    const long high = dash == std::string::npos ? low : std::strtol(item.c_str() + dash + 1, nullptr, 10);
    if (code >= low && code <= high) return true;
  }
  return false;
}

bool contains_word(const std::string& list, const std::string& word) {
  std::istringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item == word) return true;
  }
  return false;
}

std::string upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::toupper(c); });
  return text;
}

Finding ok(std::string check, std::string found) { return {Verdict::ok, std::move(check), std::move(found), ""}; }

// The storage root (docs/security.md): reachable by every user, changeable only by root (or
// shared with the sticky bit), and no entry named after a user that is not that user's own
// directory (one made in their place is refused at submission: say so before users meet it).
void check_storage_root(const std::string& root, std::vector<Finding>& findings) {
  std::error_code error;
  const auto status = fs::status(root, error);
  if (error || !fs::is_directory(status)) {
    findings.push_back({Verdict::fail, "storage_root", fmt::format("{} is not a directory on this host", root),
                        "create it on shared storage mounted at the same path on every node: owned by root, mode "
                        "0755, with a directory per user made by `dlx storage add-user USER` (or mode 1777 so "
                        "that users make their own; see docs/security.md)"});
    return;
  }
  try {
    open_trusted_ancestor(root, 0);
  } catch (const Error& e) {
    findings.push_back({Verdict::fail, "storage_root", e.what(),
                        "dlx refuses to submit below it: fix the owner or mode it names (docs/security.md)"});
    return;
  }
  const auto perms = status.permissions();
  if ((perms & fs::perms::others_exec) == fs::perms::none) {
    findings.push_back({Verdict::warn, "storage_root", fmt::format("{} cannot be entered by all users", root),
                        "users' experiment directories are <storage_root>/<user>: give it mode 0755 (directories "
                        "made by `dlx storage add-user USER`) or 1777"});
    return;
  }
  for (const auto& problem : store::check_user_directories(root)) {
    findings.push_back({Verdict::fail, "storage_root",
                        fmt::format("{} is not {}'s own directory: {}", problem.path.string(), problem.user,
                                    problem.problem),
                        fmt::format("dlx refuses to submit {}'s experiments into it (someone may have made it in "
                                    "their place): look inside, remove it, then dlx storage add-user {}",
                                    problem.user, problem.user)});
  }
  const bool shared = (perms & fs::perms::others_write) != fs::perms::none;
  findings.push_back(ok("storage_root",
                        shared ? fmt::format("{} (mode 1777: users make their own directories; dlx refuses one "
                                             "another user made; mode 0755 with `dlx storage add-user` is safer)",
                                             root)
                               : fmt::format("{} (users' directories made by the administrator: dlx storage "
                                             "add-user USER)",
                                             root)));
}

void check_plugin(const SiteFacts& facts, std::vector<Finding>& findings) {
  if (is_unset(facts.plugstack_path)) {
    findings.push_back({Verdict::fail, "plugin", "PlugStackConfig is not set",
                        "sbatch loads no SPANK plugins: set PlugStackConfig=/etc/slurm/plugstack.conf in slurm.conf "
                        "and add the dlx line of site-config/plugstack.conf.example to that file"});
    return;
  }
  if (!facts.plugstack_text) {
    findings.push_back({Verdict::skipped, "plugin", fmt::format("cannot read {} from this host", facts.plugstack_path),
                        "run dlx doctor on a submit host that has the cluster's plugstack.conf"});
    return;
  }
  const auto line = find_plugin_line(*facts.plugstack_text);
  if (!line) {
    findings.push_back({Verdict::fail, "plugin", fmt::format("no dlx_spank.so line in {}", facts.plugstack_path),
                        "add `optional /usr/lib/x86_64-linux-gnu/slurm-wlm/dlx_spank.so storage_root=/shared/dlx` "
                        "(adapted; see site-config/plugstack.conf.example) on every submit host and compute node"});
    return;
  }
  const std::string where = fmt::format("{} line {}", facts.plugstack_path, line->line_number);
  fs::path plugin = line->plugin_path;
  if (plugin.is_relative()) {
    // Slurm looks relative plugin names up in PluginDir (a colon-separated list).
    std::istringstream directories(value_of(facts, "PluginDir"));
    std::string directory;
    while (std::getline(directories, directory, ':')) {
      if (fs::exists(fs::path(directory) / plugin)) {
        plugin = fs::path(directory) / plugin;
        break;
      }
    }
  }
  if (!fs::exists(plugin)) {
    findings.push_back({Verdict::fail, "plugin", fmt::format("{}: {} does not exist on this host", where, line->plugin_path),
                        "install dlx (the plugin goes to Slurm's plugin directory, the path in <prefix>/share/dlx/plugstack.conf.d/dlx.conf) on every submit host and compute "
                        "node, or correct the path"});
    return;
  }
  spank::PluginOptions options;
  try {
    options = spank::parse_plugin_options(line->arguments);
  } catch (const Error& e) {
    findings.push_back({Verdict::fail, "plugin arguments", where, fmt::format("{}; see docs/admin-guide.md section 1", e.what())});
    return;
  }
  findings.push_back(ok("plugin", fmt::format("{} ({}, {})", plugin.string(), line->control, where)));

  check_storage_root(options.storage_root, findings);
  findings.push_back(ok("notice signal", options.signal.empty()
                                             ? std::string("none added (signal=none): users must give --signal")
                                             : fmt::format("--signal={} added unless the user gives one", options.signal)));
}

void check_requeue(const SiteFacts& facts, std::vector<Finding>& findings) {
  const std::string job_requeue = value_of(facts, "JobRequeue");
  if (job_requeue == "1") {
    findings.push_back(ok("JobRequeue", job_requeue));
  } else {
    findings.push_back({Verdict::fail, "JobRequeue", is_unset(job_requeue) ? "not set" : job_requeue,
                        "batch jobs are not requeueable by default, so preempted or checkpointed trials end instead "
                        "of resuming: set JobRequeue=1 in slurm.conf"});
  }
  const std::string requeue_exit = value_of(facts, "RequeueExit");
  if (list_contains_code(requeue_exit, 85)) {
    findings.push_back(ok("RequeueExit", requeue_exit));
  } else {
    findings.push_back({Verdict::fail, "RequeueExit", is_unset(requeue_exit) ? "not set" : requeue_exit,
                        "a trial exits 85 after its notice checkpoint; without RequeueExit=85 that job ends and never "
                        "resumes: add 85 to RequeueExit in slurm.conf"});
  }
  // A requeued job waits cred_expire + 1 s before it may start again (docs/admin-guide.md, section 4).
  const auto configured_seconds = cred_expire_seconds(value_of(facts, "AuthInfo"));
  const bool configured = configured_seconds.has_value();
  const std::int64_t seconds = configured_seconds.value_or(120);
  const std::string found = fmt::format("{} s{}: a requeued trial may restart after {} s", seconds,
                                        configured ? "" : " (default)", seconds + 1);
  if (seconds > 300) {
    findings.push_back({Verdict::warn, "cred_expire", found,
                        "every preempted trial idles that long before it resumes: lower AuthInfo=...,cred_expire= "
                        "(120 is Slurm's default)"});
  } else {
    findings.push_back(ok("cred_expire", found));
  }
}

long priority_tier(const Partition& partition) {
  return std::strtol(partition.count("PriorityTier") ? partition.at("PriorityTier").c_str() : "1", nullptr, 10);
}

// One partition whose jobs can be preempted: its PreemptMode (requeue, not cancel) and its
// GraceTime (long enough for a checkpoint after the notice).
void check_preemptible_partition(const Partition& partition, const std::string& mode,
                                 std::vector<Finding>& findings) {
  const std::string name = partition.at("PartitionName");
  const std::string check = fmt::format("partition {}: PreemptMode", name);
  if (mode.find("REQUEUE") != std::string::npos) {
    findings.push_back(ok(check, mode));
  } else if (mode.find("CANCEL") != std::string::npos) {
    findings.push_back({Verdict::fail, check, mode,
                        "preempted trials are cancelled, not requeued: set PreemptMode=REQUEUE (globally or on the "
                        "partition)"});
  } else {
    findings.push_back({Verdict::warn, check, mode,
                        "dlx resumes preempted trials by requeue (PreemptMode=REQUEUE); other modes keep them "
                        "in memory or end them"});
  }
  const std::string grace = partition.count("GraceTime") ? partition.at("GraceTime") : "0";
  const long grace_seconds = std::strtol(grace.c_str(), nullptr, 10);
  const std::string grace_check = fmt::format("partition {}: GraceTime", name);
  if (grace_seconds >= kDefaultExitDeadlineSeconds) {
    findings.push_back(ok(grace_check, fmt::format("{} s", grace_seconds)));
  } else {
    findings.push_back({Verdict::warn, grace_check, fmt::format("{} s", grace_seconds),
                        fmt::format("a preempted trial has {} s from the notice to SIGKILL; dlx-launch waits up to {} s "
                                    "(DLX_EXIT_DEADLINE_S) for its checkpoint, so a slower save loses the work since "
                                    "the previous one: give the partition a GraceTime longer than one checkpoint save",
                                    grace_seconds, kDefaultExitDeadlineSeconds)});
  }
}

// A partition whose jobs can be preempted: preemption on, its PriorityTier below another's, and
// its own PreemptMode (or the global one) not OFF.
void check_preemption(const SiteFacts& facts, std::vector<Finding>& findings) {
  const std::string type = value_of(facts, "PreemptType");
  if (is_unset(type) || type == "preempt/none") {
    findings.push_back({Verdict::warn, "PreemptType", is_unset(type) ? "not set" : type,
                        "preemption is off: trials still requeue at time limits and after crashes; to let urgent "
                        "work preempt them, see site-config/slurm.conf.dlx"});
    return;
  }
  findings.push_back(ok("PreemptType", type));
  const std::string global_mode = upper(value_of(facts, "PreemptMode"));
  const std::string parameters = value_of(facts, "SlurmctldParameters");
  if (contains_word(parameters, "preempt_send_user_signal")) {
    findings.push_back(ok("preempt_send_user_signal", parameters));
  } else {
    findings.push_back({Verdict::fail, "preempt_send_user_signal",
                        is_unset(parameters) ? "SlurmctldParameters not set" : parameters,
                        "on preemption Slurm 22.05 never sends the job's --signal notice (only SIGTERM, at the grace "
                        "time's start, to the steps): add preempt_send_user_signal to SlurmctldParameters"});
  }
  if (!facts.partitions) {
    findings.push_back({Verdict::skipped, "partitions", "`scontrol show partition` not read",
                        "give --partitions FILE with its -o output"});
    return;
  }
  long top_tier = 0;
  for (const auto& partition : *facts.partitions) top_tier = std::max(top_tier, priority_tier(partition));
  const bool by_partition = type == "preempt/partition_prio";
  for (const auto& partition : *facts.partitions) {
    std::string mode = partition.count("PreemptMode") ? upper(partition.at("PreemptMode")) : global_mode;
    if (mode.empty() || mode == "GANG") mode = global_mode;
    if (mode.find("OFF") != std::string::npos || (by_partition && priority_tier(partition) >= top_tier)) {
      continue;  // never preempted
    }
    check_preemptible_partition(partition, mode, findings);
  }
}

void check_launch(const SiteFacts& facts, std::vector<Finding>& findings) {
  if (!facts.mpi_plugins) {
    findings.push_back({Verdict::skipped, "MPI plugin", "`srun --mpi=list` not read", ""});
  } else if (facts.mpi_plugins->find("pmix") != std::string::npos) {
    findings.push_back(ok("MPI plugin", "pmix available (srun --mpi=pmix)"));
  } else {
    findings.push_back({Verdict::fail, "MPI plugin", "no pmix in `srun --mpi=list`",
                        "multi-rank trials start with `srun --mpi=pmix dlx-launch`: install Slurm's mpi/pmix "
                        "plugin on the compute nodes"});
  }
  const std::string array_size = value_of(facts, "MaxArraySize");
  if (!is_unset(array_size)) {
    findings.push_back(ok("MaxArraySize", fmt::format("{}: experiments of up to {} array tasks", array_size,
                                                      std::max(0L, std::strtol(array_size.c_str(), nullptr, 10) - 1))));
  }
}

}  // namespace

std::vector<Finding> check_site(const SiteFacts& facts) {
  std::vector<Finding> findings;
  check_plugin(facts, findings);
  check_requeue(facts, findings);
  check_preemption(facts, findings);
  check_launch(facts, findings);
  return findings;
}

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::ok: return "ok";
    case Verdict::warn: return "warn";
    case Verdict::fail: return "FAIL";
    case Verdict::skipped: return "skip";
  }
  return "?";
}

}  // namespace dlx::doctor
