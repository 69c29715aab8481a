// SPDX-License-Identifier: Apache-2.0
// MASTER_PORT as dlx-launch settles it (master_port_rendezvous.hpp, port_reservation.hpp): the real
// binary under a fake srun environment, real sockets, the trial directory as the ranks share it.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <string>
#include <thread>

#include "dlx/launch/master_port_rendezvous.hpp"
#include "dlx/record/trial_record.hpp"
#include "dlx/launch/port_reservation.hpp"
#include "fake_srun_step.hpp"
#include "process_helpers.hpp"

using dlx::launch::PortReservation;
using dlx::test::run_with_env;
using dlx::test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string kPortLaunch = DLX_LAUNCH_BINARY;

// The trial of dlx::test::two_node_step_env (job 1234, whose own port is 21234): the grid example,
// frozen.
void freeze_grid(const fs::path& dir) {
  fs::copy_file(fs::path(DLX_SOURCE_DIR) / "examples" / "grid.yaml", dir / "experiment.yaml");
}

fs::path port_file(const fs::path& dir) { return dir / "trials" / "1" / ".port.1234.0.0.1"; }

std::string first_line_of(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// A trainer that listens on MASTER_PORT as torch.distributed's TCPStore does: it can only if
// dlx-launch let its hold go first.
const std::string kListeningTrainer =
    "import os, socket\n"
    "s = socket.socket()\n"
    "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('', int(os.environ['MASTER_PORT'])))\n"
    "s.listen(1)\n"
    "print('listening on', os.environ['MASTER_PORT'])\n";

const std::string kEchoPort = "echo \"trainer got MASTER_PORT=$MASTER_PORT\"";

}  // namespace

TEST_CASE("launcher port: rank 0 takes the first free port and tells the other ranks", "[launch-cli][port]") {
  TempDir dir("port-rank0");
  freeze_grid(dir.path());
  // The job's own port held, as a trial of a job whose id is this one's modulo 10000 would, or
  // another user; and an earlier attempt's file, which says nothing about this one.
  const auto squatter = PortReservation::hold(21234);
  const fs::path stale = dir.path() / "trials" / "1" / ".port.1234.0.7.1";
  fs::create_directories(stale.parent_path());
  std::ofstream(stale) << "port 21234\n";

  const auto rank0 = run_with_env(dlx::test::two_node_step_env(dir.path(), 0), {kPortLaunch, "--", "/usr/bin/python3", "-c",
                                                                 kListeningTrainer});
  INFO(rank0.output);
  REQUIRE(rank0.status == 0);
  std::smatch chosen;
  REQUIRE(std::regex_search(rank0.output, chosen, std::regex("listening on (\\d+)")));
  const int port = std::stoi(chosen[1]);
  CHECK(port > 21234);
  CHECK(port < 21234 + 100);
  CHECK_THAT(rank0.output, Catch::Contains("dlx-launch: MASTER_PORT " + std::to_string(port) +
                                           ": 21234 is in use on dlxfake1\n"));
  CHECK(first_line_of(port_file(dir.path())) == "port " + std::to_string(port));
  CHECK_FALSE(fs::exists(stale));

  const auto rank1 = run_with_env(dlx::test::two_node_step_env(dir.path(), 1), {kPortLaunch, "--", "sh", "-c", kEchoPort});
  INFO(rank1.output);
  CHECK(rank1.status == 0);
  CHECK_THAT(rank1.output, Catch::Contains("trainer got MASTER_PORT=" + std::to_string(port) + "\n"));
}

TEST_CASE("launcher port: another rank waits until rank 0 has told it", "[launch-cli][port]") {
  TempDir dir("port-wait");
  freeze_grid(dir.path());
  std::thread rank0([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    dlx::launch::MasterPortRendezvous(port_file(dir.path())).publish(24321);
  });
  const auto started = std::chrono::steady_clock::now();
  const auto rank1 = run_with_env(dlx::test::two_node_step_env(dir.path(), 1), {kPortLaunch, "--", "sh", "-c", kEchoPort});
  rank0.join();
  INFO(rank1.output);
  CHECK(rank1.status == 0);
  CHECK(std::chrono::steady_clock::now() - started >= std::chrono::milliseconds(700));
  CHECK_THAT(rank1.output, Catch::Contains("trainer got MASTER_PORT=24321\n"));
}

