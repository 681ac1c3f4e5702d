// The network of a cluster: the links between its own servers (node <-> node, node <-> Sentinel) faulted by the
// backend's peer mechanism (cluster/peer_network.h: the fault proxy's shared links on loopback, iptables and tc
// netem on hosts of their own) and the links of the clients (client slot <-> node) by the fault proxy. The party
// dispatch is written once, here.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cluster/fault_proxy.h"
#include "core/assert.h"
#include "core/cluster.h"
#include "core/party.h"

namespace lockcheck {

// The backend's own mechanism for links between servers. Each call gets two distinct server parties (nodes
// or Sentinels) and throws ClusterError when it cannot do it (e.g. "not supported" for a pair its mechanism
// cannot cut). Called with no lock of SplitNetwork's held; the backend locks what it needs.
class PeerLinks {
 public:
  virtual ~PeerLinks() = default;
  // Throws ClusterError ("<backend>: not running") unless the cluster is up: checked before every fault.
  virtual void require_running() const = 0;
  virtual void cut_peers(const std::string& a, const std::string& b) = 0;
  virtual void heal_peers(const std::string& a, const std::string& b) = 0;
  virtual void heal_all_peers() = 0;
  virtual void delay_peers(const std::string& a, const std::string& b, std::chrono::milliseconds delay,
                           std::chrono::milliseconds jitter) = 0;
  // Many links as one fault (a mechanism that can apply them together overrides these): every link is tried and
  // the first error thrown.
  virtual void cut_peers_many(const LinkPairs& pairs) {
    each_link(pairs, [this](const auto& p) { cut_peers(p.first, p.second); });
  }
  virtual void heal_peers_many(const LinkPairs& pairs) {
    each_link(pairs, [this](const auto& p) { heal_peers(p.first, p.second); });
  }
  virtual void delay_peers_many(const std::vector<LinkDelay>& delays) {
    each_link(delays, [this](const LinkDelay& d) { delay_peers(d.a, d.b, d.delay, d.jitter); });
  }

};

class SplitNetwork {
 public:
  // backend: the name in messages ("docker cluster"). nodes, sentinels: how many of each; client_slots: the run's
  // concurrency. The peer links and the proxy are the backend's and outlive this object; the proxy exists once
  // the cluster started (set_proxy), and every fault checks peers->require_running() first.
  SplitNetwork() = default;
  SplitNetwork(std::string backend, size_t nodes, size_t sentinels, int client_slots, PeerLinks* peers)
      : backend_(std::move(backend)), nodes_(nodes), sentinels_(sentinels), slots_(client_slots), peers_(peers) {}
  void set_proxy(FaultProxy* proxy) { proxy_ = proxy; }

  void cut(const std::string& a, const std::string& b) {
    route(
        a, b, "cut", [&] { proxy_->cut(a, b); }, [&] { peers_->cut_peers(a, b); });
  }
  void heal(const std::string& a, const std::string& b) {
    route(
        a, b, "heal", [&] { proxy_->heal(a, b); }, [&] { peers_->heal_peers(a, b); });
  }
  // Heals every link: the peer links and the proxy's, trying both even when one fails (the first error then).
  void heal_all() {
    LOCKCHECK_ASSERT(peers_ != nullptr, "SplitNetwork without peer links");
    peers_->require_running();
    std::string error;
    try {
      peers_->heal_all_peers();
    } catch (const ClusterError& e) {
      error = e.what();
    }
    try {
      if (proxy_) proxy_->heal_all();
    } catch (const std::exception& e) {
      if (error.empty()) error = backend_ + ": heal_all: " + e.what();
    }
    if (!error.empty()) throw ClusterError(error);
  }
  void cut_many(const LinkPairs& pairs) {
    route_many<std::pair<std::string, std::string>>(
        pairs, "cut", pair_ends, [&](const LinkPairs& p) { proxy_->cut_many(p); },
        [&](const LinkPairs& p) { peers_->cut_peers_many(p); });
  }
  void heal_many(const LinkPairs& pairs) {
    route_many<std::pair<std::string, std::string>>(
        pairs, "heal", pair_ends, [&](const LinkPairs& p) { proxy_->heal_many(p); },
        [&](const LinkPairs& p) { peers_->heal_peers_many(p); });
  }
  void set_delays(const std::vector<LinkDelay>& delays) {
    route_many<LinkDelay>(
        delays, "delay", delay_ends, [&](const std::vector<LinkDelay>& d) { proxy_->set_delays(d); },
        [&](const std::vector<LinkDelay>& d) { peers_->delay_peers_many(d); });
  }
  void set_delay(const std::string& a, const std::string& b, std::chrono::milliseconds delay,
                 std::chrono::milliseconds jitter) {
    route(
        a, b, "delay", [&] { proxy_->set_delay(a, b, delay, jitter); },
        [&] { peers_->delay_peers(a, b, delay, jitter); });
  }

