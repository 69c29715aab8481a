// SPDX-License-Identifier: Apache-2.0
// dlx-launch's pure parts: the torchrun variables and the allocation check.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dlx/launch/allocation_check.hpp"
#include "dlx/launch/launch_env.hpp"
#include "dlx/launch/launch_error.hpp"

using dlx::env::EnvMap;
using dlx::launch::compute_launch_env;

namespace {

std::map<std::string, std::string> as_map(const dlx::launch::EnvVars& vars) {
  return {vars.begin(), vars.end()};
}

dlx::env::TaskPlacement two_by_two(int rank) {
  dlx::env::TaskPlacement p;
  p.launcher = dlx::env::Launcher::srun;
  p.rank = rank;
  p.world_size = 4;
  p.local_rank = rank % 2;
  p.local_world_size = 2;
  p.node_index = rank / 2;
  p.num_nodes = 2;
  p.tasks_per_node = {2, 2};
  p.node_name = rank < 2 ? "n1" : "n2";
  p.first_node = "n1";
  p.job_id = "123456";
  return p;
}

const dlx::launch::Resolver kNothingResolves = [](const std::string&) {
  return std::optional<std::string>();
};

const dlx::launch::PortProbe kEveryPortFree = [](int) { return true; };

dlx::env::TaskPlacement one_rank(std::string job_id) {
  dlx::env::TaskPlacement p;
  p.launcher = dlx::env::Launcher::srun;
  p.world_size = 1;
  p.local_world_size = 1;
  p.num_nodes = 1;
  p.tasks_per_node = {1};
  p.node_name = p.first_node = "n1";
  p.job_id = std::move(job_id);
  return p;
}

std::string port_of(const dlx::env::TaskPlacement& p, const EnvMap& env, const dlx::launch::PortProbe& probe) {
  return as_map(compute_launch_env(p, env, kNothingResolves, probe))["MASTER_PORT"];
}

}  // namespace

TEST_CASE("launcher: torchrun variables from the placement", "[launch]") {
  auto resolver = [](const std::string& host) -> std::optional<std::string> {
    if (host == "n1") return "10.0.0.1";
    return std::nullopt;
  };
  auto vars = as_map(compute_launch_env(two_by_two(3), EnvMap{}, resolver, kEveryPortFree));
  CHECK(vars["RANK"] == "3");
  CHECK(vars["WORLD_SIZE"] == "4");
  CHECK(vars["LOCAL_RANK"] == "1");
  CHECK(vars["LOCAL_WORLD_SIZE"] == "2");
  CHECK(vars["GROUP_RANK"] == "1");
  CHECK(vars["MASTER_ADDR"] == "10.0.0.1");
  CHECK(vars["MASTER_PORT"] == std::to_string(20000 + 123456 % 10000));
}

TEST_CASE("launcher: MASTER_ADDR falls back when the first node does not resolve", "[launch]") {
  auto p = two_by_two(0);
  CHECK(as_map(compute_launch_env(p, {{"SLURM_LAUNCH_NODE_IPADDR", "192.168.1.5"}},
                                  kNothingResolves, kEveryPortFree))["MASTER_ADDR"] == "192.168.1.5");
  CHECK(as_map(compute_launch_env(p, {}, kNothingResolves, kEveryPortFree))["MASTER_ADDR"] == "127.0.0.1");
  // The user's own values win.
  auto vars = as_map(compute_launch_env(p, {{"MASTER_ADDR", "h0"}, {"MASTER_PORT", "1234"}},
                                        kNothingResolves, kEveryPortFree));
  CHECK(vars["MASTER_ADDR"] == "h0");
  CHECK(vars["MASTER_PORT"] == "1234");
}

TEST_CASE("launcher: MASTER_PORT is deterministic, unprivileged and below the ephemeral ports", "[launch]") {
  CHECK(dlx::launch::master_port_for_job("") == 29500);  // outside Slurm: PyTorch's default
  CHECK(dlx::launch::master_port_for_job("1") == 20001);
  CHECK(dlx::launch::master_port_for_job("19999") == 29999);
  CHECK(dlx::launch::master_port_for_job("20000") == 20000);
  // Never where Linux hands out ports to outgoing connections (32768 and up by default): the
  // cluster tests' job ids passed 3268, and a trial's TCPStore failed to bind port 33305.
  for (const char* job : {"3805", "9999", "123456", "4294967295"}) {
    CHECK(dlx::launch::master_port_for_job(job) < 32768);
    CHECK(dlx::launch::master_port_for_job(job) >= 1024);
  }
  CHECK_THROWS_WITH(dlx::launch::master_port_for_job("12x"),
                    Catch::Contains("SLURM_JOB_ID=12x"));
}