TEST_CASE("launcher port: a rank that rank 0 never tells gives up, and says so to the others", "[launch-cli][port]") {
  TempDir dir("port-silent");
  freeze_grid(dir.path());
  auto env = dlx::test::two_node_step_env(dir.path(), 1);
  env["DLX_MASTER_PORT_WAIT_S"] = "1";
  const fs::path ran = dir.path() / "trainer-ran";
  const auto rank1 = run_with_env(env, {kPortLaunch, "--", "touch", ran.string()});
  INFO(rank1.output);
  CHECK(rank1.status == 1);
  CHECK_THAT(rank1.output, Catch::Contains("dlx-launch: rank 0 did not say within 1 s which MASTER_PORT it listens "
                                           "on (" + port_file(dir.path()).string() + " never appeared)"));
  CHECK_THAT(rank1.output, Catch::Contains("DLX_MASTER_PORT_WAIT_S"));
  CHECK_FALSE(fs::exists(ran));
  // Rank 0's trainer, had it started after all, is ended instead of waiting for this rank.
  const auto crash = first_line_of(dir.path() / "trials" / "1" / ".crash.1234.0.0");
  CHECK_THAT(crash, Catch::Contains("\"where\":\"rank 1 on dlxfake2\"") && Catch::Contains("did not say within 1 s"));

  // A value that is no number: the same, said at once.
  fs::remove(dir.path() / "trials" / "1" / ".crash.1234.0.0");
  env["DLX_MASTER_PORT_WAIT_S"] = "later";
  const auto bad = run_with_env(env, {kPortLaunch, "--", "touch", ran.string()});
  CHECK(bad.status != 0);
  CHECK_THAT(bad.output, Catch::Contains("DLX_MASTER_PORT_WAIT_S=later"));
  CHECK_FALSE(fs::exists(ran));
  CHECK_THAT(first_line_of(dir.path() / "trials" / "1" / ".crash.1234.0.0"), Catch::Contains("DLX_MASTER_PORT_WAIT_S=later"));
}

TEST_CASE("launcher port: a crash announced by rank 0 ends the wait at once, as rank 0 decided", "[launch-cli][port]") {
  TempDir dir("port-crash");
  freeze_grid(dir.path());  // max_restarts: 5
  const fs::path crash_file = dir.path() / "trials" / "1" / ".crash.1234.0.0";
  fs::create_directories(crash_file.parent_path());
  const fs::path ran = dir.path() / "trainer-ran";
  auto wait_for_rank0 = [&] {
    const auto started = std::chrono::steady_clock::now();
    auto result = run_with_env(dlx::test::two_node_step_env(dir.path(), 1), {kPortLaunch, "--", "touch", ran.string()});
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(60));  // not the 900 s deadline
    CHECK_FALSE(fs::exists(ran));
    return result;
  };
  SECTION("rank 0 refused the trial (its data could not be staged): failed on every rank, no requeue") {
    std::ofstream(crash_file) << R"({"where":"rank 0 on dlxfake1","status":1,"error":"cannot stage the experiment's )"
                                 R"(data on dlxfake1: no space left","refused":true})" << "\n";
    const auto rank1 = wait_for_rank0();
    INFO(rank1.output);
    CHECK(rank1.status == 1);
    CHECK_THAT(rank1.output, Catch::Contains("dlx-launch: rank 0 on dlxfake1 refused the trial (cannot stage the "
                                             "experiment's data on dlxfake1: no space left) before this rank's trainer "
                                             "started; it is not started\n"));
    CHECK_THAT(rank1.output, !Catch::Contains("exiting 85"));
  }
  SECTION("rank 0's trainer crashed: restarted on every rank while max_restarts allows") {
    std::ofstream(crash_file) << R"json({"where":"rank 0 on dlxfake1","status":137,"error":"killed by SIGKILL (exit 137)"})json"
                              << "\n";
    const auto rank1 = wait_for_rank0();
    INFO(rank1.output);
    CHECK(rank1.status == 85);
    CHECK_THAT(rank1.output, Catch::Contains("dlx-launch: rank 0 on dlxfake1: killed by SIGKILL (exit 137) crashed "
                                             "before this rank's trainer started; it is not started\n"));
    CHECK_THAT(rank1.output, Catch::Contains("exiting 85 so that Slurm requeues the trial"));
  }
}