 private:
  std::optional<Party> party(const std::string& name) const {
    auto p = Party::parse(name);
    if (!p) return std::nullopt;
    const size_t limit = p->is_node() ? nodes_ : p->is_sentinel() ? sentinels_ : static_cast<size_t>(slots_);
    if (p->index >= limit) return std::nullopt;
    return p;
  }
  enum class Carrier { kNone, kProxy, kPeers };
  // Which mechanism carries a<->b: the peer links between servers, the proxy between a client and a node,
  // nothing between two clients (they do not talk to each other) or a party and itself.
  Carrier carrier(const std::string& a, const std::string& b, const char* verb) const {
    const auto pa = party(a), pb = party(b);
    if (!pa || !pb) {
      throw ClusterError(backend_ + ": cannot " + verb + " '" + a + "' and '" + b + "': unknown party (nodes n1..n" +
                         std::to_string(nodes_) + ", client slots c0..c" + std::to_string(slots_ - 1) +
                         (sentinels_ ? ", Sentinels s1..s" + std::to_string(sentinels_) : std::string()) + ")");
    }
    if (*pa == *pb || (pa->is_client() && pb->is_client())) return Carrier::kNone;
    if (pa->is_client() || pb->is_client()) {
      if (!(pa->is_node() || pb->is_node())) {
        throw ClusterError(backend_ + ": cannot " + verb + " '" + a + "' and '" + b +
                           "': clients talk to the nodes, not to the Sentinels directly");
      }
      LOCKCHECK_ASSERT(proxy_ != nullptr, backend_ + " is running without its fault proxy");
      return Carrier::kProxy;
    }
    return Carrier::kPeers;
  }
  void route(const std::string& a, const std::string& b, const char* verb, const std::function<void()>& via_proxy,
             const std::function<void()>& via_peers) {
    LOCKCHECK_ASSERT(peers_ != nullptr, "SplitNetwork without peer links");
    peers_->require_running();
    switch (carrier(a, b, verb)) {
      case Carrier::kNone:
        return;
      case Carrier::kProxy:
        try {
          via_proxy();
        } catch (const std::exception& e) {
          throw ClusterError(backend_ + ": " + verb + " " + a + " " + b + ": " + e.what());
        }
        return;
      case Carrier::kPeers:
        via_peers();
        return;
    }
  }
  // Many links: the proxy's in one call (one bounded wait), the peer links in one call of the peer mechanism;
  // every link is tried and the first error thrown. ends(item) gives an item's two parties.
  template <typename Item, typename Ends>
  void route_many(const std::vector<Item>& items, const char* verb, Ends ends,
                  const std::function<void(const std::vector<Item>&)>& via_proxy,
                  const std::function<void(const std::vector<Item>&)>& via_peers) {
    LOCKCHECK_ASSERT(peers_ != nullptr, "SplitNetwork without peer links");
    peers_->require_running();
    std::vector<Item> proxied, peered;
    std::string error;
    for (const auto& item : items) {
      const auto [a, b] = ends(item);
      try {
        switch (carrier(a, b, verb)) {
          case Carrier::kNone:
            break;
          case Carrier::kProxy:
            proxied.push_back(item);
            break;
          case Carrier::kPeers:
            peered.push_back(item);
            break;
        }
      } catch (const ClusterError& e) {
        if (error.empty()) error = e.what();
      }
    }
    if (!peered.empty()) {
      try {
        via_peers(peered);
      } catch (const ClusterError& e) {
        if (error.empty()) error = e.what();
      }
    }
    if (!proxied.empty()) {
      try {
        via_proxy(proxied);
      } catch (const std::exception& e) {
        if (error.empty()) {
          error = backend_ + ": " + verb + " " + std::to_string(proxied.size()) + " client links: " + e.what();
        }
      }
    }
    if (!error.empty()) throw ClusterError(error);
  }
  static std::pair<std::string, std::string> pair_ends(const std::pair<std::string, std::string>& p) { return p; }
  static std::pair<std::string, std::string> delay_ends(const LinkDelay& d) { return {d.a, d.b}; }

  std::string backend_;
  size_t nodes_ = 0, sentinels_ = 0;
  int slots_ = 0;
  FaultProxy* proxy_ = nullptr;
  PeerLinks* peers_ = nullptr;
};

}  // namespace lockcheck
