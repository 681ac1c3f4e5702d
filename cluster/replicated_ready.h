// When a freshly started replicated topology (a master, replicas, Sentinels) may be faulted, the same on every
// backend (local processes, Docker containers, ssh hosts): every replica's replication link is up, and every
// Sentinel sees every replica and every other Sentinel. A Sentinel learns the replicas from the master's INFO
// (every 10 s) and the other Sentinels from hello messages (every 2 s): one that knows no replica yet cannot
// fail over (-failover-abort-no-good-slave), and one that knows no other Sentinel never reaches its quorum.
// So a master cut off right after start-up was never failed over (measured on Docker: "Sentinel promoted no
// replica" in 30 s, before the backends waited for this).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "core/cluster.h"

namespace lockcheck {

struct ReadyParty {
  std::string name;  // "n2", "s1"
  Endpoint admin;    // where the harness asks it (never faulted)
};

// What is still awaited ("n2's replication link to its master", "s1 to see 2 replicas and 2 other Sentinels"),
// or "" when ready. One round of questions, each bounded by a 500 ms timeout.
std::string replicated_pending(const std::vector<ReadyParty>& replicas, const std::vector<ReadyParty>& sentinels);

// Polls replicated_pending until it is "", at most timeout; stopping (may be empty) is asked between polls and
// ends the wait early. Throws ClusterError "<what>: not ready within N ms: waiting for <pending>" with hint
// ("see the logs under DIR") appended.
void wait_replicated_ready(const std::vector<ReadyParty>& replicas, const std::vector<ReadyParty>& sentinels,
                           std::chrono::milliseconds timeout, const std::string& what, const std::string& hint,
                           const std::function<bool()>& stopping = {});

}  // namespace lockcheck