TEST_CASE("launcher port: a rank 0 that cannot tell its port fails the trial, on every rank", "[launch-cli][port]") {
  TempDir dir("port-untold");
  freeze_grid(dir.path());
  // A directory where rank 0's file goes: the rename that publishes it fails, as root too (a
  // read-only experiment directory would stop only an ordinary user).
  fs::create_directories(port_file(dir.path()) / "in-the-way");
  const fs::path ran = dir.path() / "trainer-ran";
  const auto rank0 = run_with_env(dlx::test::two_node_step_env(dir.path(), 0), {kPortLaunch, "--", "touch", ran.string()});
  INFO(rank0.output);
  CHECK(rank0.status == 1);
  const std::string untold = "cannot tell the other ranks which MASTER_PORT rank 0 listens on: ";
  CHECK_THAT(rank0.output, Catch::Contains("dlx-launch: " + untold));
  CHECK_THAT(rank0.output, Catch::Contains(port_file(dir.path()).string()));
  CHECK_THAT(rank0.output, Catch::Contains("(is the experiment directory writable?)"));
  CHECK_FALSE(fs::exists(ran));
  const auto record = dlx::record::load_trial_record(dir.path() / "trials" / "1" / "trial.h5");
  CHECK(record.state == "failed");
  CHECK_THAT(record.stop_reason, Catch::StartsWith("failed: dlx-launch: " + untold));

  // The other rank, waiting for the port, is told at once and fails too.
  auto env = dlx::test::two_node_step_env(dir.path(), 1);
  env["DLX_MASTER_PORT_WAIT_S"] = "60";
  const auto started = std::chrono::steady_clock::now();
  const auto rank1 = run_with_env(env, {kPortLaunch, "--", "touch", ran.string()});
  INFO(rank1.output);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(30));
  CHECK(rank1.status == 1);
  CHECK_THAT(rank1.output, Catch::Contains("dlx-launch: rank 0 on dlxfake1 refused the trial (" + untold));
  CHECK_FALSE(fs::exists(ran));
}

TEST_CASE("launcher port: MASTER_PORT set in the job script wins on every rank, without waiting", "[launch-cli][port]") {
  TempDir dir("port-given");
  freeze_grid(dir.path());
  auto env = dlx::test::two_node_step_env(dir.path(), 1);
  env["MASTER_PORT"] = "31000";
  const auto rank1 = run_with_env(env, {kPortLaunch, "--", "sh", "-c", kEchoPort});
  INFO(rank1.output);
  CHECK(rank1.status == 0);
  CHECK_THAT(rank1.output, Catch::Contains("trainer got MASTER_PORT=31000\n"));
  CHECK_FALSE(fs::exists(port_file(dir.path())));
}

TEST_CASE("launcher port: a trial of one rank can listen on the port it was given", "[launch-cli][port]") {
  // Outside Slurm: 29500 first. Held by someone else, the next; either way let go before the
  // trainer starts.
  const auto squatter = PortReservation::hold(29500);
  const auto result = run_with_env({}, {kPortLaunch, "--", "/usr/bin/python3", "-c", kListeningTrainer});
  INFO(result.output);
  CHECK(result.status == 0);
  std::smatch chosen;
  REQUIRE(std::regex_search(result.output, chosen, std::regex("listening on (\\d+)")));
  CHECK(std::stoi(chosen[1]) > 29500);
  CHECK(std::stoi(chosen[1]) < 30000);
}
