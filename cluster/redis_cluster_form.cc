#include "cluster/redis_cluster_form.h"

#include <thread>

#include "sys/redis_conn.h"

namespace lockcheck {

void form_redis_cluster(const std::vector<ClusterFormNode>& nodes, std::chrono::milliseconds ready_timeout,
                        const std::string& logs_hint, const std::function<bool()>& stopping) {
  if (nodes.size() < 6) throw ClusterError("cluster topology: needs at least 6 nodes (3 masters, 3 replicas)");
  const size_t masters = nodes.size() / 2;
  const auto deadline = std::chrono::steady_clock::now() + ready_timeout;
  auto ask = [&](size_t n, const std::vector<std::string>& argv) {
    RedisConn c(nodes[n].admin, std::chrono::milliseconds(500), std::chrono::milliseconds(2000));
    return c.command(argv);
  };
  auto fail = [&](const std::string& what, const Reply& r) {
    throw ClusterError("cluster topology: " + what + ": " + (r.error.empty() ? "unexpected reply" : r.error) + "; " +
                       logs_hint);
  };
  auto check_stop = [&](const std::string& what) {
    if (stopping && stopping()) throw ClusterError("cluster topology: stopping (while waiting for " + what + ")");
  };
  // Hash slots split evenly over the masters.
  for (size_t m = 0; m < masters; ++m) {
    const size_t lo = m * kClusterSlots / masters, hi = (m + 1) * kClusterSlots / masters - 1;
    Reply r = ask(m, {"CLUSTER", "ADDSLOTSRANGE", std::to_string(lo), std::to_string(hi)});
    if (!r.is_status("OK")) fail("ADDSLOTSRANGE on " + nodes[m].name, r);
  }
  // The first node meets everyone at their cluster addresses.
  for (size_t n = 1; n < nodes.size(); ++n) {
    Reply r = ask(0, {"CLUSTER", "MEET", nodes[n].address.host, std::to_string(nodes[n].address.port),
                      std::to_string(nodes[n].bus_port)});
    if (!r.is_status("OK")) fail("MEET " + nodes[n].name, r);
  }
  std::vector<std::string> ids(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    Reply r = ask(n, {"CLUSTER", "MYID"});
    if (!r.str()) fail("MYID on " + nodes[n].name, r);
    ids[n] = *r.str();
  }
  // Replica k replicates master k % masters, once it has heard of that master by gossip.
  for (size_t n = masters; n < nodes.size(); ++n) {
    const size_t m = (n - masters) % masters;
    for (;;) {
      Reply r = ask(n, {"CLUSTER", "REPLICATE", ids[m]});
      if (r.is_status("OK")) break;
      if (std::chrono::steady_clock::now() > deadline) fail(nodes[n].name + " REPLICATE " + nodes[m].name, r);
      check_stop(nodes[n].name + " to replicate " + nodes[m].name);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  // Ready: every node knows every other and sees every slot served; every replica's link is up.
  const std::string known = "cluster_known_nodes:" + std::to_string(nodes.size()) + "\r";
  std::string waiting;
  while (std::chrono::steady_clock::now() < deadline) {
    waiting.clear();
    for (size_t n = 0; n < nodes.size() && waiting.empty(); ++n) {
      auto info = ask(n, {"CLUSTER", "INFO"}).str();
      if (!info || info->find("cluster_state:ok") == std::string::npos || info->find(known) == std::string::npos) {
        waiting = nodes[n].name + " to see the cluster ok with all " + std::to_string(nodes.size()) + " nodes";
      }
    }
    for (size_t n = masters; n < nodes.size() && waiting.empty(); ++n) {
      auto info = ask(n, {"INFO", "replication"}).str();
      if (!info || info->find("master_link_status:up") == std::string::npos)
        waiting = nodes[n].name + "'s replication link";
    }
    if (waiting.empty()) return;
    check_stop(waiting);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw ClusterError("Redis Cluster not ready within " + std::to_string(ready_timeout.count()) + " ms: waiting for " +
                     waiting + "; " + logs_hint);
}

}  // namespace lockcheck
