#include "cluster/etcd_cluster.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/filesystem.hpp>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "cluster/etcd_common.h"
#include "cluster/local_cluster.h"
#include "cluster/server_builds.h"
#include "core/assert.h"

namespace fs = boost::filesystem;

namespace lockcheck {

namespace {

// The inode of the IPv4 TCP socket whose local end is source, from /proc/net/tcp; 0 when none.
unsigned long etcd_socket_inode(const Endpoint& source) {
  in_addr a{};
  if (::inet_pton(AF_INET, source.host.c_str(), &a) != 1) return 0;
  char want[32];
  // /proc/net/tcp prints the address as the 32-bit word in host order, and the port in hex.
  std::snprintf(want, sizeof want, "%08X:%04X", static_cast<unsigned>(a.s_addr), static_cast<unsigned>(source.port));
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout;
    unsigned long inode = 0;
    if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode))
      continue;
    if (local == want) return inode;
  }
  return 0;
}

// True when process pid has the socket with that inode open.
bool etcd_pid_holds_socket(pid_t pid, unsigned long inode) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return false;
  const std::string want = "socket:[" + std::to_string(inode) + "]";
  bool found = false;
  char target[64];
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string link = dir + "/" + e->d_name;
    const ssize_t len = ::readlink(link.c_str(), target, sizeof target - 1);
    if (len <= 0) continue;
    target[len] = '\0';
    if (want == target) {
      found = true;
      break;
    }
  }
  ::closedir(d);
  return found;
}

}  // namespace

EtcdClusterOptions EtcdClusterOptions::from(const RunConfig& c, const std::string& run_dir) {
  EtcdClusterOptions o;
  o.nodes = c.nodes;
  o.nodes_dir = run_dir + "/nodes";
  o.seed = c.seed;
  const ServerBuild build = resolve_server_build(c);  // --server-version (ConfigError when it is not here)
  o.etcd = build.server;
  o.etcdctl = build.ctl;
  return o;
}

EtcdCluster::EtcdCluster(EtcdClusterOptions opts) : opts_(std::move(opts)) {
  if (opts_.nodes < 1) throw ClusterError("an etcd cluster needs at least one member");
  if (opts_.nodes > 15) throw ClusterError("at most 15 etcd members");
  for (int i = 0; i < opts_.nodes; ++i) {
    NodeInfo info;
    info.name = "n" + std::to_string(i + 1);
    info.role = NodeRole::kMaster;  // a member; which one leads changes: leader()
    info.log_path = opts_.nodes_dir + "/" + info.name + ".log";
    nodes_.push_back(info);
    data_dirs_.push_back(fs::absolute(opts_.nodes_dir + "/" + info.name).string());
  }
  procs_.resize(nodes_.size());
  paused_.assign(nodes_.size(), false);
  pids_.assign(nodes_.size(), -1);
  peer_listen_.resize(nodes_.size());
  peer_advertise_.resize(nodes_.size());
  member_ids_.assign(nodes_.size(), 0);
  respawns_.assign(nodes_.size(), 0);
}

EtcdCluster::~EtcdCluster() { stop(); }

std::vector<std::string> EtcdCluster::argv_for(size_t n) const {
  std::vector<std::string> names;
  for (const auto& node : nodes_) names.push_back(node.name);
  EtcdMemberArgs a;
  a.etcd = opts_.etcd;
  a.name = nodes_[n].name;
  a.data_dir = data_dirs_[n] + "/data";
  a.client_listen = a.client_advertise = nodes_[n].listen;
  a.peer_listen = peer_listen_[n];
  a.peer_advertise = peer_advertise_[n];
  a.initial_cluster = etcd_initial_cluster(names, peer_advertise_);
  a.seed = opts_.seed;
  a.heartbeat_ms = opts_.heartbeat_ms;
  a.election_ms = opts_.election_ms;
  return etcd_member_argv(a);
}

void EtcdCluster::spawn(size_t n) {
  ProcessSpec spec;
  spec.argv = argv_for(n);
  spec.stdout_path = nodes_[n].log_path;
  spec.stderr_path = "=stdout";
  try {
    procs_[n] = std::make_unique<ChildProcess>(spec);
  } catch (const SpawnError& e) {
    throw ClusterError("cannot start etcd member " + nodes_[n].name + ": " + e.what());
  }
  paused_[n] = false;
  {
    std::lock_guard<std::mutex> lock(pids_mu_);
    pids_[n] = procs_[n]->pid();
  }
}

