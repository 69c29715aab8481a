// SPDX-License-Identifier: Apache-2.0
#pragma once
// The torchrun-compatible variables dlx-launch gives its child (DLX_* pass through untouched):
//   RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK (node index), MASTER_ADDR,
//   MASTER_PORT.
// MASTER_ADDR: a value already in the environment wins (the user's override). Otherwise the first
// node of the step, resolved to an IPv4 address. If that name does not resolve (the local test
// cluster's nodes n1, n2... exist only in slurm.conf, with NodeAddr=127.0.0.1), dlx-launch does
// not ask slurmctld (no scontrol): it uses SLURM_LAUNCH_NODE_IPADDR, the address of the host that
// ran srun (in a batch job the batch host, which is the job's first node), else 127.0.0.1.
// MASTER_PORT: a value already set wins. Otherwise one of the candidates of the trial: its
// starting point, 20000 + SLURM_JOB_ID % 10000 moved by 1009 per packed slot (DLX_SLOT; 1009 is
// prime to 10000, so one task's slots start apart), then the next ports, wrapping within
// 20000-29999 (29500-29999, from PyTorch's own default, outside Slurm). These are unprivileged,
// different for the concurrent array tasks of one experiment, and below Linux's ephemeral ports,
// 32768-60999 by default: a port in that range can be held by any outgoing connection on the
// node, another trial's gloo or TCPStore client among them.
//   A trial of one rank (a packed task's slots among them: they share the task's job id) takes
// the first candidate free on its node. Without that, two slots whose trainers both called
// init_process_group() collided ("Address already in use"), and so did two jobs on one node
// whose ids differ by a multiple of 10000.
//   A trial of several ranks gets the starting point here (what --dry-run shows); under srun its
// rank 0 then takes the first free candidate and tells the other ranks through the trial's
// directory (master_port_rendezvous.hpp), and each rank's dlx-launch holds its choice until its
// trainer starts (port_reservation.hpp).
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dlx/env/environment.hpp"
#include "dlx/slurm/task_placement.hpp"

namespace dlx::launch {

using EnvVars = std::vector<std::pair<std::string, std::string>>;  // in output order

// Host name -> IPv4 address, nullopt when it does not resolve.
using Resolver = std::function<std::optional<std::string>(const std::string& host)>;
std::optional<std::string> resolve_ipv4(const std::string& host);  // getaddrinfo

inline constexpr int kMasterPortBase = 20000;        // + SLURM_JOB_ID % 10000
inline constexpr int kMasterPortSpan = 10000;
inline constexpr int kMasterPortOutsideSlurm = 29500;
inline constexpr int kMasterPortSpanOutsideSlurm = 500;
inline constexpr int kSlotPortStride = 1009;
inline constexpr int kPortProbes = 100;
int master_port_for_job(const std::string& job_id);

// Whether a TCP server could listen on `port` of this node now (on every address, with
// SO_REUSEADDR, as PyTorch's TCPStore does).
using PortProbe = std::function<bool(int port)>;
bool port_is_free(int port);

// DLX_SLOT, which dlx-launch sets for a packed task's trials; 0 when absent or not a number.
int packed_slot_of(const env::EnvMap& env);

// The kPortProbes candidates for MASTER_PORT (see above), the starting point first.
std::vector<int> master_port_candidates(const std::string& job_id, int slot);

// A trial of one rank: the first candidate that `is_free` accepts, else the starting point itself
// (the trainer's own bind error then says why).
int single_rank_master_port(const std::string& job_id, int slot, const PortProbe& is_free);

// Pure apart from `resolve` and `is_free` (asked only for a trial of one rank).
EnvVars compute_launch_env(const env::TaskPlacement& placement, const env::EnvMap& env,
                           const Resolver& resolve, const PortProbe& is_free);

// The Python package (import dlx, dlx.torch) installed with dlx-launch: <prefix>/lib/dlx/python
// beside <prefix>/bin/dlx-launch (the build tree has the same layout), else <prefix>/ the build's
// relative DLX_PYTHON_INSTALL_DIR; nullopt when neither holds it (a system install's is already
// on Python's own path).
std::optional<std::filesystem::path> python_package_dir(const std::filesystem::path& launcher);

// That directory, or the build's absolute DLX_PYTHON_INSTALL_DIR (a system install): the package
// a container gets mounted at /dlx/python.
std::optional<std::filesystem::path> any_python_package_dir(const std::filesystem::path& launcher);

// libdlx_c.so.0 beside that package (<prefix>/lib, or where this build installs libraries):
// what a container gets mounted at /dlx/lib; nullopt when neither is there. The portable build,
// installed as <that directory>/dlx/container/libdlx_c.so.0 (docs/containers.md), comes first.
std::optional<std::filesystem::path> dlx_library_file(const std::filesystem::path& launcher);

// Whether `library` (one dlx_library_file found) is the portable build: <dir>/dlx/container/.
bool is_portable_library(const std::filesystem::path& library);

// PYTHONPATH for the trainer: `package_dir` first, then the inherited value (unchanged when it
// already lists `package_dir`), so that `import dlx` needs no setting in the job script.
std::string python_path_with(const std::filesystem::path& package_dir, const env::EnvMap& env);

}  // namespace dlx::launch
