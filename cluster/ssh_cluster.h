// The `ssh` cluster backend: every Redis node (and Sentinel) runs on a remote host reached with OpenSSH, as in
// Jepsen. Selected with `--cluster ssh --hosts FILE` (cluster/ssh_hosts.h describes the file). Clients run here
// and reach the nodes over the network. scripts/ssh-testbed makes such hosts on one machine.
//
// What a run creates, and stop() removes (also after an error or SIGINT/SIGTERM):
//   here     <run_dir>/ssh/ (staging, ssh logs), a control socket folder /tmp/lcssh-<run id>/ (with owner: our
//            pid), one ssh master connection per host (a child process: ControlMaster, every other call
//            multiplexed through it; a master lost to a terminal's Ctrl-C only makes later calls connect anew)
//   per host <work_dir>/lockcheck-<run id>/ with owner (pid and host of the lockcheck process), the clock shim
//            libclockshim.so, and per node nX/: redis.conf, clock (the shim's offset file), data/, redis.log,
//            redis.pid; the redis-server processes (daemonized; pids kept here); an iptables chain LC-<run id>
//            jumped to from INPUT and OUTPUT (made on the first cut); a tc prio+netem root qdisc on the
//            interface towards a peer (made on the first node<->node delay).
// stop() SIGKILLs the nodes (SIGCONT first), removes the chain and qdiscs, fetches each node's redis.log into
// <run_dir>/nodes/, removes the remote folder and closes the masters. `lockcheck clean --hosts FILE` does the
// same for runs whose owner process is gone (and removes their control-socket folders here).
//
// Faults:
//   kill / restart / pause / resume  kill -s KILL|STOP|CONT <pid> over ssh (kill waits until the process is
//                    gone); restart runs the same command again (persistence none: the data dir's RDB is removed
//                    first, so it comes back empty). Multi-step remote actions are constant `sh -c` scripts whose
//                    variable parts are quoted positional arguments, never spliced into the script.
//   clock            8 bytes written into the node's offset file with dd conv=notrunc (one write(2) into the
//                    page the shim maps)
//   node <-> node    (and node/Sentinel <-> Sentinel) iptables DROP by the peer host's address in the run's chain on
//   both hosts. Rules are per
//                    host: two nodes on one host cannot be cut from each other (ClusterError), and a cut also
//                    holds for a Sentinel on the same host. Give as many hosts as nodes for exact cuts.
//   node <-> node delay   tc netem on both hosts (one delay per host towards its delayed peers); on a kernel
//                    without sch_netem: ClusterError "delay not available on HOST".
//   client <-> node  the harness's TCP fault proxy (cluster/fault_proxy.h) on 127.0.0.1, forwarding to the node:
//                    client slots all come from this machine's one address, which host rules cannot tell apart.
//
// Every remote call is `ssh`/`scp` with an argv vector (cluster/ssh_hosts.h quotes it for the remote shell),
// BatchMode, ConnectTimeout and a bounded wait. Thread-safety: one internal mutex, as the docker backend.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cluster/redis_config.h"
#include "cluster/split_network.h"
#include "cluster/ssh_hosts.h"
#include "core/cluster.h"
#include "core/config.h"

namespace lockcheck {

class ChildProcess;
class FaultProxy;

struct SshClusterOptions {
  std::string clock_shim;  // empty: clock_shim_library()
  int sentinels = 3;
  SentinelTimings sentinel_timings = kRemoteSentinelTimings;  // cluster/redis_config.h
  std::chrono::seconds connect_timeout{10};                   // ssh ConnectTimeout
  std::chrono::milliseconds call_timeout{30000};              // bound on any one ssh/scp call
  std::chrono::milliseconds ready_timeout{30000};             // bound on waiting for PING after start/restart
};

class SshCluster final : public Cluster, private PeerLinks {
 public:
  // Reads the hosts file config.hosts (ConfigError on a bad one). Nothing is started yet.
  SshCluster(const RunConfig& config, std::string run_dir, SshClusterOptions options = {});
  ~SshCluster() override;  // stop()
  SshCluster(const SshCluster&) = delete;
  SshCluster& operator=(const SshCluster&) = delete;

  void start() override;
  void stop() noexcept override;

  const std::vector<NodeInfo>& nodes() const override { return nodes_; }
  std::vector<NodeInfo> sentinels() const override { return sentinels_; }

