// The one cluster implementation: any server kind (cluster/server_spec.h) on hosts reached through the Remote
// seam (cluster/remote.h), for every backend. A backend is this class plus how it makes its hosts and where it
// places the members on them:
//   local   LoopbackCluster below: one host, this machine's loopback (LocalRemote), every port drawn free, the peer
//           network the fault proxy's shared links (cluster/peer_network.h, ProxyPeers)
//   ssh     cluster/ssh_cluster.h: hosts from a hosts file, ssh master connections, iptables and tc netem
//   docker  docker/docker_cluster.h: a container per member on a private network, iptables in each
//
// Per member, in its folder on its host (<work_dir>/lockcheck-<run id>/<name>/, or <run dir>/nodes/<name>/ on a
// host with results_in_place): the files its server kind writes, its clock file (the clock shim's offset file),
// data/, its pid file, its log (fetched into <run dir>/nodes/<name>.log at stop; written there directly in
// place). Per host: the run's folder with an owner file (pid and host of the lockcheck process, for `lockcheck
// clean`) and the shims unless the host has them.
//
// Faults:
//   kill / restart / pause / resume  Remote::kill_process / start_process / signal_process. A restart of a
//                    running member resumes it if paused and starts nothing. While a member is killed, the proxy
//                    links to it refuse connections, as its own port does.
//   clock            the shim's clock file, written with Remote::write_at (cluster/clock_shim.h's two writes)
//   power loss       SIGKILL, then the node's power journal replayed here and its plan applied on the host
//   server <-> server  the backend's PeerNetwork
//   client <-> node  the harness's TCP fault proxy (cluster/fault_proxy.h) on 127.0.0.1, forwarding to the node
//
// Thread-safety: one internal mutex; stop() from another thread cuts short a wait for readiness.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cluster/clock_shim.h"
#include "cluster/peer_network.h"
#include "cluster/port_reservation.h"
#include "cluster/proxy_links.h"
#include "cluster/remote.h"
#include "cluster/server_spec.h"
#include "cluster/split_network.h"
#include "core/cluster.h"

namespace lockcheck {

class FaultProxy;

// What a run asks of its cluster beyond the server and the hosts.
struct ClusterSetup {
  std::string run_dir;        // the run's results folder (nodes/ is made in it)
  int concurrency = 5;        // client slots c0 .. c(concurrency-1)
  uint64_t seed = 0;          // the fault proxy's jitter
  bool network_faults = true;  // false: no fault proxy; clients reach the nodes directly (never faulted)
  bool clock_shim = true;     // preload the clock shim where the server kind has clock abilities
  bool power_shim = false;    // preload the power shim (a run that may lose power)
  std::string clock_shim_path;  // the local shim to upload; empty: clock_shim_library()
  // Upload the build's programs (ServerBuild::programs) with each host's folder and run them there rather than the
  // host's own: how --server-version reaches hosts that have other builds (ssh).
  bool ship_build = false;
  std::chrono::milliseconds call_timeout{30000};  // bound on any one remote call
  // Where a member's port that is not planned comes from; empty: a port reserved for the cluster's life
  // (reserve_loopback_port). A test hands out a port it holds, to see the member start again on another.
  std::function<int()> draw_port;
};

// Polls why() every `every` until it returns "" (returns ""), the timeout passes (returns the last reason) or
// stopping() (throws ClusterError(stopping_message)): the bounded wait of the server kinds' after_start.
std::string wait_until_ready(const std::function<std::string()>& why, std::chrono::milliseconds timeout,
                             const std::function<bool()>& stopping, const std::string& stopping_message,
                             std::chrono::milliseconds every = std::chrono::milliseconds(200));

class ServerCluster : public Cluster, private PeerLinks {
 public:
  ~ServerCluster() override;  // stop() (a backend's destructor calls it first: unprovision() is its own)
  ServerCluster(const ServerCluster&) = delete;
  ServerCluster& operator=(const ServerCluster&) = delete;

