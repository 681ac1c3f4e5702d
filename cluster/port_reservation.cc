#include "cluster/port_reservation.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "core/cluster.h"

namespace lockcheck {

namespace {

bool bindable(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

PortReservation& PortReservation::operator=(PortReservation&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    port_ = o.port_;
    o.fd_ = -1;
  }
  return *this;
}

PortReservation::~PortReservation() {
  if (fd_ >= 0) ::close(fd_);  // the flock goes with the descriptor
}

std::optional<PortReservation> PortReservation::try_reserve(int port, const std::string& dir) {
  const std::string path = dir + "/" + std::to_string(port);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return std::nullopt;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  if (!bindable(port)) {
    ::close(fd);
    return std::nullopt;
  }
  return PortReservation(fd, port);
}

PortRange reservable_ports() {
  int ephemeral_low = 32768;
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int lo = 0, hi = 0;
  if (in >> lo >> hi && lo > 0) ephemeral_low = lo;
  // Below the ephemeral range; at least 2,000 ports wide, from 10000 (clear of the well-known and most
  // registered services' defaults). A kernel whose ephemeral range starts low leaves [10000, 12000).
  const int high = ephemeral_low > 12000 ? ephemeral_low : 12000;
  return {10000, high};
}

std::string port_lock_dir() {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/lockcheck-ports";
  if (::mkdir(dir.c_str(), 01777) == 0) ::chmod(dir.c_str(), 01777);  // every user's runs share it
  return dir;
}

PortReservation reserve_loopback_port(std::mt19937_64& rng, int tries) {
  const PortRange r = reservable_ports();
  const std::string dir = port_lock_dir();
  std::uniform_int_distribution<int> pick(r.low, r.high - 1);
  for (int i = 0; i < tries; ++i) {
    if (auto got = PortReservation::try_reserve(pick(rng), dir)) return std::move(*got);
  }
  throw ClusterError("cannot reserve a loopback port in [" + std::to_string(r.low) + ", " + std::to_string(r.high) +
                     ") after " + std::to_string(tries) + " draws (lock files in " + dir + ")");
}

}  // namespace lockcheck
