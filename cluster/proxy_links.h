// The clients' links through the harness's fault proxy (cluster/fault_proxy.h): one proxy link per (client slot,
// node), opened on first use. What the one cluster (cluster/server_cluster.h) hands a client as a node's address.
#pragma once

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
  // Throws ClusterError when the proxy is not there or cannot open the link.
  Endpoint endpoint_for(const std::unique_ptr<FaultProxy>& proxy, const std::string& party, size_t n,
                        const std::string& node_name, const Endpoint& node) const;

 private:
  mutable std::mutex mu_;
  mutable std::map<std::pair<std::string, size_t>, Endpoint> links_;  // (party, node) -> proxy listener
};

}  // namespace lockcheck