  // provision(), the members' ports and addresses, per host its folder, the members (nodes at once, then
  // Sentinels), each awaited until ready, then the server kind's after_start. On any failure it removes what it
  // made and throws ClusterError.
  void start() override;
  void stop() noexcept override;  // idempotent, never throws; problems go to stderr

  const std::vector<NodeInfo>& nodes() const override { return nodes_; }
  std::vector<NodeInfo> sentinels() const override { return sentinels_; }
  std::string describe() const override { return run_.name + " on the " + backend_; }
  Abilities abilities() const override { return abilities_; }

  void kill(size_t n) override;
  void restart(size_t n) override;  // a running member is resumed (if paused), not started again
  void pause(size_t n) override;
  void resume(size_t n) override;
  void set_clock_offset(size_t n, std::chrono::nanoseconds offset) override;
  void set_clock_rate(size_t n, int64_t rate_ppb) override;
  std::optional<std::chrono::nanoseconds> clock_shift(size_t n) const override;
  PowerLossReport power_loss(size_t n) override;
  bool is_running(size_t n) const override;
  std::optional<size_t> leader() const override;
  const Primary* primary() const override { return primary_.get(); }
  const KeyHolders* key_holders() const override { return key_holders_.get(); }

  Endpoint endpoint_for(const std::string& party, size_t n) const override;
  void cut(const std::string& a, const std::string& b) override;
  void heal(const std::string& a, const std::string& b) override;
  void heal_all() override;
  void cut_links(const LinkPairs& pairs) override;
  void heal_links(const LinkPairs& pairs) override;
  void set_delays(const std::vector<LinkDelay>& delays) override;
  void set_delay(const std::string& a, const std::string& b, std::chrono::milliseconds delay,
                 std::chrono::milliseconds jitter) override;

  const Server& server() const { return *server_; }
  const std::string& run_id() const { return run_id_; }
  // The pid of node n's process on its host (-1 when it is down), and of Sentinel k.
  int pid(size_t n) const;
  int sentinel_pid(size_t k) const;
  // The version each node reports now (Server::node_versions), "" where it did not answer.
  std::vector<std::string> node_versions() const;
  // How node n's host is reached (for tests and post-mortems: `iptables -S` there).
  const Remote& host_remote(size_t n) const { return *hosts_.at(members_.at(n).host).remote; }

 protected:
  // Where one member runs: its host and, per port label, its port (0: drawn free on the host's loopback at
  // start, and drawn again when the member finds it taken).
  struct Placement {
    size_t host = 0;
    std::map<std::string, int> ports;
  };
  // backend: its name in messages ("ssh cluster"); run_id names the remote folders. Call place() in the
  // backend's constructor.
  ServerCluster(std::string backend, ServerRun server, ClusterSetup setup, std::string run_id);
  // The hosts, the peer network over them, and where each node and Sentinel runs.
  void place(std::vector<RemoteHost> hosts, std::unique_ptr<PeerNetwork> network, const std::vector<Placement>& nodes,
             const std::vector<Placement>& sentinels);
  // Placements with the server kind's usual ports, member round r at each port + r * stride (hosts of their own:
  // round 0): what docker and ssh give their members.
  std::vector<int> round_ports(NodeRole role) const;

  // Called by start() first, with the mutex held: make the hosts reachable (and set their addresses).
  virtual void provision() {}
  // Called by stop() last, with the mutex held, when start() was called: undo provision(). Never throws.
  virtual void unprovision() noexcept {}

  std::string path(const std::string& rel) const;  // run_dir/rel
  bool host_used(size_t h) const;                  // some member runs there
  void set_ready_hint(std::string hint) { ready_hint_ = std::move(hint); }
  // The host index of a server party ("n1", "s2"); npos when it is none.
  size_t party_host(const std::string& party) const;

  const std::string backend_;
  const ClusterSetup setup_;
  std::vector<RemoteHost> hosts_;
  std::atomic<bool> stop_requested_{false};  // set by stop() before it takes mu_
  mutable std::mutex mu_;

