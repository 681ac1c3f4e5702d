// A TCP proxy that the harness owns and puts in front of every Redis node of the local backend, so that the
// nemesis can cut and delay links without root (no iptables, no tc), as TigerBeetle's Vortex does.
//
// Model. A *link* is a directed pair of parties (from, to) -- parties are strings such as "c0" (a client slot)
// or "n1" (a node) -- with an upstream address. add_link opens a listener on 127.0.0.1 (a free port) that
// forwards every accepted connection to upstream: `from` connects to the listener, `to` is behind upstream.
// Faults belong to the *unordered* pair {a, b}: cut("c0", "n1") also acts on a link added as ("n1", "c0"), and
// a fault set before a link is added applies to it from the start.
// A *shared link* (add_shared_link) is one listener to node `to` for many parties, told apart by the source
// address they connect from (name_source): Redis nodes and Sentinels started with their own bind-source-addr
// (127.0.1.x) use it for node-to-node traffic, which must name each node by one address. A connection takes
// the faults of the pair {its source's party, to}; one from an unnamed address (the harness's own, from
// 127.0.0.1) is never faulted.
//
// Behaviour (per connection, per direction):
// - cut(a, b): nothing is forwarded in either direction; bytes read are held in the proxy (not answered, not
//   refused, the connections stay open -- like an iptables DROP). A connection accepted while its link is cut
//   is accepted but not connected upstream until heal. A close (EOF) from either side is held too.
// - heal(a, b): clears every fault of the pair (the cut and the delay); held bytes flow again, in order, and a
//   held close follows them. heal_all() clears every fault of every pair.
// - set_delay(a, b, delay, jitter): each chunk read from then on is forwarded no earlier than delay + a
//   uniform draw in [0, jitter] after it was read, and never before the chunk read before it (order is kept
//   per direction). A chunk's release time is fixed when it is read: changing or removing the delay later (or
//   healing) does not hurry chunks already in flight, which is what a "delayed packet arrives after the lock
//   expired" scenario needs. delay = jitter = 0 removes the delay.
// - Closing: when one side closes (EOF or a reset) the proxy forwards what it holds from that side, then
//   shuts down the other side's sending half; when both halves are done, or a write fails, both sockets close.
// - Upstream down: an upstream that refuses a connection (a killed node), or upstream_down(), takes every link
//   to it down: the proxy stops listening on the link's port, so that connecting is refused as by the node
//   itself (a definite failure for the client, not a connection closed after its request), and resets the
//   connections still waiting for upstream (the one that met the refusal included). Connections already
//   connected upstream end as the node ends them. The proxy probes a down upstream every 50 ms and listens
//   on the same port again once it answers (or at once on upstream_up()); a port taken meanwhile by another
//   program keeps the link down until it is free. A cut link to a dead node is refused too (a real DROP would
//   leave the connect hanging).
// - Bounds: a direction holding max_held_bytes_per_direction or more stops reading its source (so TCP
//   backpressure holds the sender; it can exceed the cap by one read of read_chunk_bytes); at most
//   max_connections connections are open at once (a connection accepted beyond that is closed at once).
//
// Threading: one background thread runs all I/O; every public method is thread-safe and may be called from
// any thread but that one (calls are serialised and wait for the proxy thread, bounded by api_timeout).
// Randomness: jitter is drawn from a std::mt19937_64 seeded by the constructor's seed.
// Ownership: the proxy owns its listeners and every proxied connection; stop() (also run by the destructor)
// closes them all and joins the thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/cluster.h"

