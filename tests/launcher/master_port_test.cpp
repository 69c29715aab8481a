// SPDX-License-Identifier: Apache-2.0
// MASTER_PORT held until the trainer starts (port_reservation.hpp) and told by rank 0 to the other
// ranks of a trial (master_port_rendezvous.hpp): real sockets, real files, real polling.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "dlx/launch/launch_env.hpp"
#include "dlx/launch/launch_error.hpp"
#include "dlx/launch/master_port_rendezvous.hpp"
#include "dlx/launch/port_reservation.hpp"
#include "process_helpers.hpp"

using dlx::launch::MasterPortRendezvous;
using dlx::launch::PortReservation;
using dlx::test::TempDir;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// connect() to `port` on the loopback address: 0, or the errno it failed with.
int connect_error(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  const int error = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 ? 0 : errno;
  ::close(fd);
  return error;
}

}  // namespace

TEST_CASE("launcher: a held port is taken for every other prober until it is let go", "[launch][port]") {
  auto held = PortReservation::any_port();
  REQUIRE(held);
  const int port = held->port();
  CHECK(port > 0);
  CHECK_FALSE(dlx::launch::port_is_free(port));         // another dlx-launch's probe moves on
  CHECK_FALSE(PortReservation::hold(port));             // and so does its own reservation
  // Another rank's trainer connecting early is refused (and retries), never queued on the hold
  // and then reset when it is let go.
  CHECK(connect_error(port) == ECONNREFUSED);
  held.reset();
  CHECK(dlx::launch::port_is_free(port));               // the trainer's TCPStore can bind it now
  auto again = PortReservation::hold(port);
  REQUIRE(again);
  CHECK(again->port() == port);
  CHECK_FALSE(PortReservation::hold(0x10000));          // no such port
}

TEST_CASE("launcher: the first free candidate is held, and with all taken one the kernel picks", "[launch][port]") {
  // Three ports the test holds, as another user's processes might.
  std::vector<PortReservation> squatted;
  std::vector<int> candidates;
  for (int i = 0; i < 3; ++i) {
    auto held = PortReservation::any_port();
    REQUIRE(held);
    candidates.push_back(held->port());
    squatted.push_back(std::move(*held));
  }
  auto free_one = PortReservation::any_port();
  REQUIRE(free_one);
  const int free_port = free_one->port();
  free_one.reset();

  auto chosen = dlx::launch::reserve_first_free({candidates[0], candidates[1], free_port, candidates[2]});
  REQUIRE(chosen);
  CHECK(chosen->port() == free_port);
  chosen.reset();

  // Every candidate taken: a port outside them, still held.
  auto fallback = dlx::launch::reserve_first_free(candidates);
  REQUIRE(fallback);
  CHECK(std::find(candidates.begin(), candidates.end(), fallback->port()) == candidates.end());
  CHECK(fallback->port() >= 1024);
  CHECK_FALSE(dlx::launch::port_is_free(fallback->port()));
}

