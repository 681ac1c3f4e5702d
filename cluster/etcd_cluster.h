// `--server etcd` on the local backend: an etcd cluster (Debian's etcd-server, 3.4.23 on bookworm) of N members
// n1..nN on loopback, each an `etcd` process with its data dir nodes/nX/ and log nodes/nX.log under the run's
// folder. No root and no Docker, as for Redis.
//
// Links. Every link goes through the harness's fault proxy (cluster/fault_proxy.h), so that partitions and
// delays reach Raft traffic as they reach Redis replication:
//  - client links: a client slot reaches member n through its own proxy link (endpoint_for), as with Redis;
//  - peer links: each member advertises one *shared* proxy link in front of its peer port (its peer URL in
//    --initial-cluster). etcd cannot choose the source address of its outgoing connections (a Go program has no
//    bind-source-addr), so the proxy cannot tell the members apart by address as it does Redis nodes; instead
//    it asks this class, at accept, which member owns the connecting socket: the socket's inode from
//    /proc/net/tcp, then which member's /proc/PID/fd holds it. A connection from anything else (the harness's
//    own etcdctl) is never faulted. Raft messages, snapshots and the lease renewals a follower forwards to the
//    leader (POST /leases) all travel on these links.
//
// Data: each member's data dir is nodes/nX/data while it runs; stop() removes it (keep_data keeps it).
// Start: every member is started, then start() waits (bounded by start_timeout) until every member answers
// `etcdctl endpoint status` naming the same elected leader and `etcdctl endpoint health` (a quorum read)
// succeeds on each. A restarted member reuses its data dir and ports and is awaited until its client port
// accepts connections (it may be cut off and unable to find a leader).
//
// Node faults: kill (SIGKILL), restart, pause (SIGSTOP), resume. Clock faults are refused (ClusterError): the
// clock shim is an LD_PRELOAD of libc's clock functions, and etcd, a Go program, reads the clock through the
// vDSO without libc (measured: etcd started under the shim with a +1 h offset logs the machine's time, while
// `date` under the same shim is an hour ahead). etcd times leases on the leader with Go's monotonic clock
// reading anyway, which no wall-clock jump moves.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cluster/fault_proxy.h"
#include "cluster/proxy_links.h"
#include "core/cluster.h"
#include "core/config.h"
#include "sys/process.h"

namespace lockcheck {

struct EtcdClusterOptions {
  int nodes = 5;
  std::string etcd = "etcd";        // the server binary (Debian etcd-server); missing: ClusterError naming it
  std::string etcdctl = "etcdctl";  // readiness and leader queries (Debian etcd-client)
  std::string nodes_dir;            // where nX/ and nX.log go; created if missing
  std::chrono::milliseconds start_timeout{60000};  // every member up, one leader, every member healthy
  std::chrono::milliseconds restart_timeout{10000};  // a restarted member's client port accepts connections
  std::chrono::milliseconds query_timeout{2000};     // one etcdctl call (status, health)
  int heartbeat_ms = 100;   // --heartbeat-interval (etcd's default)
  int election_ms = 1000;   // --election-timeout (etcd's default)
  bool use_proxy = true;    // false: every link direct, no network faults
  // Keep nodes/nX/data after stop(). Off by default: each member preallocates a 64 MB write-ahead log, so a
  // five-member run leaves 320 MB (a 90-run matrix filled 60 GB of disk before this); the logs stay.
  bool keep_data = false;
  uint64_t seed = 0;        // for the proxy's delay jitter, and the cluster token
  static EtcdClusterOptions from(const RunConfig& c, const std::string& run_dir);
};

class EtcdCluster : public ProxiedCluster {
 public:
  explicit EtcdCluster(EtcdClusterOptions opts);  // throws ClusterError for a bad node count
  ~EtcdCluster() override;                        // stop()

  void start() override;
  void stop() noexcept override;
  const std::vector<NodeInfo>& nodes() const override { return nodes_; }
  ServerKind server() const override { return ServerKind::kEtcd; }
  // The member every answering member names as leader (etcdctl endpoint status), or nullopt (no answer, no
  // leader, or members that disagree). Bounded by query_timeout plus etcdctl's start.
  std::optional<size_t> leader() const override;

  void kill(size_t n) override;
  void restart(size_t n) override;
  void pause(size_t n) override;
  void resume(size_t n) override;
  // Throws ClusterError: the clock shim does not reach etcd (see the header comment).
  void set_clock_offset(size_t n, std::chrono::nanoseconds offset) override;
  // Refused as every clock fault on etcd is (set_clock_offset says why).
  void set_clock_rate(size_t n, int64_t) override { set_clock_offset(n, std::chrono::nanoseconds(0)); }
  bool is_running(size_t n) const override;

  pid_t pid(size_t n) const;  // -1 when down
  // The member that owns the TCP socket whose local end is `source` (127.0.0.1:port), by /proc; "" for none.
  // What the fault proxy's classifier asks. Thread-safe.
  std::string member_owning(const Endpoint& source) const;

 protected:
  Endpoint own_endpoint(size_t n) const override { return nodes_.at(n).listen; }
  bool proxied() const override { return opts_.use_proxy; }

 private:
  std::vector<std::string> argv_for(size_t n) const;
  void spawn(size_t n);  // REQUIRES: mu_ held; throws ClusterError
  // Draws member n's client and peer ports (free a moment ago); its peer URL stays its shared proxy link,
  // which is pointed at the new peer port. REQUIRES: mu_ held; throws ClusterError.
  void place_ports(size_t n);
  static bool log_says_port_taken(const std::string& log_path);
  void wait_until_ready();

  EtcdClusterOptions opts_;
  std::vector<NodeInfo> nodes_;
  std::vector<std::string> data_dirs_;
  std::vector<Endpoint> peer_listen_;     // where member n's peer port listens
  std::vector<Endpoint> peer_advertise_;  // its peer URL: the shared proxy link (or peer_listen_ without proxy)
  std::vector<uint64_t> member_ids_;      // learnt at start (etcdctl endpoint status)
  std::vector<int> respawns_;             // starts again after a port clash, per member
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<ChildProcess>> procs_;
  std::vector<bool> paused_;
  mutable std::mutex pids_mu_;  // member_owning runs on the proxy thread: never under mu_
  std::vector<pid_t> pids_;
};

}  // namespace lockcheck
