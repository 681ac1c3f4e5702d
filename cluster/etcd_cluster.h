// `--server etcd` on the local backend: an etcd cluster (Debian's etcd-server, 3.4.23 on bookworm) of N members
// n1..nN on loopback, each an `etcd` process with its data dir nodes/nX/ and log nodes/nX.log under the run's
// folder. No root and no Docker, as for Redis.
//
// The processes, ports, data dirs and links are cluster/local_ensemble.h's (every link through the fault proxy;
// one shared peer link per member, its peer URL in --initial-cluster). Raft messages, snapshots and the lease
// renewals a follower forwards to the leader (POST /leases) all travel on the peer links.
//
// Start: every member is started, then start() waits (bounded by start_timeout) until every member answers
// `etcdctl endpoint status` naming the same elected leader and `etcdctl endpoint health` (a quorum read)
// succeeds on each.
//
// Node faults: kill (SIGKILL), restart, pause (SIGSTOP), resume. Clock faults are refused (ClusterError): the
// clock shim is an LD_PRELOAD of libc's clock functions, and etcd, a Go program, reads the clock through the
// vDSO without libc (measured: etcd started under the shim with a +1 h offset logs the machine's time, while
// `date` under the same shim is an hour ahead). etcd times leases on the leader with Go's monotonic clock
// reading anyway, which no wall-clock jump moves.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cluster/local_ensemble.h"
#include "core/config.h"

namespace lockcheck {

struct EtcdClusterOptions : LocalEnsembleOptions {
  // Defaults of the base: 60 s for every member up, one leader, every member healthy; 10 s for a restarted
  // member's client port. keep_data off: each member preallocates a 64 MB write-ahead log, so a five-member run
  // would leave 320 MB (a 90-run matrix filled 60 GB of disk before this); the logs stay.
  std::string etcd = "etcd";        // the server binary (Debian etcd-server); missing: ClusterError naming it
  std::string etcdctl = "etcdctl";  // readiness and leader queries (Debian etcd-client)
  std::chrono::milliseconds query_timeout{2000};  // one etcdctl call (status, health)
  int heartbeat_ms = 100;   // --heartbeat-interval (etcd's default)
  int election_ms = 1000;   // --election-timeout (etcd's default)
  // seed (the base's): also the cluster token
  static EtcdClusterOptions from(const RunConfig& c, const std::string& run_dir);
};

class EtcdCluster : public LocalEnsemble {
 public:
  explicit EtcdCluster(EtcdClusterOptions opts);  // throws ClusterError for a bad node count

  ServerKind server() const override { return ServerKind::kEtcd; }
  // The member every answering member names as leader (etcdctl endpoint status), or nullopt (no answer, no
  // leader, or members that disagree). Bounded by query_timeout plus etcdctl's start.
  std::optional<size_t> leader() const override;

 protected:
  void check_programs() const override;
  std::vector<std::string> member_argv(size_t n) const override;
  std::string ready_error() override;
  std::string clock_refusal(size_t n) const override;

 private:
  EtcdClusterOptions etcd_;
  std::vector<uint64_t> member_ids_;  // learnt at start (etcdctl endpoint status)
};

}  // namespace lockcheck