TEST_CASE("launcher: a trial of several ranks keeps the job's port whatever holds it", "[launch]") {
  int asked = 0;
  const dlx::launch::PortProbe nothing_free = [&](int) { return ++asked, false; };
  // Every rank computes it alone, so it cannot move; the probe is not even asked.
  CHECK(port_of(two_by_two(1), {{"DLX_SLOT", "3"}}, nothing_free) == "23456");
  CHECK(asked == 0);
}

TEST_CASE("launcher: the slots of a packed task start on different ports", "[launch]") {
  // One task's slots share its SLURM_JOB_ID: the same MASTER_PORT made the second trainer's
  // init_process_group() fail with "Address already in use".
  std::set<std::string> ports;
  for (int slot = 0; slot < 256; ++slot) {
    const auto port = port_of(one_rank("123456"), {{"DLX_SLOT", std::to_string(slot)}}, kEveryPortFree);
    CHECK(std::stoi(port) >= 20000);
    CHECK(std::stoi(port) < 30000);
    ports.insert(port);
  }
  CHECK(ports.size() == 256);
  CHECK(port_of(one_rank("123456"), {}, kEveryPortFree) == "23456");  // slot 0: the job's port
  CHECK(port_of(one_rank("123456"), {{"DLX_SLOT", "1"}}, kEveryPortFree) == "24465");
  CHECK(port_of(one_rank("123456"), {{"DLX_SLOT", "x1"}}, kEveryPortFree) == "23456");  // not a slot: 0
}

TEST_CASE("launcher: a trial of one rank takes the next free port, within its range", "[launch]") {
  std::vector<int> asked;
  const auto taken_below = [&](int first_free) {
    return dlx::launch::PortProbe([&asked, first_free](int port) {
      asked.push_back(port);
      return port >= first_free;
    });
  };
  CHECK(port_of(one_rank("19998"), {}, taken_below(29999)) == "29999");
  CHECK(asked == std::vector<int>{29998, 29999});
  // Past the top of 20000-29999 it wraps to the bottom, never into the ephemeral ports.
  asked.clear();
  const dlx::launch::PortProbe only_20001 = [&](int port) { return asked.push_back(port), port == 20001; };
  CHECK(port_of(one_rank("9999"), {}, only_20001) == "20001");
  CHECK(asked == std::vector<int>{29999, 20000, 20001});
  // Nothing free among the candidates: the starting point, and the trainer's bind says why.
  asked.clear();
  const dlx::launch::PortProbe none = [&](int port) { return asked.push_back(port), false; };
  CHECK(port_of(one_rank("42"), {}, none) == "20042");
  CHECK(asked.size() == static_cast<std::size_t>(dlx::launch::kPortProbes));
  // Outside Slurm: PyTorch's 29500 first, then up to 29999 and round.
  asked.clear();
  CHECK(port_of(one_rank(""), {}, taken_below(29501)) == "29501");
  CHECK(port_of(one_rank(""), {{"DLX_SLOT", "1"}}, kEveryPortFree) == std::to_string(29500 + 1009 % 500));
  // The user's own value wins without a probe.
  asked.clear();
  CHECK(port_of(one_rank("42"), {{"MASTER_PORT", "31000"}}, none) == "31000");
  CHECK(asked.empty());
}

TEST_CASE("launcher: port_is_free sees a listening socket", "[launch]") {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(::listen(fd, 1) == 0);
  socklen_t length = sizeof address;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  const int port = ntohs(address.sin_port);
  CHECK_FALSE(dlx::launch::port_is_free(port));
  ::close(fd);
  CHECK(dlx::launch::port_is_free(port));
}

TEST_CASE("launcher: resolve_ipv4 resolves localhost and rejects nonsense", "[launch]") {
  CHECK(dlx::launch::resolve_ipv4("localhost") == std::optional<std::string>("127.0.0.1"));
  CHECK_FALSE(dlx::launch::resolve_ipv4("dlx-no-such-host.invalid").has_value());
}

dlx::config::Resources resources(int nodes, int tasks, std::optional<int> gpus = std::nullopt) {
  dlx::config::Resources out;
  out.nodes_per_trial = nodes;
  out.tasks_per_node = tasks;
  out.gpus_per_node = gpus;
  return out;
}

TEST_CASE("launcher: the allocation check accepts a matching step", "[launch]") {
  CHECK_NOTHROW(dlx::launch::check_allocation(two_by_two(0), resources(2, 2)));
}

