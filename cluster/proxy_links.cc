#include "cluster/proxy_links.h"

namespace lockcheck {

Endpoint ProxyLinks::endpoint_for(const std::unique_ptr<FaultProxy>& proxy, const std::string& party, size_t n,
                                  const std::string& node_name, const Endpoint& node) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto key = std::make_pair(party, n);
  auto it = links_.find(key);
  if (it != links_.end()) return it->second;
  if (!proxy) throw ClusterError("endpoint_for(" + party + ", " + node_name + "): the cluster is not started");
  try {
    Endpoint ep = proxy->add_link(party, node_name, node);
    links_.emplace(key, ep);
    return ep;
  } catch (const std::exception& e) {
    throw ClusterError("cannot open a proxy link " + party + "->" + node_name + ": " + e.what());
  }
}

}  // namespace lockcheck