namespace lockcheck {

// The proxy could not do what was asked (bind failed, unknown link, stopped, proxy thread unresponsive).
class FaultProxyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct FaultProxyOptions {
  // Bytes one direction of one connection may hold (cut or delayed) before the proxy stops reading its source.
  size_t max_held_bytes_per_direction = size_t{16} << 20;
  // Bytes per read from a socket at most (one chunk; delays apply per chunk). A connection's read buffer starts at
  // 2 KiB and doubles up to this when reads fill it: small requests cost small buffers.
  size_t read_chunk_bytes = size_t{64} << 10;
  // Open proxied connections over all links (each uses two file descriptors).
  size_t max_connections = 1024;
  // How long a public method waits for the proxy thread before it throws FaultProxyError.
  std::chrono::milliseconds api_timeout_ms{10000};
};

// Counters of one link (over all its connections, past and present).
struct LinkStats {
  uint64_t bytes_to_upstream = 0;    // forwarded from the `from` side to upstream
  uint64_t bytes_to_downstream = 0;  // forwarded from upstream to the `from` side
  uint64_t bytes_held = 0;           // read but not yet forwarded, both directions, open connections only
  uint64_t connections_accepted = 0;
  uint64_t connections_rejected = 0;  // closed at once because max_connections were open
  uint64_t connections_open = 0;
};

class FaultProxy {
 public:
  // Starts the proxy thread. No link yet.
  explicit FaultProxy(uint64_t seed, FaultProxyOptions options = {});
  ~FaultProxy();  // stop()
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  // Opens a listener on 127.0.0.1 (port 0: a free port) forwarding to upstream; returns the listener's endpoint.
  // upstream.host is an IPv4/IPv6 literal or a name resolved once, here. Throws std::invalid_argument for an
  // empty or equal party name or a link (from, to) already added, FaultProxyError when it cannot listen or
  // resolve, or after stop().
  Endpoint add_link(const std::string& from, const std::string& to, const Endpoint& upstream);
  // A shared link to `to` (see the header comment); its stats are stats("*" + label, to). A party can have
  // several, told apart by label (a Redis Cluster node: "" for its data port, "bus" for its cluster bus).
  // Throws as add_link.
  Endpoint add_shared_link(const std::string& to, const Endpoint& upstream, const std::string& label = "");
  // Points the link added as (from, to) ("*" for a shared link) at another upstream, for connections from now
  // on (a node that had to start on another port than planned). Throws std::invalid_argument for no such link.
  void set_upstream(const std::string& from, const std::string& to, const Endpoint& upstream);
  // Connections to shared links from `address` (an IP literal) belong to `party` from now on (connections
  // already open keep what they had). Throws std::invalid_argument for a bad address or party name.
  void name_source(const std::string& address, const std::string& party);
  // For a program that cannot choose its source address (etcd, a Go program: name_source cannot tell its
  // members apart): a connection to a shared link from a source address that name_source did not name is
  // given to classify(remote end as seen by the proxy), which returns its party, or "" for none (never
  // faulted). Runs on the proxy thread at accept, so it must be quick and must not call the proxy; it must
  // not throw. Replaces any earlier classifier; an empty function removes it.
  void set_source_classifier(std::function<std::string(const Endpoint& remote)> classify);
  // The node at upstream went down (killed) / is up again (restarted): see "Upstream down" above. The proxy
  // notices both by itself too (a refused connect, its probe); these make it immediate.
  void upstream_down(const Endpoint& upstream);
  void upstream_up(const Endpoint& upstream);

  // Fault control on the unordered pair {a, b}; see the header comment. Idempotent. Throw
  // std::invalid_argument for empty or equal names, or a negative delay or jitter. After stop() they only
  // record the state (there is nothing left to forward).
  void cut(const std::string& a, const std::string& b);
  void heal(const std::string& a, const std::string& b);
  void heal_all();
  // cut / heal of every pair in one call: the proxy thread is waited for once (api_timeout bounds the whole
  // batch, not each pair). Throw as cut / heal, before anything is applied when a pair is bad.
  void cut_many(const LinkPairs& pairs);
  void heal_many(const LinkPairs& pairs);
  // set_delay of every link in one call, likewise.
  void set_delays(const std::vector<LinkDelay>& delays);
  void set_delay(const std::string& a, const std::string& b, std::chrono::microseconds delay,
                 std::chrono::microseconds jitter);

  // Counters of the link added as (from, to). Throws std::invalid_argument if there is no such link.
  LinkStats stats(const std::string& from, const std::string& to) const;

  // Closes every listener and connection and joins the proxy thread. Idempotent, never throws.
  void stop() noexcept;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockcheck
