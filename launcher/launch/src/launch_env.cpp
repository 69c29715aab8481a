// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/launch_env.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace dlx::launch {

namespace {

std::string master_addr(const env::TaskPlacement& placement, const env::EnvMap& env,
                        const Resolver& resolve) {
  if (auto given = env::lookup(env, "MASTER_ADDR"); given && !given->empty()) return *given;
  if (!placement.first_node.empty()) {
    if (auto address = resolve(placement.first_node)) return *address;
  }
  if (auto launch_node = env::lookup(env, "SLURM_LAUNCH_NODE_IPADDR");
      launch_node && !launch_node->empty()) {
    return *launch_node;
  }
  return "127.0.0.1";
}

}  // namespace

int packed_slot_of(const env::EnvMap& env) {
  const auto text = env::lookup(env, "DLX_SLOT").value_or("");
  int slot = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), slot);
  return error == std::errc() && end == text.data() + text.size() && slot >= 0 ? slot : 0;
}

std::optional<std::string> resolve_ipv4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
    return std::nullopt;
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owner(found, &::freeaddrinfo);
  sockaddr_in address{};
  std::memcpy(&address, found->ai_addr, sizeof address);
  std::array<char, INET_ADDRSTRLEN> text{};
  if (::inet_ntop(AF_INET, &address.sin_addr, text.data(), text.size()) == nullptr) {
    return std::nullopt;
  }
  return std::string(text.data());
}

int master_port_for_job(const std::string& job_id) {
  if (job_id.empty()) return kMasterPortOutsideSlurm;
  return kMasterPortBase +
         static_cast<int>(env::parse_non_negative("SLURM_JOB_ID", job_id) % 10000);
}

bool port_is_free(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return true;  // cannot tell: the trainer's own bind says it if not
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool bound = ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return bound;
}

std::vector<int> master_port_candidates(const std::string& job_id, int slot) {
  const bool in_slurm = !job_id.empty();
  const int low = in_slurm ? kMasterPortBase : kMasterPortOutsideSlurm;
  const int span = in_slurm ? kMasterPortSpan : kMasterPortSpanOutsideSlurm;
  const std::int64_t job = in_slurm ? env::parse_non_negative("SLURM_JOB_ID", job_id) % span : 0;
  const auto start = static_cast<int>((job + std::int64_t{slot} * kSlotPortStride) % span);
  std::vector<int> candidates;
  candidates.reserve(kPortProbes);
  for (int probe = 0; probe < kPortProbes; ++probe) candidates.push_back(low + (start + probe) % span);
  return candidates;
}

int single_rank_master_port(const std::string& job_id, int slot, const PortProbe& is_free) {
  const auto candidates = master_port_candidates(job_id, slot);
  const auto found = std::find_if(candidates.begin(), candidates.end(), is_free);
  return found == candidates.end() ? candidates.front() : *found;
}

EnvVars compute_launch_env(const env::TaskPlacement& placement, const env::EnvMap& env,
                           const Resolver& resolve, const PortProbe& is_free) {
  std::string port;
  if (auto given = env::lookup(env, "MASTER_PORT"); given && !given->empty()) {
    port = *given;
  } else if (placement.world_size <= 1) {
    port = std::to_string(single_rank_master_port(placement.job_id, packed_slot_of(env), is_free));
  } else {
    port = std::to_string(master_port_for_job(placement.job_id));
  }
  return {
      {"RANK", std::to_string(placement.rank)},
      {"WORLD_SIZE", std::to_string(placement.world_size)},
      {"LOCAL_RANK", std::to_string(placement.local_rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(placement.local_world_size)},
      {"GROUP_RANK", std::to_string(placement.node_index)},
      {"MASTER_ADDR", master_addr(placement, env, resolve)},
      {"MASTER_PORT", port},
  };
}

std::optional<std::filesystem::path> python_package_dir(const std::filesystem::path& launcher) {
  const auto prefix = launcher.parent_path().parent_path();
  // The build tree's layout first, then where this build installs the package (relative to the
  // prefix: a Debian-layout install into a staging prefix, as the test cluster's, puts it in
  // lib/python3/dist-packages, which that prefix's python3 does not search).
  std::vector<std::filesystem::path> candidates{prefix / "lib" / "dlx" / "python"};
  if (const std::filesystem::path installed = DLX_PYTHON_INSTALL_DIR; installed.is_relative()) {
    candidates.push_back(prefix / installed);
  }
  for (const auto& directory : candidates) {
    std::error_code error;
    if (std::filesystem::is_regular_file(directory / "dlx" / "__init__.py", error)) return directory;
  }
  return std::nullopt;
}

std::optional<std::filesystem::path> any_python_package_dir(const std::filesystem::path& launcher) {
  if (auto beside = python_package_dir(launcher)) return beside;
  if (const std::filesystem::path installed = DLX_PYTHON_INSTALL_DIR; installed.is_absolute()) {
    std::error_code error;
    if (std::filesystem::is_regular_file(installed / "dlx" / "__init__.py", error)) return installed;
  }
  return std::nullopt;
}

std::optional<std::filesystem::path> dlx_library_file(const std::filesystem::path& launcher) {
  const auto prefix = launcher.parent_path().parent_path();
  std::vector<std::filesystem::path> library_dirs{prefix / "lib"};
  if (const std::filesystem::path installed = DLX_LIB_INSTALL_DIR; installed.is_relative()) {
    library_dirs.push_back(prefix / installed);
  }
  // The portable build (scripts/portable-c.sh) first: it loads in images of other distributions.
  std::vector<std::filesystem::path> candidates;
  for (const auto& dir : library_dirs) candidates.push_back(dir / "dlx" / "container" / "libdlx_c.so.0");
  for (const auto& dir : library_dirs) candidates.push_back(dir / "libdlx_c.so.0");
  for (const auto& file : candidates) {
    std::error_code error;
    if (std::filesystem::exists(file, error)) return file;
  }
  return std::nullopt;
}

bool is_portable_library(const std::filesystem::path& library) {
  const auto dir = library.parent_path();
  return dir.filename() == "container" && dir.parent_path().filename() == "dlx";
}

std::string python_path_with(const std::filesystem::path& package_dir, const env::EnvMap& env) {
  const auto inherited = env::lookup(env, "PYTHONPATH").value_or("");
  const auto ours = package_dir.string();
  std::size_t start = 0;
  while (start <= inherited.size()) {
    const auto end = std::min(inherited.find(':', start), inherited.size());
    if (inherited.compare(start, end - start, ours) == 0 && end - start == ours.size()) {
      return inherited;
    }
    start = end + 1;
  }
  return inherited.empty() ? ours : ours + ":" + inherited;
}

}  // namespace dlx::launch