void EtcdCluster::place_ports(size_t n) {
  const bool first = peer_advertise_[n].port == 0;
  nodes_[n].listen = Endpoint{"127.0.0.1", free_loopback_port()};
  nodes_[n].endpoint = nodes_[n].listen;  // the harness's own queries go direct
  do {
    peer_listen_[n] = Endpoint{"127.0.0.1", free_loopback_port()};
  } while (peer_listen_[n].port == nodes_[n].listen.port);
  if (!proxy_) {
    peer_advertise_[n] = peer_listen_[n];
    return;
  }
  try {
    if (first) {
      peer_advertise_[n] = proxy_->add_shared_link(nodes_[n].name, peer_listen_[n], "peer");
    } else {
      proxy_->set_upstream("*peer", nodes_[n].name, peer_listen_[n]);
    }
  } catch (const std::exception& e) {
    throw ClusterError("cannot open the shared proxy link to " + nodes_[n].name + "'s peer port: " + e.what());
  }
}

bool EtcdCluster::log_says_port_taken(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("address already in use") != std::string::npos) return true;
  }
  return false;
}

void EtcdCluster::wait_until_ready() {
  const auto deadline = std::chrono::steady_clock::now() + opts_.start_timeout;
  std::string why = "no answer yet";
  while (std::chrono::steady_clock::now() < deadline) {
    for (size_t n = 0; n < nodes_.size(); ++n) {
      if (procs_[n]->running()) continue;
      // A port drawn free can be taken before etcd binds it (another run starting at the same time): the
      // member's peer URL is its proxy link, so it can start again on other ports, twice at most.
      if (proxy_ && respawns_[n] < 2 && log_says_port_taken(nodes_[n].log_path)) {
        ++respawns_[n];
        place_ports(n);
        spawn(n);
        continue;
      }
      throw ClusterError("etcd member " + nodes_[n].name + " exited at start; see " + nodes_[n].log_path);
    }
    std::vector<Endpoint> all;
    for (const auto& n : nodes_) all.push_back(n.listen);
    why = etcd_ready_error(opts_.etcdctl, all, opts_.query_timeout, &member_ids_);
    if (why.empty()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  throw ClusterError("the etcd cluster was not ready within " + std::to_string(opts_.start_timeout.count()) +
                     " ms (" + why + "); see the logs under " + opts_.nodes_dir);
}

void EtcdCluster::start() {
  if (!find_program(opts_.etcd)) {
    throw ClusterError("etcd binary not found: '" + opts_.etcd + "' (--server etcd needs Debian's etcd-server package)");
  }
  if (!find_program(opts_.etcdctl)) {
    throw ClusterError("etcdctl not found: '" + opts_.etcdctl +
                       "' (--server etcd asks it whether the cluster is ready: Debian's etcd-client package)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (opts_.use_proxy && !proxy_) {
    try {
      proxy_ = std::make_unique<FaultProxy>(opts_.seed);
      proxy_->set_source_classifier([this](const Endpoint& remote) { return member_owning(remote); });
    } catch (const std::exception& e) {
      throw ClusterError(std::string("cannot start the fault proxy: ") + e.what());
    }
  }
  boost::system::error_code ec;
  fs::create_directories(opts_.nodes_dir, ec);
  if (ec) throw ClusterError("cannot create " + opts_.nodes_dir + ": " + ec.message());
  try {
    // Ports first: every member's --initial-cluster names every peer URL.
    for (size_t n = 0; n < nodes_.size(); ++n) {
      fs::create_directories(data_dirs_[n], ec);
      if (ec) throw ClusterError("cannot create " + data_dirs_[n] + ": " + ec.message());
      place_ports(n);
    }
    for (size_t n = 0; n < nodes_.size(); ++n) spawn(n);
    wait_until_ready();
  } catch (...) {
    for (auto& p : procs_) p.reset();
    std::lock_guard<std::mutex> pids_lock(pids_mu_);
    pids_.assign(nodes_.size(), -1);
    throw;
  }
}

void EtcdCluster::stop() noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t n = 0; n < procs_.size(); ++n) {
    if (procs_[n]) procs_[n]->kill_and_reap();
    procs_[n].reset();
    paused_[n] = false;
  }
  {
    std::lock_guard<std::mutex> pids_lock(pids_mu_);
    pids_.assign(nodes_.size(), -1);
  }
  if (!opts_.keep_data) {
    for (const auto& d : data_dirs_) {
      boost::system::error_code ignored;
      fs::remove_all(d + "/data", ignored);
    }
  }
  links_.reset(proxy_);
}

std::optional<size_t> EtcdCluster::leader() const {
  std::vector<Endpoint> up;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (is_running(n)) up.push_back(nodes_[n].listen);
  }
  return etcd_majority_leader(opts_.etcdctl, up, member_ids_, nodes_.size(), opts_.query_timeout);
}