TEST_CASE("launcher: the allocation check says what differs", "[launch]") {
  auto p = two_by_two(0);
  p.num_nodes = 1;
  p.tasks_per_node = {2};
  CHECK_THROWS_WITH(dlx::launch::check_allocation(p, resources(2, 2)),
                    "this step has 1 node but the experiment asks for "
                    "nodes_per_trial: 2 (submit with sbatch -N 2 / check #SBATCH -N and srun -N "
                    "in the job script)");
  CHECK_THROWS_AS(dlx::launch::check_allocation(p, resources(2, 2)), dlx::launch::LaunchError);

  auto uneven = two_by_two(0);
  uneven.tasks_per_node = {2, 1};
  CHECK_THROWS_WITH(dlx::launch::check_allocation(uneven, resources(2, 2)),
                    Catch::StartsWith("this step runs 1 task on node 1 but the "
                                      "experiment asks for tasks_per_node: 2 (submit with "
                                      "--ntasks-per-node=2"));
  CHECK_THROWS_WITH(dlx::launch::check_allocation(two_by_two(0), resources(2, 1)),
                    Catch::StartsWith("this step runs 2 tasks on node 0 (n1)"));
}

TEST_CASE("launcher: the allocation check wants the GPUs the experiment asks for", "[launch]") {
  auto p = two_by_two(0);
  p.gpus = {};
  CHECK_THROWS_WITH(dlx::launch::check_allocation(p, resources(2, 2, 4)),
                    Catch::StartsWith("this step sees no GPU on node 0 (n1) but the "
                                      "experiment asks for gpus_per_node: 4 (submit with "
                                      "--gpus-per-node=4"));
  p.gpus = {"0"};
  CHECK_NOTHROW(dlx::launch::check_allocation(p, resources(2, 2, 4)));
  p.gpus = {};
  CHECK_NOTHROW(dlx::launch::check_allocation(p, resources(2, 2, 0)));
}

TEST_CASE("launcher: the Python package goes first on PYTHONPATH, once", "[launch]") {
  using dlx::launch::python_path_with;
  const std::filesystem::path ours = "/opt/dlx/lib/dlx/python";
  CHECK(python_path_with(ours, EnvMap{}) == "/opt/dlx/lib/dlx/python");
  CHECK(python_path_with(ours, EnvMap{{"PYTHONPATH", ""}}) == "/opt/dlx/lib/dlx/python");
  CHECK(python_path_with(ours, EnvMap{{"PYTHONPATH", "/home/a/src"}}) ==
        "/opt/dlx/lib/dlx/python:/home/a/src");
  // Already there (a requeued step inherits it): unchanged; a longer path that starts the same
  // is another directory.
  CHECK(python_path_with(ours, EnvMap{{"PYTHONPATH", "/x:/opt/dlx/lib/dlx/python"}}) ==
        "/x:/opt/dlx/lib/dlx/python");
  CHECK(python_path_with(ours, EnvMap{{"PYTHONPATH", "/opt/dlx/lib/dlx/python2"}}) ==
        "/opt/dlx/lib/dlx/python:/opt/dlx/lib/dlx/python2");
}

TEST_CASE("launcher: the Python package is found beside the installed dlx-launch", "[launch]") {
  const auto root = std::filesystem::temp_directory_path() / "dlx-python-package-test";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "bin");
  CHECK_FALSE(dlx::launch::python_package_dir(root / "bin" / "dlx-launch"));
  std::filesystem::create_directories(root / "lib" / "dlx" / "python" / "dlx");
  CHECK_FALSE(dlx::launch::python_package_dir(root / "bin" / "dlx-launch"));  // no __init__.py
  std::ofstream(root / "lib" / "dlx" / "python" / "dlx" / "__init__.py") << "\n";
  CHECK(dlx::launch::python_package_dir(root / "bin" / "dlx-launch") ==
        root / "lib" / "dlx" / "python");
  std::filesystem::remove_all(root);
}

TEST_CASE("launcher: containers get the portable libdlx_c where it is installed, else the build's", "[launch]") {
  const auto root = std::filesystem::temp_directory_path() / "dlx-library-file-test";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "bin");
  const auto launcher = root / "bin" / "dlx-launch";
  CHECK_FALSE(dlx::launch::dlx_library_file(launcher));
  std::filesystem::create_directories(root / "lib" / "dlx" / "container");
  std::ofstream(root / "lib" / "libdlx_c.so.0") << "build's\n";
  CHECK(dlx::launch::dlx_library_file(launcher) == root / "lib" / "libdlx_c.so.0");
  std::ofstream(root / "lib" / "dlx" / "container" / "libdlx_c.so.0") << "portable\n";
  CHECK(dlx::launch::dlx_library_file(launcher) == root / "lib" / "dlx" / "container" / "libdlx_c.so.0");
  std::filesystem::remove_all(root);
}
