// The one implementation of a cluster whose servers run on hosts reached through the Remote seam
// (cluster/remote.h): the `ssh` backend (remote hosts) and the `docker` backend (a container per server) are
// this class plus how they make their hosts (SshCluster: master connections; DockerCluster: a network and
// containers). Everything a host sees goes through Remote::exec, upload and download.
//
// Per host, in <work_dir>/lockcheck-<run id>/: owner (pid and host of the lockcheck process), libclockshim.so
// (unless the host has the shim already: RemoteHost::clock_shim), and per server sK/nK/: its config, clock (the
// shim's offset file), data/, its log and pid file; the server processes (daemonized; pids kept here); an
// iptables chain (RemoteCluster::chain()) jumped to from INPUT and OUTPUT (made on the first cut); a tc
// prio+netem root qdisc on the interface towards a peer (made on the first node<->node delay).
// stop() SIGKILLs the servers (SIGCONT first), removes the chain and qdiscs, fetches each server's log into
// <run_dir>/nodes/, removes the remote folder (an ephemeral host, a container, only has its logs fetched).
//
// Faults:
//   kill / restart / pause / resume  kill -s KILL|STOP|CONT <pid> on the host (kill waits until the process is
//                    gone); restart runs the same start command again (the server kind names what a restart
//                    must not find: a node without persistence loses its RDB). Multi-step remote actions are
//                    constant `sh -c` scripts whose variable parts are quoted positional arguments. While a node
//                    is killed, the clients' proxy links to it refuse connections, as its own port does.
//   clock            8 bytes written into the server's offset file with dd conv=notrunc (one write(2) into the
//                    page the shim maps)
//   server <-> server  iptables DROP by the peer host's address in the run's chain, on each side's host that can
//                    filter (RemoteHost::can_filter). Rules are per host: two servers on one host cannot be cut
//                    from each other (ClusterError); neither side able to filter: ClusterError.
//   server <-> server delay  tc netem on both hosts (one delay per host towards its delayed peers); a host
//                    without it (RemoteHost::can_delay false, or no sch_netem): ClusterError "delay not available on
//                    HOST".
//   client <-> node  the harness's TCP fault proxy (cluster/fault_proxy.h) on 127.0.0.1, forwarding to the node.
//
// A server kind (RemoteServerKind below) says what a server is: its files, its start command, its pid and log
// files, what a restart must not find, when it is ready, what its topology waits for after start, its leader
// and whether clock faults reach it: Redis (redis_remote_kind()), etcd (etcd_remote_kind()) and ZooKeeper
// (zookeeper_remote_kind()), chosen from config.server.
// Thread-safety: one internal mutex; stop() from another thread cuts short a wait for readiness.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cluster/clock_shim.h"
#include "cluster/redis_config.h"
#include "cluster/remote.h"
#include "cluster/split_network.h"
#include "core/cluster.h"
#include "core/config.h"

