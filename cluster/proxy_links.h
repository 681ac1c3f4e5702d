// The network of the backends whose links all go through one FaultProxy on this machine (the local Redis
// cluster, cluster/local_cluster.h, and the local etcd cluster, cluster/etcd_cluster.h): one proxy link per
// (party, node), made on first use, and the faults applied to the proxy with its errors as ClusterError.
// ProxiedCluster is that part of the Cluster interface, written once for both.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "cluster/fault_proxy.h"
#include "core/cluster.h"

namespace lockcheck {

class ProxyLinks {
 public:
  // Where party reaches node n (named node_name, listening at node): its proxy link, opened on first use.
  // proxy is read under the links' lock, which reset() also holds: a link is never made on a stopped proxy.
  Endpoint endpoint_for(const std::unique_ptr<FaultProxy>& proxy, const std::string& party, size_t n,
                        const std::string& node_name, const Endpoint& node) const;
  // Stops and drops the proxy and forgets every link (the cluster's stop).
  void reset(std::unique_ptr<FaultProxy>& proxy);

 private:
  mutable std::mutex mu_;
  mutable std::map<std::pair<std::string, size_t>, Endpoint> links_;  // (party, node) -> proxy listener
};

// Applies one network fault (what: "cut n1<->c0", ...) to the proxy; without a proxy, or when the proxy
// refuses, throws ClusterError naming what.
void apply_proxy_fault(FaultProxy* proxy, const std::string& what, const std::function<void(FaultProxy&)>& f);

// A Cluster whose links go through its FaultProxy (proxy_, made by the subclass's start, dropped with
// links_.reset at its stop): where a party reaches a node, and the network faults on the proxy.
class ProxiedCluster : public Cluster {
 public:
  // The party's proxy link to node n; the node's own address when proxied() is false.
  Endpoint endpoint_for(const std::string& party, size_t n) const override;
  void cut(const std::string& a, const std::string& b) override;
  void heal(const std::string& a, const std::string& b) override;
  void heal_all() override;
  void cut_links(const LinkPairs& pairs) override;  // one proxy call for all of them
  void heal_links(const LinkPairs& pairs) override;
  void set_delays(const std::vector<LinkDelay>& delays) override;
  void set_delay(const std::string& a, const std::string& b, std::chrono::milliseconds delay,
                 std::chrono::milliseconds jitter) override;

 protected:
  // Where node n itself listens for clients (the far end of a party's link).
  virtual Endpoint own_endpoint(size_t n) const = 0;
  // Whether links go through the proxy (the backend's use_proxy option).
  virtual bool proxied() const = 0;

  std::unique_ptr<FaultProxy> proxy_;
  ProxyLinks links_;  // (party, node) -> proxy listener
};

}  // namespace lockcheck
