// SPDX-License-Identifier: Apache-2.0
#pragma once
// A TCP port held for the trainer until it starts. dlx-launch chooses MASTER_PORT seconds before
// the trainer's TCPStore binds it (rank 0 of a trial of several ranks also waits for its data and
// tells the other ranks first: master_port_rendezvous.hpp). A port that was merely free when
// probed could be chosen in those seconds by another dlx-launch on the node (another job's trial,
// another slot of a packed task) as well. So dlx-launch binds its choice, on every address,
// without SO_REUSEADDR: Linux then refuses every other bind of that port, with SO_REUSEADDR or
// not, so another dlx-launch's probe (launch_env.hpp's port_is_free, or a reservation of its own)
// sees the port taken and moves on. It does not listen: another rank whose trainer starts first
// and connects meanwhile is refused and retries, as before any server is up, where a listening
// hold would have queued the connection and reset it on closing (verified with PyTorch 1.13: a
// TCPStore client that connected to a listening hold died with "Connection reset by peer" when
// the hold closed; against a bound one it retried and got the server's value once that was up).
// The hold is let go just before the trainer starts (its TCPStore binds the same port; a socket
// that never connected leaves no TIME_WAIT); the socket is close-on-exec, so no child ever
// inherits it.
#include <optional>
#include <utility>
#include <vector>

#include "dlx/common/unique_fd.hpp"

namespace dlx::launch {

class PortReservation {
 public:
  // `port` of every address, held; nullopt when it is in use (or no socket can be made).
  static std::optional<PortReservation> hold(int port);
  // The trial's own port (its first candidate): as hold(), and also where only TIME_WAIT
  // connections of the trial's previous run are left on it (after a requeue), which the
  // trainer's TCPStore binds over with SO_REUSEADDR all the same. Walking on from there entered
  // the next job's ports, and two trials could then pick the same one in the seconds before
  // either trainer bound it (cluster.determined_core: "Address already in use" on a requeue).
  // Held then with SO_REUSEADDR: it does not keep out another such hold, only the trial of a job
  // whose id is this one's modulo 10000 could make one.
  static std::optional<PortReservation> hold_own(int port);
  // A port the kernel picks (from its ephemeral range); nullopt when none can be had.
  static std::optional<PortReservation> any_port();

  int port() const noexcept { return port_; }

 private:
  PortReservation(UniqueFd socket, int port) : socket_(std::move(socket)), port_(port) {}
  UniqueFd socket_;
  int port_ = 0;
};

// The first of `candidates` this node lets dlx-launch hold (the first as hold_own()); when every
// one is taken (by another user's processes, say), a port the kernel picks, which no fixed range
// can squat; nullopt only when not even that can be had.
std::optional<PortReservation> reserve_first_free(const std::vector<int>& candidates);

}  // namespace dlx::launch