namespace lockcheck {

class FaultProxy;

// One host as the cluster sees it.
struct RemoteHost {
  std::shared_ptr<const Remote> remote;  // how commands and files reach it
  std::string name;                      // in messages: "h1", "n1"
  std::string address;                   // where peers and the harness reach its servers (set by provision())
  std::string work_dir;                  // absolute; each run makes <work_dir>/lockcheck-<run id> in it
  bool work_dir_exists = false;          // true: no `mkdir -p` first (a container's image has it)
  std::map<std::string, std::string> programs;  // program paths by the server kind's name for them
  std::string clock_shim;                        // the shim's path on the host; empty: uploaded with the folder
  std::string power_shim;  // the power shim's path there (power-loss runs only); empty: uploaded with the folder
  bool can_filter = true;                        // iptables rules can be loaded there (root or CAP_NET_ADMIN)
  bool can_delay = true;                         // tc netem may be there
  bool ephemeral = false;                        // goes away with the run (a container): teardown fetches logs only
  // Its CLOCK_REALTIME is the harness's (a container, this machine): a clock rate is anchored at the harness's
  // time. Else the host's clock is read once (`date +%s%N`) and the difference, measured to within half a
  // round trip, is added.
  bool shares_harness_clock = false;
};

// One server process of a run.
struct ServerSlot {
  NodeInfo info;     // name, role, endpoint, log_path (the local copy)
  size_t host = 0;   // index into the cluster's hosts
  std::string dir;   // its folder on the host
  int pid = 0;       // while started
  bool killed = false;
  bool paused = false;
  ClockSetting clock;             // what its clock file holds (the harness is its only writer)
  uint64_t clock_generation = 0;  // the file's generation word (cluster/clock_shim.h)
};

// What the cluster needs to know of a kind of server: Redis now; another kind (etcd) gives the same.
class RemoteServerKind {
 public:
  virtual ~RemoteServerKind() = default;
  // Files of a server's folder, written before the first start: name (relative to slot.dir) -> content.
  // servers: every server of the run (nodes first, then Sentinels), hosts: for their addresses.
  virtual std::vector<std::pair<std::string, std::string>> files(const ServerSlot& slot,
                                                                 const std::vector<ServerSlot>& servers,
                                                                 const std::vector<RemoteHost>& hosts) const = 0;
  // The command that starts it on host (env, program, arguments). It must daemonize (return once the server
  // runs) and write the server's pid into slot.dir + "/" + pid_file(). shim: the clock shim's path there, to
  // be preloaded with kClockFileEnv pointing at slot.dir + "/clock".
  // servers and hosts: every server of the run and the hosts, as for files().
  virtual std::vector<std::string> start_command(const ServerSlot& slot, const std::vector<ServerSlot>& servers,
                                                 const std::vector<RemoteHost>& hosts,
                                                 const std::string& shim) const = 0;
  virtual std::string pid_file() const = 0;  // relative to slot.dir
  virtual std::string log_file() const = 0;  // relative to slot.dir; fetched into slot.info.log_path at stop
  // A path removed before every start ("" none): what a restarted server must not come back with.
  virtual std::string wipe_before_start(const ServerSlot& slot) const = 0;
  // "" when the server at ep answers; else what is wrong. Polled until the ready timeout.
  virtual std::string ready_error(const Endpoint& ep) const = 0;
  // Once every server answers: waits for what the topology needs before faults (replication links, a formed
  // cluster). stopping() ends it early. Throws ClusterError.
  virtual void after_start(const std::vector<ServerSlot>& servers, std::chrono::milliseconds timeout,
                           const std::string& hint, const std::function<bool()>& stopping) const = 0;
  virtual ServerKind server() const { return ServerKind::kRedis; }
  // The node (index into the nodes) that leads, asked of the nodes in `running` (their endpoints); nullopt when
  // none does or the kind has no leader (Redis). Called without the cluster's mutex. Never throws.
  virtual std::optional<size_t> leader(const std::vector<Endpoint>& running, size_t nodes) const {
    (void)running;
    (void)nodes;
    return std::nullopt;
  }
  // Why a clock fault cannot reach this server ("" it can: the shim is preloaded).
  virtual std::string clock_refusal(const ServerSlot& slot) const {
    (void)slot;
    return "";
  }
};

// Background start for servers that do not daemonize (etcd, a ZooKeeper JVM): `sh -c kRemoteBackgroundScript sh
// PIDFILE LOG PROGRAM ARGS...`. setsid puts the server in a session of its own (no hangup when the ssh or docker
// exec session ends; setsid execs in place, so $! is the server's pid), its output is appended to LOG (a restart
// continues it) and its pid written to PIDFILE. A PROGRAM the host cannot run fails the start at once (exit 127,
// "PROGRAM: not found on this host"), rather than the readiness wait timing out on a server that never ran.
inline constexpr const char* kRemoteBackgroundScript =
    "p=$1; l=$2; shift 2; command -v \"$1\" >/dev/null || { echo \"$1: not found on this host\" >&2; exit 127; }; "
    "setsid \"$@\" >>\"$l\" 2>&1 </dev/null & echo $! >\"$p\"";

// Polls why() every `every` until it returns "" (returns ""), the timeout passes (returns the last reason) or
// stopping() (throws ClusterError(stopping_message)): the bounded wait of the server kinds' after_start.
std::string wait_until_ready(const std::function<std::string()>& why, std::chrono::milliseconds timeout,
                             const std::function<bool()>& stopping, const std::string& stopping_message,
                             std::chrono::milliseconds every = std::chrono::milliseconds(200));

struct RemoteClusterOptions {
  std::string clock_shim;  // the local shim to upload; empty: clock_shim_library()
  int sentinels = 3;
  SentinelTimings sentinel_timings = kRemoteSentinelTimings;  // cluster/redis_config.h
  int64_t cluster_node_timeout_ms = 1000;                     // cluster topology: cluster-node-timeout
  std::chrono::milliseconds call_timeout{30000};              // bound on any one remote call
  std::chrono::milliseconds ready_timeout{30000};             // bound on waiting for a server after start/restart
  std::string etcdctl = "etcdctl";  // etcd: the harness's etcdctl (readiness, leader), run here against the nodes
  // etcd: a program of this machine uploaded with each host's folder (as <folder>/etcd) and run instead of the
  // host's own ("": the host's programs["etcd"]): how --server-version reaches SSH hosts.
  std::string etcd_upload;
  // ZooKeeper: the bound on after_start's wait for every member serving and one leader (at least ready_timeout):
  // five JVMs starting on two cores, as the local backend's start_timeout.
  std::chrono::milliseconds zookeeper_start_timeout{90000};
};

// options with the etcd build --server-version resolves to (cluster/server_builds.h): its etcdctl for the
// harness's queries and, with ship_server, its etcd uploaded to the hosts. Unchanged for Redis and for etcd on
// hosts that run their own (--cluster ssh without --server-version).
RemoteClusterOptions with_server_build(RemoteClusterOptions options, const RunConfig& config, bool ship_server);

// Redis (data nodes, and Sentinels in the replicated topology), as every backend runs it. Programs on a host:
// programs["redis-server"], programs["redis-sentinel"].
std::unique_ptr<RemoteServerKind> redis_remote_kind(const RunConfig& config, const RemoteClusterOptions& options);
// etcd (--server etcd): every node a member of one cluster (cluster/etcd_common.h: the command line and the
// etcdctl queries are the local backend's). Its client port is the node's port, its peer port the next one up
// (etcd_peer_port); both listen on every address of the host, and the member advertises its host's address.
// Started in the background (setsid, the log redirected, the pid written: etcd does not daemonize), data dir
// <server folder>/etcd (kept across a restart: the member rejoins as itself), log etcd.log. Ready: the client
// port accepts connections; after_start: every member names one leader and every member is healthy (etcdctl
// run here, options.etcdctl, against the members' addresses: the harness reaches them as it does Redis nodes).
// Clock faults are refused as on the local backend. Program on a host: programs["etcd"].
std::unique_ptr<RemoteServerKind> etcd_remote_kind(const RunConfig& config, const RemoteClusterOptions& options);
// ZooKeeper (--server zookeeper): every node a member of one ensemble (cluster/zookeeper_common.h: zoo.cfg, the
// JVM's command line, the `srvr` questions and the clock refusal are the local backend's). Its client port is the
// node's port, its quorum and election ports zookeeper_quorum_port / zookeeper_election_port of it; its zoo.cfg
// names every peer at its host's address, so a cut between two hosts (iptables, by address) cuts the quorum and
// election links too. files(): zoo.cfg and data/myid. Started in the background (kRemoteBackgroundScript: the
// JVM does not daemonize), data dir <server folder>/data (kept across a restart: the member rejoins as itself),
// log zookeeper.log (slf4j-simple to stderr). Ready: the client port answers `srvr` (whatever it says: a member
// cut off from a quorum answers that it is not serving); after_start: every member serving and exactly one
// leader, bounded by max(timeout, options.zookeeper_start_timeout). Clock faults are refused as on the local
// backend. Program on a host: programs["java"] ("java" on its PATH when not named), with Debian's jars at
// zookeeper_default_classpath() (the docker image carries both).
std::unique_ptr<RemoteServerKind> zookeeper_remote_kind(const RunConfig& config, const RemoteClusterOptions& options);

class RemoteCluster : public Cluster, private PeerLinks {
 public:
  ~RemoteCluster() override;  // stop() (a backend's destructor calls it first: unprovision() is its own)
  RemoteCluster(const RemoteCluster&) = delete;
  RemoteCluster& operator=(const RemoteCluster&) = delete;