  void kill(size_t n) override;
  void restart(size_t n) override;
  void pause(size_t n) override;
  void resume(size_t n) override;
  void set_clock_offset(size_t n, std::chrono::nanoseconds offset) override;
  bool is_running(size_t n) const override;

  Endpoint endpoint_for(const std::string& party, size_t n) const override;
  void cut(const std::string& a, const std::string& b) override;
  void heal(const std::string& a, const std::string& b) override;
  void heal_all() override;
  void set_delay(const std::string& a, const std::string& b, std::chrono::milliseconds delay,
                 std::chrono::milliseconds jitter) override;

  const std::string& run_id() const { return run_id_; }
  std::string chain() const { return "LC-" + run_id_; }
  const SshHost& host_of(size_t n) const { return hosts_[node_host_[n]].host(); }
  // Remote `iptables -S` of node n's host (for tests and post-mortems).
  std::string iptables_rules(size_t n) const;

 private:
  struct Proc {
    std::string name;  // n1 / s1
    size_t host = 0;
    int pid = 0;
    bool killed = false;
    bool paused = false;
  };
  struct HostState {
    bool used = false;      // some node or Sentinel runs there
    bool dir_made = false;  // the remote folder may exist
    bool chain_made = false;
    std::set<std::string> dropped;                              // peer addresses in the chain now
    std::string netem_dev;                                      // interface with our root qdisc ("" none)
    std::map<std::string, std::pair<int64_t, int64_t>> delays;  // peer address -> (delay, jitter) ms
  };

  void start_locked();
  void stop_locked() noexcept;
  void setup_host(size_t h);
  void start_proc(Proc& p, const std::string& program);
  void wait_ready(const Endpoint& ep, const std::string& what) const;
  void wait_replicas_linked() const;
  std::string remote_dir(size_t h) const;
  void sync_rules(size_t h);
  void sync_delays(size_t h);
  void signal_proc(const Proc& p, const char* sig);
  // PeerLinks (node <-> node and node <-> Sentinel links, for links_): iptables and tc netem on the hosts.
  void require_running() const override;
  void cut_peers(const std::string& a, const std::string& b) override;
  void heal_peers(const std::string& a, const std::string& b) override;
  void heal_all_peers() override;
  void delay_peers(const std::string& a, const std::string& b, std::chrono::milliseconds delay,
                   std::chrono::milliseconds jitter) override;

  size_t node_index(const std::string& party) const;
  size_t party_host(const std::string& party) const;  // host of a node or Sentinel; npos otherwise
  int client_slot(const std::string& party) const;
  void check_node(size_t n) const;
  std::string path(const std::string& rel) const;

  struct Remote {  // one host's command builder
    explicit Remote(SshCommands c) : cmds(std::move(c)) {}
    const SshHost& host() const { return cmds.host(); }
    SshCommands cmds;
  };
  std::string ssh_check(size_t h, const std::vector<std::string>& argv, bool privileged = false,
                        const std::string& input = "") const;
  bool ssh_try(size_t h, const std::vector<std::string>& argv, bool privileged = false, std::string* err = nullptr,
               const std::string& input = "") const;
  void scp_check(size_t h, const std::vector<std::string>& argv) const;

  const RunConfig config_;
  const std::string run_dir_;
  const SshClusterOptions options_;
  SshHosts file_;
  std::vector<Remote> hosts_;
  std::string run_id_;
  std::string control_dir_;
  std::vector<NodeInfo> nodes_;
  std::vector<NodeInfo> sentinels_;
  std::vector<size_t> node_host_;
  std::vector<Proc> procs_;  // nodes first, then Sentinels
  std::vector<HostState> host_state_;
  std::vector<std::unique_ptr<ChildProcess>> masters_;
  std::set<std::pair<std::string, std::string>> cuts_;
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> node_delays_;
  std::unique_ptr<FaultProxy> proxy_;
  SplitNetwork links_;  // client links through proxy_, server links through the PeerLinks above
  std::vector<std::vector<Endpoint>> client_endpoints_;
  bool started_ = false;
  bool stopped_ = false;
  std::atomic<bool> stop_requested_{false};
  mutable std::mutex mu_;
};

// `lockcheck clean --hosts FILE`: on every host, removes what runs whose owner process is gone left behind
// (their nodes, iptables chains, folders); keeps those of live runs. One line per removed or kept thing.
// Returns 0 when nothing it should remove is left, 3 when a host did not answer or a removal failed.
int ssh_clean(const std::string& hosts_file, std::ostream& out);

}  // namespace lockcheck
