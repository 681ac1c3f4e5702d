// Plain TCP probes of a server the harness asks about itself (no client library): whether a port accepts
// connections (etcd and ZooKeeper members: a member that is up but cut off from its peers still accepts), and one
// request/answer exchange on a fresh connection that the server closes after answering (ZooKeeper's four-letter
// words: `srvr` answers with the member's version and Mode: leader|follower|standalone).
// Both are bounded by their timeout and never throw.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "core/cluster.h"

namespace lockcheck {

// True when something accepts a TCP connection at e (an IPv4 literal) within timeout (a plain connect, then close).
bool port_accepts(const Endpoint& e, std::chrono::milliseconds timeout);

// Connects to e, sends request, reads until the server closes the connection (at most max_bytes); nullopt when
// it could not connect, the server closed without answering, or timeout passed first (over the whole exchange).
std::optional<std::string> tcp_exchange(const Endpoint& e, const std::string& request,
                                        std::chrono::milliseconds timeout, size_t max_bytes = 64 * 1024);

}  // namespace lockcheck
