#include "cluster/tcp_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace lockcheck {

namespace {

using Clock = std::chrono::steady_clock;

int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// A connected non-blocking socket to e, or -1 (refused, unreachable, or not connected by deadline).
int connect_by(const Endpoint& e, Clock::time_point deadline) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(e.port));
  if (::inet_pton(AF_INET, e.host.c_str(), &addr.sin_addr) != 1) {
    ::close(fd);
    return -1;
  }
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
  if (errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, ms_left(deadline)) == 1) {
      int err = 0;
      socklen_t len = sizeof err;
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) return fd;
    }
  }
  ::close(fd);
  return -1;
}

}  // namespace

bool port_accepts(const Endpoint& e, std::chrono::milliseconds timeout) {
  const int fd = connect_by(e, Clock::now() + timeout);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

std::optional<std::string> tcp_exchange(const Endpoint& e, const std::string& request,
                                        std::chrono::milliseconds timeout, size_t max_bytes) {
  const auto deadline = Clock::now() + timeout;
  const int fd = connect_by(e, deadline);
  if (fd < 0) return std::nullopt;
  size_t sent = 0;
  while (sent < request.size()) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, ms_left(deadline)) != 1) break;
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) break;
    if (n > 0) sent += static_cast<size_t>(n);
  }
  std::string out;
  bool closed = false;
  if (sent == request.size()) {
    char buf[4096];
    while (out.size() < max_bytes) {
      pollfd p{fd, POLLIN, 0};
      const int ready = ::poll(&p, 1, ms_left(deadline));
      if (ready < 0 && errno == EINTR) continue;
      if (ready != 1) break;
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n == 0) {
        closed = true;
        break;
      }
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        break;
      }
      out.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  if (!closed || out.empty()) return std::nullopt;
  return out;
}

}  // namespace lockcheck
