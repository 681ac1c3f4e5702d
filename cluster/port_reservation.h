// Ports for local members that no other lockcheck process on this machine uses at the same time, and that the
// kernel does not hand out to outgoing connections.
//
// A port drawn free (bind to 0, close) is free only until someone binds it, and a ZooKeeper member binds its
// quorum port only when it is elected leader, seconds after the draw: runs side by side (test-all --parallel) drew
// the same ports, and a member's peers, through their proxy links, reached another run's member on its port and
// synchronised with a foreign ensemble (the lock's nodes came back with another run's sequence numbers: a false
// double grant). So a drawn port comes from below the kernel's ephemeral range (no outgoing connection takes
// it), is bindable on 127.0.0.1 when drawn, and is held by an flock on a file per port under
// $TMPDIR/lockcheck-ports for as long as its reservation lives (the cluster's life; the lock goes with the
// process, however it ends). Other programs can still take such a port; the cluster's start-again on a taken
// port covers that.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>

namespace lockcheck {

class PortReservation {
 public:
  PortReservation(PortReservation&& o) noexcept : fd_(o.fd_), port_(o.port_) { o.fd_ = -1; }
  PortReservation& operator=(PortReservation&& o) noexcept;
  PortReservation(const PortReservation&) = delete;
  PortReservation& operator=(const PortReservation&) = delete;
  ~PortReservation();

  // The port's lock when no other process holds it and the port is bindable on 127.0.0.1 now; nullopt otherwise.
  static std::optional<PortReservation> try_reserve(int port, const std::string& dir);
  int port() const { return port_; }

 private:
  PortReservation(int fd, int port) : fd_(fd), port_(port) {}
  int fd_ = -1;
  int port_ = 0;
};

// The range drawn from: [low, high), below the kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range).
struct PortRange {
  int low = 0, high = 0;
};
PortRange reservable_ports();

// The folder of the lock files: $TMPDIR/lockcheck-ports (made, mode 1777, when missing).
std::string port_lock_dir();

// A reserved port drawn at random from reservable_ports(), at most `tries` draws; throws ClusterError when none
// could be reserved.
PortReservation reserve_loopback_port(std::mt19937_64& rng, int tries = 200);

}  // namespace lockcheck
