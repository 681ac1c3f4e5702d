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

void ProxyLinks::reset(std::unique_ptr<FaultProxy>& proxy) {
  std::lock_guard<std::mutex> lock(mu_);
  if (proxy) proxy->stop();
  proxy.reset();
  links_.clear();
}

void apply_proxy_fault(FaultProxy* proxy, const std::string& what, const std::function<void(FaultProxy&)>& f) {
  if (!proxy) throw ClusterError(what + ": network faults need the fault proxy (use_proxy is off or not started)");
  try {
    f(*proxy);
  } catch (const std::exception& e) {
    throw ClusterError(what + ": " + e.what());
  }
}

Endpoint ProxiedCluster::endpoint_for(const std::string& party, size_t n) const {
  const Endpoint node = own_endpoint(n);
  if (!proxied()) return node;
  return links_.endpoint_for(proxy_, party, n, nodes().at(n).name, node);
}

void ProxiedCluster::cut(const std::string& a, const std::string& b) {
  apply_proxy_fault(proxy_.get(), "cut " + a + "<->" + b, [&](FaultProxy& p) { p.cut(a, b); });
}

void ProxiedCluster::heal(const std::string& a, const std::string& b) {
  apply_proxy_fault(proxy_.get(), "heal " + a + "<->" + b, [&](FaultProxy& p) { p.heal(a, b); });
}

namespace {
// "cut 3 links (c0<->n1, ...)": a batch in an error message. a and b: the first link's two parties.
std::string describe_links(const char* verb, size_t n, const std::string& a, const std::string& b) {
  return std::string(verb) + " " + std::to_string(n) + " link" + (n == 1 ? "" : "s") + " (" + a + "<->" + b +
         (n > 1 ? ", ..." : "") + ")";
}
}  // namespace

void ProxiedCluster::cut_links(const LinkPairs& pairs) {
  if (pairs.empty()) return;
  apply_proxy_fault(proxy_.get(), describe_links("cut", pairs.size(), pairs.front().first, pairs.front().second),
                    [&](FaultProxy& p) { p.cut_many(pairs); });
}

void ProxiedCluster::heal_links(const LinkPairs& pairs) {
  if (pairs.empty()) return;
  apply_proxy_fault(proxy_.get(), describe_links("heal", pairs.size(), pairs.front().first, pairs.front().second),
                    [&](FaultProxy& p) { p.heal_many(pairs); });
}

void ProxiedCluster::set_delays(const std::vector<LinkDelay>& delays) {
  if (delays.empty()) return;
  apply_proxy_fault(proxy_.get(), describe_links("delay", delays.size(), delays.front().a, delays.front().b),
                    [&](FaultProxy& p) { p.set_delays(delays); });
}

void ProxiedCluster::heal_all() {
  if (proxy_) proxy_->heal_all();
}

void ProxiedCluster::set_delay(const std::string& a, const std::string& b, std::chrono::milliseconds delay,
                               std::chrono::milliseconds jitter) {
  apply_proxy_fault(proxy_.get(), "delay " + a + "<->" + b,
                    [&](FaultProxy& p) { p.set_delay(a, b, delay, jitter); });
}

}  // namespace lockcheck
