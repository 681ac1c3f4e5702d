// The Redis and Sentinel configuration every backend (local, docker, ssh) gives its nodes, written once: the
// data nodes' persistence and replication settings and Sentinel's monitor block with one set of timings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster.h"

namespace lockcheck {

// Sentinel's timings, the same on every backend (a backend's options may override them for a test).
// down-after 1 s: a master cut off (or paused) for longer is objectively down and a replica is promoted within
// a few seconds, well inside a nemesis interval of 5 s; failover-timeout 3 s bounds a failover that stalls.
struct SentinelTimings {
  int64_t down_after_ms = 1000;        // sentinel down-after-milliseconds
  int64_t failover_timeout_ms = 3000;  // sentinel failover-timeout
};
// Backends whose nodes and faults are reached through `docker exec` or SSH (containers, remote hosts): a fault
// takes tens of milliseconds per command there and Sentinel's own elections are slower, so 1 s / 3 s does not
// let a failover complete reliably (measured: the Docker split-brain test promoted no replica in 30 s);
// 3 s / 10 s does. The timings are written into each run's Sentinel config, so the report's node logs show them.
inline constexpr SentinelTimings kRemoteSentinelTimings{3000, 10000};

// What every backend gives a data node, as redis-server flags ({"--save", "", "--appendonly", "no", ...}):
// --persistence's settings (RDB snapshots are off on every backend) and replication's: a full resync starts at
// once (repl-diskless-sync-delay 0; Redis 7 waits 5 s for more replicas by default, which made every start and
// every resync after a failover 5 s late, and WAIT on a new master time out meanwhile).
std::vector<std::string> node_args(Persistence p);
// The same as redis.conf lines ("save \"\"\nappendonly no\n..."), from node_args.
std::string node_conf(Persistence p);

// Sentinel's block for the master at `master` under kSentinelMasterName: monitor (with quorum), down-after,
// failover-timeout, parallel-syncs (--sentinel-parallel-syncs). With parallel-syncs 1 (Redis' default) Sentinel
// repoints the replicas to a promoted master one at a time, and one it cannot reach (cut off with the old master)
// holds the others back until failover-timeout: the new master has no replica meanwhile.
std::string sentinel_monitor_conf(const Endpoint& master, int quorum, const SentinelTimings& t, int parallel_syncs);

}  // namespace lockcheck
