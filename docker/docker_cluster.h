// The `docker` cluster backend: every Redis node is a container with its own address on a private bridge
// network of its run, as in Jepsen's docker environment. Selected with `--cluster docker`.
//
// What a run creates, all labelled lockcheck.run=<run id> (plus lockcheck.owner-pid / lockcheck.owner-host,
// so that `lockcheck clean` can tell a dead run's leftovers from a live run's):
//   network    lockcheck-<run id>           a bridge with a subnet the engine picked, pinned so that each
//                                           container keeps its address across kill/restart
//   containers lockcheck-<run id>-n1 ...    data nodes (image docker/node_image.h, built offline)
//              lockcheck-<run id>-s1 ..s3   Sentinels (replicated topology only)
// Cluster topology (Redis Cluster): the first half of the nodes are masters with the hash slots split over
// them, the rest their replicas; each announces its container address and keeps nodes.conf in a bind mount
// <run_dir>/docker/cluster/<node> (so a restarted node rejoins as itself); the bus is on port 16379.
// No named volume: the data dir is a tmpfs (persistence none: a restart comes back empty) or a bind mount of
// <run_dir>/docker/data/<node> (AOF: kept across restarts). Node logs are bind-mounted files
// <run_dir>/nodes/<name>.log; the clock offset of node nX is the file <run_dir>/docker/clock/nX (mounted
// read-only, read by the clock shim through LD_PRELOAD).
//
// Faults:
//   kill / restart   `docker kill` (SIGKILL) / `docker start`: same container, same address, same mounts
//   pause / resume   `docker pause` / `docker unpause` (the cgroup freezer)
//   clock            write_clock_offset on the node's clock file (cluster/clock_shim.h); at once
//   node <-> node    iptables DROP rules inside each container's network namespace (containers run with
//                    CAP_NET_ADMIN; rules are loaded with `docker exec iptables-restore`). A side that is down
//                    or paused gets its rules when it comes back (a restart starts a fresh namespace), so a cut
//                    holds as long as either side runs. Replication between nodes is cut this way, and so is
//   node <-> Sentinel  (rules in the node's namespace only; the failover nemesis's split-brain cuts the master
//                    from its replicas and every Sentinel). Sentinel <-> Sentinel cuts are not supported. Delays
//                    between nodes are not supported (they need tc netem, which the kernels we run on lack): set_delay
//                    throws ClusterError for them.
//   client <-> node  the harness's TCP fault proxy (cluster/fault_proxy.h): client slot cK reaches node n
//                    through its own listener on 127.0.0.1 that forwards to the container's address.
//
// Engine calls are the docker CLI (argv vectors through docker/docker_cli.h), each with a bounded timeout.
// The host reaches the containers' addresses directly over the bridge (Linux; not Docker Desktop's VM).
//
// Thread-safety: every public method takes one internal mutex, so calls from the nemesis thread and a stop()
// from the runner's signal-handling thread are serialised. Not for use from inside a signal handler.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cluster/redis_config.h"
#include "cluster/split_network.h"
#include "core/cluster.h"
#include "core/config.h"
#include "docker/docker_cli.h"

namespace lockcheck {

class FaultProxy;

// Label keys on everything a run creates.
constexpr const char* kDockerRunLabel = "lockcheck.run";
constexpr const char* kDockerOwnerPidLabel = "lockcheck.owner-pid";
constexpr const char* kDockerOwnerHostLabel = "lockcheck.owner-host";

// The replicated topology's Sentinels monitor the master under kSentinelMasterName (core/cluster.h).

struct DockerClusterOptions {
  std::string docker_path;  // the docker client; empty: `docker` on PATH
  // Use this image instead of building one (e.g. from docker/Dockerfile.redis7). It must provide the paths
  // of docker/node_image.h: /usr/bin/redis-server, /usr/bin/redis-sentinel, /usr/sbin/iptables-restore,
  // /usr/sbin/iptables, /usr/lib/lockcheck/libclockshim.so. Empty: build (or reuse) the offline image.
  std::string image;
  std::string redis_server = "redis-server";  // copied into the image (resolved on PATH)
  std::string iptables = "iptables";          // likewise
  std::string clock_shim;                     // the clock shim library; empty: clock_shim_library()
  int sentinels = 3;                          // Sentinels of the replicated topology (quorum: a majority)
  SentinelTimings sentinel_timings = kRemoteSentinelTimings;  // cluster/redis_config.h
  int64_t cluster_node_timeout_ms = 1000;           // cluster topology: cluster-node-timeout (as on the local backend)
  std::chrono::milliseconds engine_timeout{60000};  // bound on any one docker call (run, start, rm, ...)
  std::chrono::milliseconds ready_timeout{30000};   // bound on waiting for PING after start/restart
  std::chrono::seconds build_timeout{300};          // bound on building the image
};

class DockerCluster final : public Cluster, private PeerLinks {
 public:
  // Nothing is started yet. run_dir is the run's results folder (it and its nodes/ are created if missing);
  // the run id is its last path component (sanitised) plus a random suffix. Uses config.topology,
  // config.nodes, config.persistence, config.concurrency (client slots c0..c<concurrency-1>), config.seed
  // (the fault proxy's jitter).
  DockerCluster(const RunConfig& config, std::string run_dir, DockerClusterOptions options = {});
  ~DockerCluster() override;  // stop()
  DockerCluster(const DockerCluster&) = delete;
  DockerCluster& operator=(const DockerCluster&) = delete;