 private:
  struct Member {
    MemberAddress addr;                       // name, role, advertised ports, admin endpoint
    size_t host = 0;
    std::map<std::string, int> planned;       // port label -> port (0: drawn free)
    std::map<std::string, Endpoint> listen;   // where it binds
    std::string dir;                          // its folder on its host
    std::string log;                          // its log on its host
    std::string log_copy;                     // the run's nodes/<name>.log
    int pid = -1;
    bool killed = false;
    bool paused = false;
    int respawns = 0;                         // starts again after a taken port
    ClockSetting clock;                       // what its clock file holds (the harness is its only writer)
    uint64_t clock_generation = 0;            // the file's generation word (cluster/clock_shim.h)
  };

  void start_locked();
  void stop_locked() noexcept;
  std::string remote_dir(size_t h) const;
  std::string shim_on(size_t h, bool power) const;
  void place_ports(Member& m, bool first);
  MemberContext context_of(const Member& m) const;
  void setup_host(size_t h);
  // Writes the member's configuration files (the spec's files()) again, in place: a member started again on other
  // ports at the cluster's start reads them.
  void rewrite_files(const Member& m);
  void teardown_host(size_t h) noexcept;
  void start_member(Member& m);
  // Waits until m answers; a member that exited because a port drawn free was taken is started again on others.
  void wait_ready(Member& m, std::chrono::milliseconds timeout);
  void kill_member(Member& m);
  void check_node(size_t n) const;
  std::string log_tail(const Member& m, int lines = 5) const;  // its log's last lines ("" when unreadable)
  void write_clock_locked(size_t n, const ClockSetting& s);
  int64_t host_clock_delta_locked(size_t h);
  size_t node_index(const std::string& party) const;
  int client_slot(const std::string& party) const;
  bool clock_shim_on() const;
  bool power_shim_on() const;
  std::vector<Endpoint> upstreams_of(const Member& m) const;  // what the proxy forwards to for m
  void refresh_infos();

  // PeerLinks (SplitNetwork's server side): the peer network.
  void require_running() const override;
  void cut_peers(const std::string& a, const std::string& b) override;
  void heal_peers(const std::string& a, const std::string& b) override;
  void heal_all_peers() override;
  void delay_peers(const std::string& a, const std::string& b, std::chrono::milliseconds delay,
                   std::chrono::milliseconds jitter) override;
  void cut_peers_many(const LinkPairs& pairs) override;
  void heal_peers_many(const LinkPairs& pairs) override;
  void delay_peers_many(const std::vector<LinkDelay>& delays) override;

  const ServerRun run_;
  const Server* const server_;
  const std::string run_id_;
  Abilities abilities_;
  std::string ready_hint_;
  std::unique_ptr<PeerNetwork> network_;
  std::vector<Member> members_;  // nodes first, then Sentinels
  // The drawn ports' reservations (cluster/port_reservation.h), held until stop.
  std::vector<PortReservation> port_reservations_;
  std::mt19937_64 port_rng_{std::random_device{}()};
  std::vector<NodeInfo> nodes_;
  std::vector<NodeInfo> sentinels_;
  std::vector<bool> host_dir_made_;
  std::map<size_t, int64_t> clock_delta_ns_;  // host -> its clock minus ours, once measured
  std::unique_ptr<FaultProxy> proxy_;
  ProxyLinks client_links_;
  SplitNetwork links_;  // client links through proxy_, server links through the peer network
  std::unique_ptr<Primary> primary_;
  std::unique_ptr<KeyHolders> key_holders_;
  bool started_ = false;
  bool stopped_ = false;
};

// The local backend: every member a process of this machine on loopback ports drawn free, its folder and log in
// the run's nodes/, the peer network the fault proxy's shared links. No root, Docker or sshd.
class LoopbackCluster final : public ServerCluster {
 public:
  LoopbackCluster(ServerRun server, ClusterSetup setup);
  ~LoopbackCluster() override;
};

// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it back, close).
int free_loopback_port();

}  // namespace lockcheck