  // provision(), then per host its folder, the servers, waits until each is ready and the topology formed,
  // opens the client proxies. On any failure it removes what it made and throws ClusterError.
  void start() override;
  void stop() noexcept override;  // idempotent, never throws; problems go to stderr

  const std::vector<NodeInfo>& nodes() const override { return nodes_; }
  std::vector<NodeInfo> sentinels() const override { return sentinels_; }

  void kill(size_t n) override;
  void restart(size_t n) override;  // a running node is killed first; waits until it is ready
  void pause(size_t n) override;
  void resume(size_t n) override;
  void set_clock_offset(size_t n, std::chrono::nanoseconds offset) override;
  void set_clock_rate(size_t n, int64_t rate_ppb) override;
  std::optional<std::chrono::nanoseconds> clock_shift(size_t n) const override;
  // SIGKILL, then the node's power journal replayed here and its plan applied on the host with stat, truncate
  // and rm (the power shim is preloaded only in runs with the power-loss nemesis).
  PowerLossReport power_loss(size_t n) override;
  bool is_running(size_t n) const override;
  ServerKind server() const override { return kind_->server(); }
  std::optional<size_t> leader() const override;  // the server kind's (etcd: the member a majority names)

  Endpoint endpoint_for(const std::string& party, size_t n) const override;
  void cut(const std::string& a, const std::string& b) override;
  void heal(const std::string& a, const std::string& b) override;
  void heal_all() override;
  void cut_links(const LinkPairs& pairs) override;
  void heal_links(const LinkPairs& pairs) override;
  void set_delays(const std::vector<LinkDelay>& delays) override;
  void set_delay(const std::string& a, const std::string& b, std::chrono::milliseconds delay,
                 std::chrono::milliseconds jitter) override;

