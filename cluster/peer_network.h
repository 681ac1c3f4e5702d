// The network between a cluster's servers (node <-> node, node <-> Sentinel): how the members name each other's
// peer ports, and how the nemesis cuts and delays those links. One interface, two implementations:
//   ProxyPeers    on loopback (the local backend): every peer port behind a *shared* link of the harness's fault
//                 proxy (cluster/fault_proxy.h), whose address is what the members name each other by; the proxy
//                 tells a connecting member by its source address (servers that choose it: ServerSpec::
//                 binds_source_address) or by which member's process owns the socket (/proc). No root needed.
//   HostFirewall  on hosts with addresses of their own (docker containers, ssh hosts): members name each other at
//                 their hosts' addresses; a cut is an iptables DROP by the peer's address in the run's chain on
//                 each side's host that can filter, a delay tc netem (cluster/host_firewall.cc).
// Client <-> node links always go through the fault proxy on this machine (cluster/split_network.h routes them).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "cluster/split_network.h"
#include "core/cluster.h"

namespace lockcheck {

class FaultProxy;

class PeerNetwork {
 public:
  virtual ~PeerNetwork() = default;
  // Called by the cluster's start once its fault proxy runs (nullptr: a cluster without network faults).
  virtual void attach(FaultProxy* proxy) { (void)proxy; }
  // Where the other members reach member `name`'s peer port `label`, which the harness reaches at `reach`.
  // first: the member's first placement; later ones are a start again on other ports (a port taken meanwhile).
  // Throws ClusterError.
  virtual Endpoint advertise(const std::string& name, const std::string& label, const Endpoint& reach, bool first) = 0;
  // The address member `name` must connect to its peers from ("" any). Stable for the cluster's life.
  virtual std::string source_address(const std::string& name) const {
    (void)name;
    return "";
  }
  // Member `name` now runs as process pid on this machine (-1: it is down).
  virtual void member_pid(const std::string& name, int pid) { (void)name, (void)pid; }

  // The faults (PeerLinks of cluster/split_network.h, without require_running: the cluster checks it). Each
  // call gets two distinct server parties and throws ClusterError when it cannot do it.
  virtual void cut(const std::string& a, const std::string& b) = 0;
  virtual void heal(const std::string& a, const std::string& b) = 0;
  virtual void heal_all() = 0;
  virtual void delay(const std::string& a, const std::string& b, std::chrono::milliseconds delay,
                     std::chrono::milliseconds jitter) = 0;
  // Many links as one fault: a mechanism that can apply them together overrides these (the fault proxy is waited
  // for once). Every link is tried and the first error thrown.
  virtual void cut_many(const LinkPairs& pairs);
  virtual void heal_many(const LinkPairs& pairs);
  virtual void delays(const std::vector<LinkDelay>& delays);
  // Removes what it set up (rules, qdiscs) on hosts that outlive the run. Never throws; problems to stderr.
  virtual void teardown() noexcept {}

  // What it can do: cut-peers and delay-peers, or why not.
  virtual Abilities abilities() const = 0;
};

// The loopback network (see the header comment). binds_source: the members connect from the addresses
// source_address() gives (127.0.1.N for node nN, 127.0.2.K for Sentinel sK); otherwise the proxy asks /proc.
std::unique_ptr<PeerNetwork> make_proxy_peers(bool binds_source);

}  // namespace lockcheck
