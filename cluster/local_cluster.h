// The default backend: redis-server processes on loopback, no root and no Docker needed.
// Each node has its own port (free, chosen at start and kept across restarts), data dir nodes/nX/ and log
// nodes/nX.log under the run's folder. Persistence is off unless asked for (--persistence).
// Every client reaches the nodes through the harness's TCP fault proxy (cluster/fault_proxy.h): one link per
// (party, node), made on first use by endpoint_for, so that the nemesis can cut or delay any one link without
// root. Every node runs with the clock shim preloaded (cluster/clock_shim.h) and its own offset file nX/clock,
// so that set_clock_offset moves that node's wall clock at once.
//
// Topologies:
//  - independent (default): N masters that know nothing of each other (Redlock's setting); started with argv.
//  - cluster: a Redis Cluster of cluster-enabled nodes started with argv: the first half are masters (hash
//    slots split evenly, ADDSLOTSRANGE), the others their replicas (replica k of master k mod masters); n1
//    MEETs every node; cluster-node-timeout 1000 ms, so a master cut off or dead for a second is failed over
//    by its replica. Node-to-node links (replication and the cluster bus, whose port is chosen like the data
//    port) go through shared proxy links, announced with cluster-announce-ip/port/bus-port, so that MOVED
//    and ASK redirections name the proxied addresses too (which clients map to their own links).
//  - replicated: n1 is the master, n2..nN replicate it (replicaof), and three Sentinels s1..s3 (real
//    `redis-server CONF --sentinel` processes, data dirs nodes/sK/, logs nodes/sK.log) monitor it under the
//    name kSentinelMasterName with quorum 2, down-after-milliseconds 1000 and failover-timeout 3000, so a dead
//    or paused master is replaced within a few seconds. Every data node runs from its own config file
//    nodes/nX.conf, which Sentinel rewrites (CONFIG REWRITE) when it changes the node's role: a restarted node
//    comes back with the role Sentinel last gave it, as in a real deployment. start() returns once every
//    replica's link is up and every Sentinel sees all replicas and the other Sentinels.
// Node-to-node links (replication, Sentinel's links to nodes and to the other Sentinels) go through the fault
// proxy too, so that the nemesis can cut a master off from its replicas and Sentinels while clients still
// reach it. Sentinel insists that every Sentinel and replica name a node by one address, so each node and
// Sentinel has one *shared* proxy link (FaultProxy::add_shared_link), which is its NodeInfo::endpoint (its
// own listener is NodeInfo::listen): every node and Sentinel connects from a loopback source address of its
// own (bind-source-addr 127.0.1.N for node nN, 127.0.2.K for Sentinel sK; Linux routes all of 127/8 to lo),
// by which the proxy knows who is on the other end and applies the faults of that pair, and announces its
// shared link (replica-announce-ip/port, sentinel announce-ip/port) so that what Sentinel learns by itself
// and hands out after a failover -- replica addresses, the other Sentinels, the promoted master -- is the
// proxied address too. The harness's own connections to endpoint (from 127.0.0.1) are never faulted.
// Where peer_endpoint() decides it, with use_proxy off, or in the independent topology, endpoint is direct.
// A killed node's proxy links refuse connections until it is restarted (FaultProxy::upstream_down).
#pragma once

#include <map>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cluster/fault_proxy.h"
#include "cluster/local_members.h"
#include "cluster/proxy_links.h"
#include "cluster/redis_config.h"
#include "core/cluster.h"
#include "core/config.h"
#include "sys/process.h"

