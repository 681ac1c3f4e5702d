// `--server zookeeper` on the local backend: a ZooKeeper ensemble (Debian's zookeeper 3.8.0) of N members
// n1..nN on loopback, each a JVM (cluster/zookeeper_common.h: its zoo.cfg and command line) with its zoo.cfg in
// nodes/nX/, its data (myid, snapshots, transaction log) in nodes/nX/data and its log nodes/nX.log under the
// run's folder. No root and no Docker, as for Redis and etcd.
//
// The processes, ports and links are cluster/local_ensemble.h's: clients reach a member's client port through
// their own proxy links; each member has two peer ports, quorum (followers to the leader: proposals, commits,
// pings, the session touches a follower forwards) and election (fast leader election), each behind a shared
// proxy link ("*quorum", "*election") that the members name each other by, and the proxy tells the connecting
// member by /proc. A member's own zoo.cfg entry is 0.0.0.0 with its real ports (see zookeeper_common.h for why).
//
// Start: every member is started, then start() waits (bounded by start_timeout) until every member answers
// `srvr` with a Mode and exactly one says leader. leader() asks `srvr` of the running members.
// Session timing: tickTime and the allowed session range follow the run's TTL (zookeeper_timing).
//
// Node faults: kill (SIGKILL), restart (same data dir and ports: it rejoins as itself), pause (SIGSTOP),
// resume. Clock faults are refused (zookeeper_clock_refusal: sessions are timed on the monotonic clock).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "cluster/local_ensemble.h"
#include "cluster/zookeeper_common.h"
#include "core/config.h"

namespace lockcheck {

struct ZooKeeperClusterOptions : LocalEnsembleOptions {
  ZooKeeperClusterOptions() {
    start_timeout = std::chrono::milliseconds(90000);    // every member serving, one leader (five JVMs, 2 cores)
    restart_timeout = std::chrono::milliseconds(20000);  // a restarted member's client port accepts
  }
  std::string java = "java";                              // the JVM (Debian default-jre-headless)
  std::string classpath = zookeeper_default_classpath();  // Debian's zookeeper.jar and slf4j-simple.jar
  std::chrono::milliseconds query_timeout{1000};          // one `srvr`
  ZooKeeperTiming timing = zookeeper_timing(1000);        // from --ttl-ms: from()
  static ZooKeeperClusterOptions from(const RunConfig& c, const std::string& run_dir);
};

class ZooKeeperCluster : public LocalEnsemble {
 public:
  explicit ZooKeeperCluster(ZooKeeperClusterOptions opts);  // throws ClusterError for a bad node count

  ServerKind server() const override { return ServerKind::kZooKeeper; }
  // The running member that says `Mode: leader` when exactly one does; nullopt otherwise. Bounded by
  // query_timeout per member.
  std::optional<size_t> leader() const override;
  const ZooKeeperTiming& timing() const { return zk_.timing; }

 protected:
  void check_programs() const override;
  std::vector<std::string> member_argv(size_t n) const override;
  void write_member_files(size_t n) override;
  std::string ready_error() override;
  std::string clock_refusal(size_t n) const override;

 private:
  std::string zoo_cfg_path(size_t n) const { return data_dirs_[n] + "/zoo.cfg"; }
  ZooKeeperClusterOptions zk_;
};

}  // namespace lockcheck
