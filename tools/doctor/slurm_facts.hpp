// SPDX-License-Identifier: Apache-2.0
#pragma once
// What `dlx doctor` knows about a Slurm installation, parsed from the reports of Slurm's own
// tools (`scontrol show config`, `scontrol show partition -o`, `srun --mpi=list`) and from the
// plugstack.conf that the configuration names. Parsing only: no process is run here.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dlx::doctor {

// `scontrol show config`: "Key = value" lines; values keep their inner spaces ("5 sec").
std::map<std::string, std::string> parse_scontrol_config(const std::string& report);

// `scontrol show partition -o`: one partition a line of Key=Value words.
using Partition = std::map<std::string, std::string>;
std::vector<Partition> parse_partitions(const std::string& report);

// `scontrol show node -o`: one node a line of Key=Value words (NodeName, Gres, ...; a value with
// spaces, OS= or Reason=, keeps only its first word).
using Node = std::map<std::string, std::string>;
std::vector<Node> parse_nodes(const std::string& report);

// The dlx line of a plugstack.conf: `required|optional PLUGIN_PATH key=value...`.
struct PluginLine {
  std::string control;                 // required or optional
  std::string plugin_path;
  std::vector<std::string> arguments;  // key=value words, as the plugin receives them
  int line_number = 0;
};

// The first non-comment line that names dlx_spank.so; nullopt when there is none.
std::optional<PluginLine> find_plugin_line(const std::string& plugstack_text);

// Everything the checks look at. Empty optionals mean "not known from here" (the check is skipped
// and says why), not "not set".
struct SiteFacts {
  std::map<std::string, std::string> config;
  std::optional<std::vector<Partition>> partitions;
  std::optional<std::string> mpi_plugins;    // `srun --mpi=list` output
  std::string plugstack_path;                // from PlugStackConfig
  std::optional<std::string> plugstack_text; // nullopt: could not be read from this host
};

}  // namespace dlx::doctor