namespace lockcheck {

struct LocalClusterOptions {
  int nodes = 5;
  Topology topology = Topology::kIndependent;
  Persistence persistence = Persistence::kNone;
  std::string redis_server = "redis-server";  // binary; a missing one is a ClusterError naming it
  std::string nodes_dir;                      // where nX/ and nX.log go; created if missing
  std::chrono::milliseconds start_timeout{10000};
  std::string name_prefix = "n";  // nodes are <prefix>1, <prefix>2, ...
  bool use_proxy = true;          // false: endpoint_for gives the node's own address, no faults
  bool use_clock_shim = true;     // false: no LD_PRELOAD, set_clock_offset throws
  bool use_power_shim = false;    // the power shim beside it (cluster/power_loss.h); false: power_loss throws
  uint64_t seed = 0;              // for the proxy's delay jitter
  // Replicated topology only.
  int sentinels = 3;
  int sentinel_quorum = 2;
  SentinelTimings sentinel_timings;                // the shared defaults (cluster/redis_config.h)
  int sentinel_parallel_syncs = 1;                 // --sentinel-parallel-syncs
  std::chrono::milliseconds ready_timeout{30000};  // replication links up and Sentinels aware of each other
  // Cluster topology only: cluster-node-timeout (a master unreachable this long is failed over).
  std::chrono::milliseconds cluster_node_timeout{1000};
  static LocalClusterOptions from(const RunConfig& c, const std::string& run_dir);
};

class LocalCluster : public ProxiedCluster {
 public:
  explicit LocalCluster(LocalClusterOptions opts);
  ~LocalCluster() override;  // stop()

  void start() override;
  void stop() noexcept override;
  const std::vector<NodeInfo>& nodes() const override { return nodes_; }
  std::vector<NodeInfo> sentinels() const override { return sentinels_; }

  void kill(size_t n) override;
  void restart(size_t n) override;
  void pause(size_t n) override;
  void resume(size_t n) override;
  void set_clock_offset(size_t n, std::chrono::nanoseconds offset) override;
  void set_clock_rate(size_t n, int64_t rate_ppb) override;
  std::optional<std::chrono::nanoseconds> clock_shift(size_t n) const override;
  bool is_running(size_t n) const override;
  PowerLossReport power_loss(size_t n) override;

  // pid of node n's redis-server, or -1 when it is down.
  pid_t pid(size_t n) const;
  // pid of Sentinel k (0-based), or -1. REQUIRES: k < sentinels().size().
  pid_t sentinel_pid(size_t k) const;

 protected:
  Endpoint own_endpoint(size_t n) const override { return nodes_.at(n).own_endpoint(); }
  bool proxied() const override { return opts_.use_proxy; }

 private:
  void spawn(size_t n);           // REQUIRES: mu_ held
  void spawn_sentinel(size_t k);  // REQUIRES: mu_ held
  std::vector<std::string> argv_for(size_t n) const;
  // The clock faults' one path to node n's clock file: write(path), its errors a ClusterError naming `what`.
  void write_node_clock(size_t n, const char* what, const std::function<void(const std::string&)>& write);
  // Where `from` (a node name "n2" or a Sentinel name "s1") reaches data node `to`: the one place that decides
  // node-to-node addresses (today the node's own endpoint; the fault proxy will route through here).
  Endpoint peer_endpoint(const std::string& from, size_t to) const;
  bool proxied_peers() const;  // node-to-node links through the fault proxy (replicated/cluster, use_proxy)
  // The loopback source address a node ("n2": 127.0.1.2) or Sentinel ("s1": 127.0.2.1) connects from.
  std::string source_address(const std::string& party) const;
  void place(NodeInfo& info, bool first_try);  // REQUIRES: mu_ held; throws ClusterError
  std::string peer_link_config(const NodeInfo& info, bool sentinel) const;
  void write_node_config(size_t n) const;      // replicated topology: nodes/nX.conf
  void write_sentinel_config(size_t k) const;  // nodes/sK.conf
  void wait_until_replicated_ready();          // REQUIRES: mu_ held; throws ClusterError
  void place_bus(size_t n, bool first_try);    // cluster topology: node n's bus port and its shared link
  void form_cluster();                         // cluster topology: slots, MEET, REPLICATE, wait until ok

  LocalClusterOptions opts_;
  std::vector<NodeInfo> nodes_;
  std::vector<std::string> data_dirs_;
  struct Bus {
    Endpoint listen;    // the node's cluster bus port (cluster-port)
    Endpoint endpoint;  // what it announces (cluster-announce-bus-port): its shared "bus" proxy link
  };
  std::vector<Bus> bus_;  // cluster topology
  std::vector<NodeInfo> sentinels_;
  std::vector<std::string> sentinel_dirs_;
  mutable std::mutex mu_;
  LocalMembers members_;           // the data nodes' redis-server processes
  LocalMembers sentinel_members_;  // the Sentinels'
};

// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it back, close).
int free_loopback_port();

}  // namespace lockcheck
