// Forming a Redis Cluster out of freshly started cluster-enabled nodes, the same way on every backend (local
// processes, Docker containers): the first half of the nodes are masters with the hash slots split evenly
// over them, the rest are replicas (replica k replicates master k % masters), the first node MEETs the others
// at their cluster addresses, and it is ready when every node sees cluster_state:ok with all nodes known and
// every replica's replication link is up.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "core/cluster.h"

namespace lockcheck {

struct ClusterFormNode {
  std::string name;  // "n1"
  Endpoint admin;    // where the harness asks it (never faulted)
  Endpoint address;  // its cluster address, what its peers MEET it at
  int bus_port = 0;  // the cluster bus port its peers reach it at
};

// REQUIRES: nodes.size() >= 6 (3 masters, 3 replicas). Bounded by ready_timeout; stopping (may be empty) is
// asked between polls and ends the wait early. Throws ClusterError naming what it was waiting for, with
// logs_hint ("see the logs under DIR") appended.
void form_redis_cluster(const std::vector<ClusterFormNode>& nodes, std::chrono::milliseconds ready_timeout,
                        const std::string& logs_hint, const std::function<bool()>& stopping = {});

}  // namespace lockcheck