TEST_CASE("launcher: the trial's own port is kept when only its previous run's TIME_WAIT is on it", "[launch][port]") {
  // A TCPStore-like server on a port, a client, and the server closing first: the server's side
  // of that connection stays in TIME_WAIT on the port, as after a requeued trainer was killed.
  int port = 0;
  {
    auto probe = PortReservation::any_port();
    REQUIRE(probe);
    port = probe->port();
  }
  const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int on = 1;
  ::setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  REQUIRE(::bind(server, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(::listen(server, 1) == 0);
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(::connect(client, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  const int accepted = ::accept(server, nullptr, nullptr);
  REQUIRE(accepted >= 0);
  ::close(accepted);  // the server's side closes first: TIME_WAIT on `port`
  ::close(server);
  std::this_thread::sleep_for(50ms);
  ::close(client);
  std::this_thread::sleep_for(50ms);

  CHECK_FALSE(PortReservation::hold(port));  // an exclusive hold cannot be had over TIME_WAIT
  CHECK(dlx::launch::port_is_free(port));    // but a TCPStore would bind it
  auto own = dlx::launch::reserve_first_free({port, port + 1});
  REQUIRE(own);
  CHECK(own->port() == port);  // kept, not walked on into the next job's ports
}

TEST_CASE("launcher: rank 0's port reaches a rank that waits for it", "[launch][port]") {
  TempDir dir("master-port");
  const MasterPortRendezvous rendezvous(dir.path() / "trials" / "3" / ".port.812.0.0.3");
  std::thread rank0([&] {
    std::this_thread::sleep_for(300ms);
    rendezvous.publish(24567);
  });
  int polls = 0;
  const auto port = rendezvous.wait(10s, [&] { return ++polls, false; });
  rank0.join();
  CHECK(port == 24567);
  CHECK(polls >= 2);  // it did wait
  std::ifstream in(rendezvous.file());
  std::string line;
  std::getline(in, line);
  CHECK(line == "port 24567");
  CHECK((fs::status(rendezvous.file()).permissions() & fs::perms::others_all) == fs::perms::none);
}

TEST_CASE("launcher: a rank stops waiting for rank 0's port when told, and at its deadline", "[launch][port]") {
  TempDir dir("master-port-wait");
  const MasterPortRendezvous rendezvous(dir.path() / ".port.812.0.0.3");
  int polls = 0;
  CHECK_FALSE(rendezvous.wait(10s, [&] { return ++polls == 3; }));
  CHECK(polls == 3);

  const auto started = std::chrono::steady_clock::now();
  CHECK_THROWS_MATCHES(rendezvous.wait(300ms, {}), dlx::launch::LaunchError,
                       Catch::Matchers::Message(
                           "rank 0 did not say within 0.3 s which MASTER_PORT it listens on (" +
                           rendezvous.file().string() +
                           " never appeared): rank 0's output says why (`dlx logs`); a rank 0 that needs longer to "
                           "start (a slow data copy) needs a longer DLX_MASTER_PORT_WAIT_S, in seconds"));
  CHECK(std::chrono::steady_clock::now() - started >= 300ms);
}

TEST_CASE("launcher: a port file not written by rank 0 is refused by name", "[launch][port]") {
  TempDir dir("master-port-bad");
  const MasterPortRendezvous rendezvous(dir.path() / ".port.812.0.0.3");
  for (const char* text : {"port 0", "port 65536", "port 12ab", "24567", "port ", "port -5"}) {
    std::ofstream(rendezvous.file()) << text << "\n";
    CHECK_THROWS_MATCHES(rendezvous.wait(10s, {}), dlx::launch::LaunchError,
                         Catch::Matchers::Message(rendezvous.file().string() + " should hold \"port N\" as rank 0 "
                                                  "writes it, not \"" + text + "\" (remove it and requeue the trial)"));
  }
}

TEST_CASE("launcher: rank 0 removes other runs' port files, and only those", "[launch][port]") {
  TempDir dir("master-port-stale");
  const MasterPortRendezvous rendezvous(dir.path() / ".port.812.1.0.3");
  for (const char* name : {".port.812.0.0.3", ".port.700.0.0.3", ".crash.812.0.0", "trial.h5"}) {
    std::ofstream(dir.path() / name) << "x\n";
  }
  rendezvous.publish(20812);
  rendezvous.remove_stale();
  CHECK(fs::exists(rendezvous.file()));
  CHECK_FALSE(fs::exists(dir.path() / ".port.812.0.0.3"));
  CHECK_FALSE(fs::exists(dir.path() / ".port.700.0.0.3"));
  CHECK(fs::exists(dir.path() / ".crash.812.0.0"));
  CHECK(fs::exists(dir.path() / "trial.h5"));
}

TEST_CASE("launcher: how long a rank waits for rank 0's port", "[launch][port]") {
  CHECK(MasterPortRendezvous::deadline_from({}, 0ms) == 900s);
  CHECK(MasterPortRendezvous::deadline_from({}, 1800s) == 2700s);  // after the data's deadline
  CHECK(MasterPortRendezvous::deadline_from({{"DLX_MASTER_PORT_WAIT_S", "5"}}, 0ms) == 5s);
  CHECK_THROWS_WITH(MasterPortRendezvous::deadline_from({{"DLX_MASTER_PORT_WAIT_S", "soon"}}, 0ms),
                    Catch::Contains("DLX_MASTER_PORT_WAIT_S=soon"));
}
