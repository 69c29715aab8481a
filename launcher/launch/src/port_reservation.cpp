// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/port_reservation.hpp"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <utility>

namespace dlx::launch {

namespace {

// A socket bound to `port` (0: the kernel's choice) of every IPv4 address, and the port it got.
// No listen(); SO_REUSEADDR only when `reuse`: see port_reservation.hpp.
std::optional<std::pair<UniqueFd, int>> bound_socket(int port, bool reuse = false) {
  UniqueFd socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!socket) return std::nullopt;
  if (reuse) {
    const int on = 1;
    ::setsockopt(socket.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::bind(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) return std::nullopt;
  socklen_t length = sizeof address;
  if (::getsockname(socket.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) return std::nullopt;
  const int got = ntohs(address.sin_port);
  return std::pair<UniqueFd, int>(std::move(socket), got);
}

}  // namespace

std::optional<PortReservation> PortReservation::hold(int port) {
  if (port <= 0 || port > 65535) return std::nullopt;
  auto held = bound_socket(port);
  if (!held) return std::nullopt;
  return PortReservation(std::move(held->first), held->second);
}

std::optional<PortReservation> PortReservation::hold_own(int port) {
  if (auto held = hold(port)) return held;
  if (port <= 0 || port > 65535) return std::nullopt;
  auto shared = bound_socket(port, /*reuse=*/true);
  if (!shared) return std::nullopt;
  return PortReservation(std::move(shared->first), shared->second);
}

std::optional<PortReservation> PortReservation::any_port() {
  auto held = bound_socket(0);
  if (!held) return std::nullopt;
  return PortReservation(std::move(held->first), held->second);
}

std::optional<PortReservation> reserve_first_free(const std::vector<int>& candidates) {
  if (!candidates.empty()) {
    if (auto own = PortReservation::hold_own(candidates.front())) return own;
  }
  for (const int port : candidates) {
    if (auto held = PortReservation::hold(port)) return held;
  }
  return PortReservation::any_port();
}

}  // namespace dlx::launch
