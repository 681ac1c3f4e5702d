// What the tests of the consensus backends (etcd, ZooKeeper) ask of any started Cluster: the lock options of one
// client slot (every node through that slot's proxy links, as a run gives them to a lock), and the leader,
// awaited.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "core/cluster.h"
#include "locks/lock_client.h"

namespace lockcheck {
namespace testing_util {

inline LockOptions slot_lock_options(const Cluster& cluster, std::chrono::milliseconds op_timeout,
                                     const std::string& slot) {
  LockOptions lo;
  for (size_t n = 0; n < cluster.nodes().size(); ++n) lo.nodes.push_back(cluster.endpoint_for(slot, n));
  for (const auto& n : cluster.nodes()) lo.node_addresses.push_back(n.endpoint);
  lo.op_timeout = op_timeout;
  lo.connect_timeout = op_timeout;
  return lo;
}

// The leader, asked until one is named other than `not_this` (bounded by timeout).
inline std::optional<size_t> wait_for_leader(const Cluster& c, std::optional<size_t> not_this,
                                             std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto l = c.leader();
    if (l && l != not_this) return l;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return std::nullopt;
}

}  // namespace testing_util
}  // namespace lockcheck
