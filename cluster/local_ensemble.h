// What the local backends of the consensus servers share (etcd, cluster/etcd_cluster.h; ZooKeeper,
// cluster/zookeeper_cluster.h): N member processes n1..nN on loopback, each with its folder nodes/nX/ (its data
// under nodes/nX/data) and its log nodes/nX.log in the run's folder, and every link through the harness's fault
// proxy. A subclass says what a member is (its command line, the files it reads, when the ensemble is ready,
// who leads); this class starts, kills, restarts, pauses and resumes the processes and owns the links.
//
// Links. Clients reach member n through their own proxy link (endpoint_for), as with Redis. Peer traffic goes
// through *shared* proxy links, one per member and peer port (etcd has one peer port, ZooKeeper two: quorum and
// election), whose addresses are what the members name each other by (peer_advertise). Neither etcd (Go) nor
// ZooKeeper (Java) can choose the source address of its outgoing connections, so the proxy cannot tell members
// apart by address as it does Redis nodes: at accept it asks this class which member owns the connecting socket
// (the socket's inode from /proc/net/tcp, then which member's /proc/PID/fd holds it). A connection from
// anything else (the harness's own queries) is never faulted.
//
// Ports: a member's client port and peer ports are drawn free on loopback at start; a member that finds one
// taken by the time it binds (its log says "address already in use") is started again on other ports, twice
// at most (its peers keep naming it by its proxy links, which are pointed at the new ports).
// Start: every member is spawned, then start() waits (bounded by start_timeout) until ready_error() is "".
// A restarted member reuses its data dir and ports and is awaited until its client port accepts connections (it
// may be cut off and unable to find a leader). stop() kills every member (SIGKILL) and removes each data dir
// unless keep_data; the logs stay.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cluster/fault_proxy.h"
#include "cluster/local_members.h"
#include "cluster/proxy_links.h"
#include "core/cluster.h"
#include "sys/process.h"

namespace lockcheck {

struct LocalEnsembleOptions {
  int nodes = 5;
  std::string nodes_dir;  // where nX/ and nX.log go; created if missing
  std::chrono::milliseconds start_timeout{60000};    // every member up and the ensemble ready
  std::chrono::milliseconds restart_timeout{10000};  // a restarted member's client port accepts connections
  bool use_proxy = true;  // false: every link direct, no network faults
  bool keep_data = false;  // keep nodes/nX/data after stop()
  uint64_t seed = 0;       // for the proxy's delay jitter
};

class LocalEnsemble : public ProxiedCluster {
 public:
  ~LocalEnsemble() override;  // stop()

  void start() override;
  void stop() noexcept override;
  const std::vector<NodeInfo>& nodes() const override { return nodes_; }

  void kill(size_t n) override;
  void restart(size_t n) override;
  void pause(size_t n) override;
  void resume(size_t n) override;
  // Throws ClusterError with clock_refusal(n): the clock shim does not reach the members (each subclass says why).
  void set_clock_offset(size_t n, std::chrono::nanoseconds offset) override;
  void set_clock_rate(size_t n, int64_t) override { set_clock_offset(n, std::chrono::nanoseconds(0)); }
  bool is_running(size_t n) const override;

  pid_t pid(size_t n) const;  // -1 when down
  // The member that owns the TCP socket whose local end is `source` (127.0.0.1:port), by /proc; "" for none.
  // What the fault proxy's classifier asks. Thread-safe.
  std::string member_owning(const Endpoint& source) const;

 protected:
  // kind: "etcd" or "ZooKeeper" (in messages); peer_labels: one shared proxy link per member and label.
  // Throws ClusterError for a bad node count.
  LocalEnsemble(LocalEnsembleOptions opts, std::string kind, std::vector<std::string> peer_labels);

  // Throws ClusterError when a program the members or the readiness queries need is missing.
  virtual void check_programs() const = 0;
  // Member n's command line. REQUIRES: mu_ held.
  virtual std::vector<std::string> member_argv(size_t n) const = 0;
  // Writes what member n reads at its start into its folder (its ports may have changed). Default: nothing.
  // REQUIRES: mu_ held; throws ClusterError.
  virtual void write_member_files(size_t n) { (void)n; }
  // "" when the ensemble is ready (asked every 200 ms during start, with mu_ held), else what is missing.
  virtual std::string ready_error() = 0;
  // Why a clock fault cannot reach member n.
  virtual std::string clock_refusal(size_t n) const = 0;

  Endpoint own_endpoint(size_t n) const override { return nodes_.at(n).listen; }
  bool proxied() const override { return opts_.use_proxy; }

  LocalEnsembleOptions opts_;
  const std::string kind_;
  const std::vector<std::string> peer_labels_;
  std::vector<NodeInfo> nodes_;
  std::vector<std::string> data_dirs_;  // nodes/nX (absolute); the member's data is in data_dirs_[n] + "/data"
  // Per member and peer label: where its peer port listens, and what its peers name it by (the shared proxy
  // link; peer_listen_ itself without the proxy).
  std::vector<std::vector<Endpoint>> peer_listen_, peer_advertise_;
  mutable std::mutex mu_;

 private:
  void spawn(size_t n);        // REQUIRES: mu_ held; throws ClusterError
  void place_ports(size_t n);  // REQUIRES: mu_ held; throws ClusterError
  void wait_until_ready();

  std::vector<int> respawns_;  // starts again after a port clash, per member
  LocalMembers members_;
  mutable std::mutex pids_mu_;  // member_owning runs on the proxy thread: never under mu_
  std::vector<pid_t> pids_;
};

}  // namespace lockcheck