  const std::string& run_id() const { return run_id_; }
  const std::string& chain() const { return chain_; }  // the run's iptables chain on each host
  // `iptables -S` on node n's host (for tests and post-mortems).
  std::string iptables_rules(size_t n) const;

 protected:
  struct Placement {
    size_t host = 0;
    int port = 0;
  };
  // backend: its name in messages ("ssh cluster"); run_id names the remote folders; chain: the iptables chain
  // (at most 28 characters). Call place() in the backend's constructor.
  RemoteCluster(std::string backend, const RunConfig& config, std::string run_dir, RemoteClusterOptions options,
                std::string run_id, std::string chain);
  // The hosts, and where each node and Sentinel runs (Sentinels: options.sentinels of them, replicated only).
  void place(std::vector<RemoteHost> hosts, const std::vector<Placement>& nodes,
             const std::vector<Placement>& sentinels);

  // Called by start() first, with the mutex held: make the hosts reachable (and set their addresses).
  virtual void provision() {}
  // Called by stop() last, with the mutex held, when start() was called: undo provision(). Never throws.
  virtual void unprovision() noexcept {}

  std::string path(const std::string& rel) const;  // run_dir/rel
  bool host_used(size_t h) const { return host_state_[h].used; }  // some server runs there
  void set_ready_hint(std::string hint) { ready_hint_ = std::move(hint); }

  const std::string backend_;
  const RunConfig config_;
  const std::string run_dir_;
  const RemoteClusterOptions options_;
  std::vector<RemoteHost> hosts_;
  std::atomic<bool> stop_requested_{false};  // set by stop() before it takes mu_
  mutable std::mutex mu_;

 private:
  struct HostState {
    bool used = false;      // some server runs there
    bool dir_made = false;  // the remote folder may exist
    bool chain_made = false;
    std::set<std::string> dropped;                              // peer addresses in the chain now
    std::string netem_dev;                                      // interface with our root qdisc ("" none)
    std::map<std::string, std::pair<int64_t, int64_t>> delays;  // peer address -> (delay, jitter) ms
    std::optional<int64_t> clock_delta_ns;                      // host_clock_delta_locked, once measured
  };

  void start_locked();
  void stop_locked() noexcept;
  void refresh_endpoints();
  std::string remote_dir(size_t h) const;
  std::string shim_on(size_t h) const;
  std::string preload_on(size_t h) const;  // LD_PRELOAD there: the clock shim, and the power shim when power_
  void setup_host(size_t h);
  void teardown_host(size_t h) noexcept;
  void start_server(ServerSlot& s);
  void kill_server(ServerSlot& s);
  void signal_server(const ServerSlot& s, const char* sig);
  void wait_ready(const ServerSlot& s) const;
  std::string check(size_t h, const std::vector<std::string>& argv, bool privileged = false,
                    const std::string& input = "") const;
  bool attempt(size_t h, const std::vector<std::string>& argv, bool privileged = false, std::string* err = nullptr,
               const std::string& input = "") const;
  void check_node(size_t n) const;
  // Puts s in force in node n's clock file (two dd writes, cluster/clock_shim.h). With the mutex held.
  void write_clock_locked(size_t n, const ClockSetting& s);
  // The host's CLOCK_REALTIME minus the harness's, ns (0 when it shares it; else measured once). Mutex held.
  int64_t host_clock_delta_locked(size_t h);
  size_t node_index(const std::string& party) const;
  size_t party_host(const std::string& party) const;  // host of a node or Sentinel; npos otherwise
  int client_slot(const std::string& party) const;
  void sync_rules(size_t h);
  void sync_delays(size_t h);
  // PeerLinks (node <-> node and node <-> Sentinel links, for links_): iptables and tc netem on the hosts.
  void require_running() const override;
  void cut_peers(const std::string& a, const std::string& b) override;
  void heal_peers(const std::string& a, const std::string& b) override;
  void heal_all_peers() override;
  void delay_peers(const std::string& a, const std::string& b, std::chrono::milliseconds delay,
                   std::chrono::milliseconds jitter) override;

  const std::string run_id_;
  const std::string chain_;
  std::unique_ptr<RemoteServerKind> kind_;
  std::string ready_hint_;
  std::vector<ServerSlot> servers_;  // nodes first, then Sentinels
  std::vector<NodeInfo> nodes_;
  std::vector<NodeInfo> sentinels_;
  std::vector<HostState> host_state_;
  std::set<std::pair<std::string, std::string>> cuts_;
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> node_delays_;
  std::unique_ptr<FaultProxy> proxy_;
  SplitNetwork links_;  // client links through proxy_, server links through the PeerLinks above
  std::vector<std::vector<Endpoint>> client_endpoints_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace lockcheck