void EtcdCluster::kill(size_t n) {
  LOCKCHECK_ASSERT(n < nodes_.size(), "node " + std::to_string(n) + " of " + std::to_string(nodes_.size()));
  std::lock_guard<std::mutex> lock(mu_);
  if (procs_.at(n)) procs_[n]->kill_and_reap();
  procs_[n].reset();
  paused_[n] = false;
  {
    std::lock_guard<std::mutex> pids_lock(pids_mu_);
    pids_[n] = -1;
  }
  if (proxy_) {
    proxy_->upstream_down(nodes_[n].listen);
    proxy_->upstream_down(peer_listen_[n]);
  }
}

void EtcdCluster::restart(size_t n) {
  LOCKCHECK_ASSERT(n < nodes_.size(), "node " + std::to_string(n) + " of " + std::to_string(nodes_.size()));
  std::lock_guard<std::mutex> lock(mu_);
  if (procs_.at(n) && procs_[n]->running()) {
    if (paused_[n]) procs_[n]->signal(SIGCONT);
    paused_[n] = false;
    return;  // already up
  }
  procs_[n].reset();
  spawn(n);
  const auto deadline = std::chrono::steady_clock::now() + opts_.restart_timeout;
  while (!etcd_port_accepts(nodes_[n].listen, std::chrono::milliseconds(100))) {
    if (!procs_[n]->running() || std::chrono::steady_clock::now() > deadline) {
      const bool exited = !procs_[n]->running();
      procs_[n].reset();
      throw ClusterError("etcd member " + nodes_[n].name + (exited ? " exited at restart" : " did not listen within " +
                         std::to_string(opts_.restart_timeout.count()) + " ms of its restart") + "; see " +
                         nodes_[n].log_path);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (proxy_) {
    proxy_->upstream_up(nodes_[n].listen);
    proxy_->upstream_up(peer_listen_[n]);
  }
}

void EtcdCluster::pause(size_t n) {
  LOCKCHECK_ASSERT(n < nodes_.size(), "node " + std::to_string(n) + " of " + std::to_string(nodes_.size()));
  std::lock_guard<std::mutex> lock(mu_);
  if (!procs_.at(n)) throw ClusterError("cannot pause " + nodes_[n].name + ": it is down");
  procs_[n]->signal(SIGSTOP);
  paused_[n] = true;
}

void EtcdCluster::resume(size_t n) {
  LOCKCHECK_ASSERT(n < nodes_.size(), "node " + std::to_string(n) + " of " + std::to_string(nodes_.size()));
  std::lock_guard<std::mutex> lock(mu_);
  if (!procs_.at(n)) return;
  procs_[n]->signal(SIGCONT);
  paused_[n] = false;
}

void EtcdCluster::set_clock_offset(size_t n, std::chrono::nanoseconds) {
  LOCKCHECK_ASSERT(n < nodes_.size(), "node " + std::to_string(n) + " of " + std::to_string(nodes_.size()));
  throw ClusterError(etcd_clock_refusal(nodes_[n].name));
}

bool EtcdCluster::is_running(size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  return procs_.at(n) != nullptr && procs_[n]->running();
}

pid_t EtcdCluster::pid(size_t n) const {
  std::lock_guard<std::mutex> lock(pids_mu_);
  return pids_.at(n);
}

std::string EtcdCluster::member_owning(const Endpoint& source) const {
  std::vector<pid_t> pids;
  {
    std::lock_guard<std::mutex> lock(pids_mu_);
    pids = pids_;
  }
  const unsigned long inode = etcd_socket_inode(source);
  if (inode == 0) return "";
  for (size_t n = 0; n < pids.size(); ++n) {
    if (pids[n] > 0 && etcd_pid_holds_socket(pids[n], inode)) return nodes_[n].name;
  }
  return "";
}

}  // namespace lockcheck