  // Checks the engine (ClusterError "no Docker engine answered: ..." when it does not), ensures the image,
  // creates the network and the containers, waits for PING on every node and Sentinel (and, replicated, for
  // each replica's link to the master), opens the client proxies. On any failure it removes what it made and
  // throws ClusterError. REQUIRES: not started before.
  void start() override;
  // Removes every container (unpausing first), the network and any volume of the run. Idempotent, never
  // throws; problems go to stderr. Appends `docker logs` output (what a node printed before it opened its
  // log file, e.g. a loader error) to the node's log.
  void stop() noexcept override;

  const std::vector<NodeInfo>& nodes() const override { return nodes_; }
  std::vector<NodeInfo> sentinels() const override { return sentinels_; }

  void kill(size_t n) override;
  void restart(size_t n) override;  // a running node is killed first; waits for PING; re-applies its cuts
  void pause(size_t n) override;
  void resume(size_t n) override;  // and re-applies its cuts
  void set_clock_offset(size_t n, std::chrono::nanoseconds offset) override;
  bool is_running(size_t n) const override;

  Endpoint endpoint_for(const std::string& party, size_t n) const override;
  void cut(const std::string& a, const std::string& b) override;
  void heal(const std::string& a, const std::string& b) override;
  void heal_all() override;
  // Client slot <-> node only (see above); throws ClusterError for node <-> node.
  void set_delay(const std::string& a, const std::string& b, std::chrono::milliseconds delay,
                 std::chrono::milliseconds jitter) override;

  const std::string& run_id() const { return run_id_; }
  const std::string& network_name() const { return network_; }
  std::string container_name(const std::string& node_name) const;  // "n1" -> lockcheck-<run id>-n1
  const std::string& image_tag() const { return image_tag_; }      // set by start()
  // The iptables rules in force in node n's namespace (`iptables -S` output), for tests and post-mortems.
  std::string iptables_rules(size_t n) const;

 private:
  struct NodeState {
    bool killed = false;
    bool paused = false;
    std::set<std::string> rules_for;  // peers whose DROP rules are loaded in this node's namespace
    bool rules_known = true;          // false after a failed load: reload on the next sync
  };

  void start_locked();
  void stop_locked() noexcept;
  void create_network();
  void run_data_node(size_t n);
  void run_sentinel(size_t s);
  void wait_ready(const Endpoint& ep, const std::string& what) const;
  void wait_replicas_linked() const;
  void open_client_proxies();
  void kill_container(const std::string& container);  // SIGKILL; fine if it is down already
  void sync_rules(size_t n);  // makes node n's rules match cuts_ (no-op while it is down or paused)
  std::vector<std::string> labels() const;
  // PeerLinks (node <-> node and node <-> Sentinel links, for network_): iptables rules in the nodes.
  void require_running() const override;
  void cut_peers(const std::string& a, const std::string& b) override;
  void heal_peers(const std::string& a, const std::string& b) override;
  void heal_all_peers() override;
  void delay_peers(const std::string& a, const std::string& b, std::chrono::milliseconds delay,
                   std::chrono::milliseconds jitter) override;
  void sync_link(const std::string& a, const std::string& b);  // REQUIRES: mu_ held

  size_t node_index(const std::string& party) const;      // npos when party is not a node name
  size_t sentinel_index(const std::string& party) const;  // npos when party is not a Sentinel name
  int client_slot(const std::string& party) const;        // -1 when party is not a client slot
  void check_node(size_t n) const;
  std::string path(const std::string& rel) const;  // run_dir_/rel

  const RunConfig config_;
  const std::string run_dir_;
  const DockerClusterOptions options_;
  const docker::DockerCli cli_;
  std::string run_id_;
  std::string network_;
  std::string image_tag_;
  std::vector<NodeInfo> nodes_;
  std::vector<NodeInfo> sentinels_;
  std::vector<NodeState> state_;
  std::set<std::pair<std::string, std::string>> cuts_;  // node pairs, first < second
  std::unique_ptr<FaultProxy> proxy_;
  SplitNetwork links_;  // client links through proxy_, server links through the PeerLinks above
  std::vector<std::vector<Endpoint>> client_endpoints_;  // [slot][node]
  bool started_ = false;                                 // start() was called
  bool engine_answered_ = false;             // start() got past the engine check: there may be something to remove
  bool stopped_ = false;                     // stop() has run (after or without start)
  std::atomic<bool> stop_requested_{false};  // set by stop() before it takes mu_
  mutable std::mutex mu_;
};

// True when a Docker engine answers `docker version` within a few seconds. Never throws.
bool docker_engine_available();

// `lockcheck clean`: removes the containers, networks and volumes labelled lockcheck.run whose owning process
// is gone (a run killed with SIGKILL); leaves those of a run still alive on this host, and those without an
// owner label (brought up by hand from docker/compose-*.yml). Writes one line per removed or kept object. Returns an
// exit status: 0 when nothing is left behind that it should have removed (also when there was nothing), 3 when the
// engine did not answer or a removal failed.
int docker_clean(std::ostream& out);

}  // namespace lockcheck
