// SPDX-License-Identifier: Apache-2.0
// dlx cluster: hands over to the dlx-cluster script (installed in libexec/dlx, mirrored in the
// build tree), telling it where this dlx's plugin and programs are. The script parses the
// arguments; --help is answered here, as for every dlx command, per subcommand (the script's own
// usage() lists the same options: tests/unit/dlx_help_test.sh checks that none is missing here).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "commands.hpp"
#include "options.hpp"

namespace dlx::cli {

namespace fs = std::filesystem;

namespace {

// The script's options that `names` lists, for a subcommand's help.
void add_script_options(CommandLine& command, std::initializer_list<std::string_view> names) {
  namespace po = boost::program_options;
  struct ScriptOption {
    const char* name;
    const char* value;
    const char* description;
  };
  static constexpr ScriptOption kOptions[] = {
      {"state-dir", "DIR",
       "state directory (default: $DLX_CLUSTER_DIR, else /var/lib/dlx-cluster); it and every "
       "directory above it must belong to root or you and not be writable by others (a sticky "
       "directory such as /tmp may be above it)"},
      {"plugin", "PATH", "dlx_spank.so to put in plugstack.conf (default: $DLX_PLUGIN, set by dlx to its own)"},
      {"plugstack", "FILE",
       "PlugStackConfig of the cluster instead of its own etc/plugstack.conf, e.g. "
       "/etc/slurm/plugstack.conf where a package enabled the plugin"},
      {"bin-dir", "DIR", "directory with dlx and dlx-launch, for PATH in `env` (default: $DLX_BIN_DIR, dlx's own)"},
      {"nodes", "N", "number of slurmd nodes, at least 3 (default 3)"},
      {"port-base", "N", "slurmctld port; node nX uses N+X (default 17000)"},
      {"first-job-id", "N",
       "the first job id of a new cluster (Slurm's FirstJobId; default 1): two clusters on one host "
       "whose ids run in step start their trials' MASTER_PORT search at the same port; start one at, say, 5001"},
      {"timeout", "SECS", "how long `up`/`down` wait for daemons and nodes (default 30)"},
      {"gpus", "N",
       "each node has N GPUs as Slurm GRES (/dev/nvidia0..N-1, which must exist; default 0); every node is "
       "this host, so they share its GPUs"},
      {"shards-per-gpu", "S", "and S gres/shard per GPU (default 0), for trials sharing a GPU (resources.shards_per_gpu)"},
      {"placeholder-gpus", "",
       "the N GPUs are placeholder devices in the state directory: Slurm schedules them and sets "
       "CUDA_VISIBLE_DEVICES, nothing runs on them (for testing on a host without GPUs)"}};
  for (const auto& option : kOptions) {
    if (std::find(names.begin(), names.end(), option.name) == names.end()) continue;
    if (*option.value == '\0') {
      command.options.add_options()(option.name, option.description);  // a flag
    } else {
      command.options.add_options()(option.name, po::value<std::string>()->value_name(option.value), option.description);
    }
  }
}

CommandLine cluster_up_command_line() {
  CommandLine command("cluster up", "[--state-dir DIR] [--nodes N] [--port-base N] [options]",
                      "Starts munged, slurmctld and N slurmd nodes n1..nN on 127.0.0.1 (one port each),\n"
                      "with partitions low and high (high preempts low, which requeues) and dlx's\n"
                      "plugin in plugstack.conf, and waits until every node is up. Runs as root; it\n"
                      "is idempotent, and records its settings in the state directory for later calls.",
                      "sudo dlx cluster up\n"
                      "sudo dlx cluster up --state-dir /tmp/dlx-cluster --nodes 4 --port-base 18000");
  add_script_options(command, {"state-dir", "plugin", "plugstack", "bin-dir", "nodes", "port-base", "first-job-id", "timeout",
                               "gpus", "shards-per-gpu", "placeholder-gpus"});
  return command;
}

CommandLine cluster_down_command_line() {
  CommandLine command("cluster down", "[--state-dir DIR] [--timeout SECS]",
                      "Cancels the cluster's jobs and stops its daemons, exactly the processes whose\n"
                      "pids are in the state directory. Runs as root.",
                      "sudo dlx cluster down");
  add_script_options(command, {"state-dir", "timeout"});
  return command;
}

CommandLine cluster_env_command_line() {
  CommandLine command("cluster env", "[--state-dir DIR] [--bin-dir DIR]",
                      "Prints shell exports for the cluster's clients: SLURM_CONF, DLX_CLUSTER_DIR,\n"
                      "PATH with dlx's programs first, and OMPI_MCA_btl_tcp_if_include=lo. Any user.",
                      "eval \"$(dlx cluster env)\"");
  add_script_options(command, {"state-dir", "bin-dir"});
  return command;
}

CommandLine cluster_status_command_line() {
  CommandLine command("cluster status", "[--state-dir DIR]",
                      "Shows the state directory, each daemon with its pid, alive or dead, and sinfo.\n"
                      "Any user. Exit status 1 when the cluster is not configured or a daemon is dead.",
                      "dlx cluster status");
  add_script_options(command, {"state-dir"});
  return command;
}

CommandLine cluster_command_line() {
  CommandLine command("cluster", "up|down|env|status [options]",
                      "A real single-host Slurm cluster for trying and testing dlx: munged, slurmctld\n"
                      "and three or more slurmd nodes on 127.0.0.1, with partition-priority preemption\n"
                      "and dlx's SPANK plugin, everything in one state directory, which must be safe\n"
                      "from other users. Runs the dlx-cluster script installed with dlx, telling it\n"
                      "where this dlx's plugin and programs are (docs/admin-guide.md).",
                      "sudo dlx cluster up\n"
                      "eval \"$(dlx cluster env)\"\n"
                      "sudo dlx cluster down");
  add_script_options(command, {"state-dir", "plugin", "plugstack", "bin-dir", "nodes", "port-base", "first-job-id", "timeout",
                               "gpus", "shards-per-gpu", "placeholder-gpus"});
  command.subcommands = {
      {"up", "start munged, slurmctld and the nodes, wait until all are up (root)", cluster_up_command_line},
      {"down", "cancel the cluster's jobs and stop its daemons (root)", cluster_down_command_line},
      {"env", "print exports for the cluster's clients: eval \"$(dlx cluster env)\"", cluster_env_command_line},
      {"status", "show the daemons (pid, alive/dead) and sinfo", cluster_status_command_line}};
  return command;
}

}  // namespace

int run_cluster(const Arguments& arguments, const std::string& /*program_path*/) {
  answer_help(arguments, cluster_command_line());
  const fs::path bin_dir = fs::read_symlink("/proc/self/exe").parent_path();
  const fs::path prefix = bin_dir.parent_path();
  const fs::path script = prefix / "libexec/dlx/dlx-cluster";
  if (!fs::exists(script)) throw Error(fmt::format("the cluster tooling is missing: {}", script.string()));

  if (!std::getenv("DLX_PLUGIN")) {
    // The build tree's plugin, else the installed one (DLX_INSTALLED_PLUGIN: absolute, or under
    // the prefix; tools/CMakeLists.txt).
    for (const auto& candidate : {prefix / "lib/dlx_spank.so", prefix / DLX_INSTALLED_PLUGIN}) {
      if (fs::exists(candidate)) {
        ::setenv("DLX_PLUGIN", candidate.c_str(), 1);
        break;
      }
    }
  }
  if (!std::getenv("DLX_BIN_DIR")) ::setenv("DLX_BIN_DIR", bin_dir.c_str(), 1);

  std::vector<std::string> words{"/bin/bash", script.string()};
  words.insert(words.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (auto& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  ::execv(argv[0], argv.data());
  throw Error(fmt::format("cannot run {}: {}", script.string(), std::strerror(errno)));
}

}  // namespace dlx::cli
