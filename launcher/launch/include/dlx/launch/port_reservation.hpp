// SPDX-License-Identifier: Apache-2.0
#pragma once
// A TCP port held for the trainer until it starts. dlx-launch chooses MASTER_PORT seconds before
// the trainer's TCPStore binds it (rank 0 of a trial of several ranks also waits for its data and
// tells the other ranks first: master_port_rendezvous.hpp). A port that was merely free when
// probed could be chosen in those seconds by another dlx-launch on the node (another job's trial,
// another slot of a packed task) as well. So dlx-launch listens on its choice, on every address
// with SO_REUSEADDR as TCPStore does: another dlx-launch's probe (launch_env.hpp's port_is_free,
// or a reservation of its own) then sees the port taken and moves on. The hold is let go just
// before the trainer starts (its TCPStore binds the same port); the socket is close-on-exec, so
// no child ever inherits it.
#include <optional>
#include <utility>
#include <vector>

#include "dlx/common/unique_fd.hpp"

namespace dlx::launch {

class PortReservation {
 public:
  // Listening on `port` of every address; nullopt when that is in use (or no socket can be made).
  static std::optional<PortReservation> listen_on(int port);
  // A port the kernel picks (from its ephemeral range); nullopt when none can be had.
  static std::optional<PortReservation> any_port();

  int port() const noexcept { return port_; }

 private:
  PortReservation(UniqueFd socket, int port) : socket_(std::move(socket)), port_(port) {}
  UniqueFd socket_;
  int port_ = 0;
};

// The first of `candidates` this node lets dlx-launch listen on; when every one is taken (by
// another user's processes, say), a port the kernel picks, which no fixed range can squat;
// nullopt only when not even that can be had.
std::optional<PortReservation> reserve_first_free(const std::vector<int>& candidates);

}  // namespace dlx::launch
