#include "cluster/local_cluster.h"

#include <functional>
#include "core/assert.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include <boost/filesystem.hpp>
#include <fstream>
#include <map>
#include <thread>

#include "cluster/clock_shim.h"
#include "cluster/power_loss.h"
#include "cluster/redis_cluster_form.h"
#include "cluster/redis_config.h"
#include "cluster/replicated_ready.h"
#include "core/party.h"
#include "sys/redis_conn.h"

namespace fs = boost::filesystem;

namespace lockcheck {

int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw ClusterError("socket: cannot create");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw ClusterError("cannot find a free loopback port");
  }
  int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

LocalClusterOptions LocalClusterOptions::from(const RunConfig& c, const std::string& run_dir) {
  LocalClusterOptions o;
  o.nodes = c.nodes;
  o.topology = c.topology;
  o.persistence = c.persistence;
  o.sentinel_parallel_syncs = c.sentinel_parallel_syncs;
  o.redis_server = c.redis_server;
  o.nodes_dir = run_dir + "/nodes";
  o.seed = c.seed;
  o.use_power_shim = needs_power_shim(c);
  return o;
}

LocalCluster::LocalCluster(LocalClusterOptions opts) : opts_(std::move(opts)) {
  if (opts_.nodes < 1) throw ClusterError("a cluster needs at least one node");
  const bool replicated = opts_.topology == Topology::kReplicated;
  const bool cluster = opts_.topology == Topology::kCluster;
  if (replicated && opts_.nodes < 2) throw ClusterError("the replicated topology needs a master and a replica");
  if (cluster && opts_.nodes < 6)
    throw ClusterError("the cluster topology needs at least 6 nodes (3 masters, 3 replicas)");
  if (opts_.nodes > 254) throw ClusterError("at most 254 nodes (each has a loopback source address of its own)");
  if (replicated && (opts_.sentinels < 1 || opts_.sentinel_quorum < 1 || opts_.sentinel_quorum > opts_.sentinels)) {
    throw ClusterError("the replicated topology needs at least one Sentinel and a quorum between 1 and their number");
  }
  for (int i = 0; i < opts_.nodes; ++i) {
    NodeInfo info;
    info.name = opts_.name_prefix + std::to_string(i + 1);
    info.role = (replicated && i > 0) || (cluster && i >= opts_.nodes / 2) ? NodeRole::kReplica : NodeRole::kMaster;
    info.endpoint = Endpoint{"127.0.0.1", 0};
    info.log_path = opts_.nodes_dir + "/" + info.name + ".log";
    nodes_.push_back(info);
    data_dirs_.push_back(opts_.nodes_dir + "/" + info.name);
  }
  members_.resize(nodes_.size());
  bus_.resize(nodes_.size());
  if (replicated) {
    for (int k = 0; k < opts_.sentinels; ++k) {
      NodeInfo info;
      info.name = Party::sentinel(k).name();
      info.role = NodeRole::kSentinel;
      info.endpoint = Endpoint{"127.0.0.1", 0};
      info.log_path = opts_.nodes_dir + "/" + info.name + ".log";
      sentinels_.push_back(info);
      sentinel_dirs_.push_back(opts_.nodes_dir + "/" + info.name);
    }
    sentinel_members_.resize(sentinels_.size());
  }
}

Endpoint LocalCluster::peer_endpoint(const std::string& from, size_t to) const {
  // One address per node for every peer (Sentinel identifies a node by its address and "corrects" a replica
  // whose master address differs from its own): the node's shared proxy link when peer links are proxied, on
  // which the proxy tells `from` apart by its source address.
  (void)from;
  return nodes_.at(to).endpoint;
}

bool LocalCluster::proxied_peers() const { return opts_.use_proxy && opts_.topology != Topology::kIndependent; }

std::string LocalCluster::source_address(const std::string& party) const {
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (nodes_[n].name == party) return "127.0.1." + std::to_string(n + 1);
  }
  for (size_t k = 0; k < sentinels_.size(); ++k) {
    if (sentinels_[k].name == party) return "127.0.2." + std::to_string(k + 1);
  }
  throw ClusterError("no source address for party " + party);
}

// Where a node or Sentinel listens and by which address the others know it, on (re)trying its start:
// a fresh port of its own; with proxied peers, its shared proxy link (made on the first try) forwards there.
void LocalCluster::place(NodeInfo& info, bool first_try) {
  info.listen = Endpoint{"127.0.0.1", free_loopback_port()};
  if (!proxied_peers()) {
    info.endpoint = info.listen;
    return;
  }
  try {
    if (first_try) {
      proxy_->name_source(source_address(info.name), info.name);
      info.endpoint = proxy_->add_shared_link(info.name, info.listen);
    } else {
      proxy_->set_upstream("*", info.name, info.listen);
    }
  } catch (const std::exception& e) {
    throw ClusterError("cannot open the shared proxy link to " + info.name + ": " + e.what());
  }
}

void LocalCluster::place_bus(size_t n, bool first_try) {
  Bus& b = bus_[n];
  // The bus port must differ from the data port: draw again on a clash.
  do {
    b.listen = Endpoint{"127.0.0.1", free_loopback_port()};
  } while (b.listen.port == nodes_[n].listen.port);
  if (!proxied_peers()) {
    b.endpoint = b.listen;
    return;
  }
  try {
    if (first_try) {
      b.endpoint = proxy_->add_shared_link(nodes_[n].name, b.listen, "bus");
    } else {
      proxy_->set_upstream("*bus", nodes_[n].name, b.listen);
    }
  } catch (const std::exception& e) {
    throw ClusterError("cannot open the shared proxy link to " + nodes_[n].name + "'s cluster bus: " + e.what());
  }
}

void LocalCluster::form_cluster() {
  std::vector<ClusterFormNode> form;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    // Cluster addresses are the shared proxy links when peers are proxied.
    form.push_back({nodes_[n].name, nodes_[n].own_endpoint(), nodes_[n].endpoint, bus_[n].endpoint.port});
  }
  form_redis_cluster(form, opts_.ready_timeout, "see the logs under " + opts_.nodes_dir);
}

// The lines of a node's or Sentinel's config that route its links to the others through the fault proxy:
// it connects from its own source address (so that the proxy knows who it is) and announces its shared link.
std::string LocalCluster::peer_link_config(const NodeInfo& info, bool sentinel) const {
  if (!proxied_peers()) return "";
  std::string c = "bind-source-addr " + source_address(info.name) + "\n";
  if (sentinel) {
    c += "sentinel announce-ip " + info.endpoint.host + "\n";
    c += "sentinel announce-port " + std::to_string(info.endpoint.port) + "\n";
  } else if (opts_.topology == Topology::kReplicated) {
    c += "replica-announce-ip " + info.endpoint.host + "\n";
    c += "replica-announce-port " + std::to_string(info.endpoint.port) + "\n";
  }
  return c;
}

namespace {

std::string abs_path(const std::string& p) { return fs::absolute(p).string(); }

std::string config_path(const std::string& nodes_dir, const std::string& name) {
  return abs_path(nodes_dir + "/" + name + ".conf");
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) throw ClusterError("cannot write " + path);
}

}  // namespace

void LocalCluster::write_node_config(size_t n) const {
  std::string c;
  c += "# written by lockcheck; Sentinel may rewrite it (CONFIG REWRITE) when it changes this node's role\n";
  c += "port " + std::to_string(nodes_[n].listen.port) + "\n";
  c += "bind 127.0.0.1\n";
  c += "dir " + abs_path(data_dirs_[n]) + "\n";
  c += "logfile " + abs_path(nodes_[n].log_path) + "\n";
  c += "daemonize no\n";
  c += "protected-mode no\n";
  c += node_conf(opts_.persistence);
  c += peer_link_config(nodes_[n], false);
  if (n > 0) {
    const Endpoint master = peer_endpoint(nodes_[n].name, 0);
    c += "replicaof " + master.host + " " + std::to_string(master.port) + "\n";
  }
  write_file(config_path(opts_.nodes_dir, nodes_[n].name), c);
}

void LocalCluster::write_sentinel_config(size_t k) const {
  const Endpoint master = peer_endpoint(sentinels_[k].name, 0);
  std::string c;
  c += "# written by lockcheck; Sentinel rewrites it with what it learns\n";
  c += "port " + std::to_string(sentinels_[k].listen.port) + "\n";
  c += "bind 127.0.0.1\n";
  c += "dir " + abs_path(sentinel_dirs_[k]) + "\n";
  c += "logfile " + abs_path(sentinels_[k].log_path) + "\n";
  c += "daemonize no\n";
  c += "protected-mode no\n";
  c += peer_link_config(sentinels_[k], true);
  c += sentinel_monitor_conf(master, opts_.sentinel_quorum, opts_.sentinel_timings, opts_.sentinel_parallel_syncs);
  write_file(config_path(opts_.nodes_dir, sentinels_[k].name), c);
}

LocalCluster::~LocalCluster() { stop(); }

std::vector<std::string> LocalCluster::argv_for(size_t n) const {
  if (opts_.topology == Topology::kReplicated)
    return {opts_.redis_server, config_path(opts_.nodes_dir, nodes_[n].name)};
  std::vector<std::string> cluster_args;
  if (opts_.topology == Topology::kCluster) {
    // The node's view of the cluster (nodes.conf) stays in its data dir: a restarted node rejoins as itself.
    cluster_args = {
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        abs_path(data_dirs_[n] + "/nodes.conf"),
        "--cluster-node-timeout",
        std::to_string(opts_.cluster_node_timeout.count()),
        "--cluster-port",
        std::to_string(bus_[n].listen.port),
        "--cluster-replica-validity-factor",
        "0",  // a replica may always take over (no data-age limit)
    };
    if (proxied_peers()) {
      cluster_args.insert(cluster_args.end(), {
                                                  "--bind-source-addr",
                                                  source_address(nodes_[n].name),
                                                  "--cluster-announce-ip",
                                                  nodes_[n].endpoint.host,
                                                  "--cluster-announce-port",
                                                  std::to_string(nodes_[n].endpoint.port),
                                                  "--cluster-announce-bus-port",
                                                  std::to_string(bus_[n].endpoint.port),
                                              });
    }
  }
  std::vector<std::string> argv = {
      opts_.redis_server,
      "--port",
      std::to_string(nodes_[n].listen.port),
      "--bind",
      "127.0.0.1",
      "--dir",
      data_dirs_[n],
      "--logfile",
      fs::absolute(nodes_[n].log_path).string(),
      "--daemonize",
      "no",
      "--protected-mode",
      "no",
  };
  const auto node = node_args(opts_.persistence);
  argv.insert(argv.end(), node.begin(), node.end());
  argv.insert(argv.end(), cluster_args.begin(), cluster_args.end());
  return argv;
}

void LocalCluster::spawn(size_t n) {
  ProcessSpec spec;
  spec.argv = argv_for(n);
  if (opts_.use_clock_shim) {
    // The clock file outlives restarts: a restarted node keeps the clock the nemesis gave it (a host's clock does
    // not reset when a process restarts; the remote backends keep theirs likewise). Only a missing or short file
    // is made anew.
    const std::string clock_file = data_dirs_[n] + "/clock";
    try {
      boost::system::error_code ec;
      const auto size = fs::file_size(clock_file, ec);
      if (ec || size < kClockFileBytes) create_clock_file(clock_file);
    } catch (const std::exception& e) {
      throw ClusterError("cannot create " + clock_file + ": " + e.what());
    }
    spec.env["LD_PRELOAD"] = clock_shim_library();
    spec.env[kClockFileEnv] = fs::absolute(clock_file).string();
  }
  // The power shim (power-loss nemesis): its journal sits beside the clock file and is emptied at each power loss.
  if (opts_.use_power_shim) {
    add_power_shim_env(spec.env, fs::absolute(data_dirs_[n] + "/" + kPowerJournalName).string());
  }
  spec.stdout_path = nodes_[n].log_path;  // anything redis-server prints before its log file is open
  spec.stderr_path = "=stdout";
  members_.start(n, spec, "node " + nodes_[n].name);
  const auto deadline = std::chrono::steady_clock::now() + opts_.start_timeout;
  while (!wait_for_ping(nodes_[n].own_endpoint(), std::chrono::milliseconds(100))) {
    if (!members_.running(n)) {
      members_.kill(n);
      throw ClusterError("node " + nodes_[n].name + " exited at start; see " + nodes_[n].log_path);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      members_.kill(n);
      throw ClusterError("node " + nodes_[n].name + " did not answer PING within " +
                         std::to_string(opts_.start_timeout.count()) + " ms; see " + nodes_[n].log_path);
    }
  }
}

void LocalCluster::spawn_sentinel(size_t k) {
  ProcessSpec spec;
  spec.argv = {opts_.redis_server, config_path(opts_.nodes_dir, sentinels_[k].name), "--sentinel"};
  spec.stdout_path = sentinels_[k].log_path;
  spec.stderr_path = "=stdout";
  sentinel_members_.start(k, spec, "Sentinel " + sentinels_[k].name);
  const auto deadline = std::chrono::steady_clock::now() + opts_.start_timeout;
  while (!wait_for_ping(sentinels_[k].own_endpoint(), std::chrono::milliseconds(100))) {
    if (!sentinel_members_.running(k) || std::chrono::steady_clock::now() > deadline) {
      sentinel_members_.kill(k);
      throw ClusterError("Sentinel " + sentinels_[k].name + " did not start; see " + sentinels_[k].log_path);
    }
  }
}

void LocalCluster::wait_until_replicated_ready() {
  std::vector<ReadyParty> replicas, sentinels;
  for (size_t n = 1; n < nodes_.size(); ++n) replicas.push_back({nodes_[n].name, nodes_[n].own_endpoint()});
  for (const auto& s : sentinels_) sentinels.push_back({s.name, s.own_endpoint()});
  wait_replicated_ready(replicas, sentinels, opts_.ready_timeout, "replicated cluster",
                        "see the logs under " + opts_.nodes_dir);
}

void LocalCluster::start() {
  if (!find_program(opts_.redis_server)) {
    throw ClusterError("redis-server binary not found: '" + opts_.redis_server +
                       "' (install Debian's redis-server package or pass --redis-server PATH)");
  }
  if (opts_.use_power_shim && !fs::exists(power_shim_library())) {
    throw ClusterError("power shim not found: " + power_shim_library() +
                       " (build lockcheck_powershim or set LOCKCHECK_POWER_SHIM)");
  }
  if (opts_.use_clock_shim && !fs::exists(clock_shim_library())) {
    throw ClusterError("clock shim not found: " + clock_shim_library() +
                       " (build lockcheck_clockshim or set LOCKCHECK_CLOCK_SHIM)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (opts_.use_proxy && !proxy_) {
    try {
      proxy_ = std::make_unique<FaultProxy>(opts_.seed);
    } catch (const std::exception& e) {
      throw ClusterError(std::string("cannot start the fault proxy: ") + e.what());
    }
  }
  boost::system::error_code ec;
  fs::create_directories(opts_.nodes_dir, ec);
  if (ec) throw ClusterError("cannot create " + opts_.nodes_dir + ": " + ec.message());
  try {
    for (size_t n = 0; n < nodes_.size(); ++n) {
      fs::create_directories(data_dirs_[n], ec);
      if (ec) throw ClusterError("cannot create " + data_dirs_[n] + ": " + ec.message());
      // A port can be taken between free_loopback_port() and the bind; try a few.
      for (int attempt = 0;; ++attempt) {
        place(nodes_[n], attempt == 0);
        if (opts_.topology == Topology::kCluster) place_bus(n, attempt == 0);
        try {
          if (opts_.topology == Topology::kReplicated) write_node_config(n);
          spawn(n);
          break;
        } catch (const ClusterError&) {
          if (attempt >= 2) throw;
        }
      }
    }
    for (size_t k = 0; k < sentinels_.size(); ++k) {
      fs::create_directories(sentinel_dirs_[k], ec);
      if (ec) throw ClusterError("cannot create " + sentinel_dirs_[k] + ": " + ec.message());
      for (int attempt = 0;; ++attempt) {
        place(sentinels_[k], attempt == 0);
        try {
          write_sentinel_config(k);
          spawn_sentinel(k);
          break;
        } catch (const ClusterError&) {
          if (attempt >= 2) throw;
        }
      }
    }
    if (opts_.topology == Topology::kReplicated) wait_until_replicated_ready();
    if (opts_.topology == Topology::kCluster) form_cluster();
  } catch (...) {
    sentinel_members_.kill_all();
    members_.kill_all();
    throw;
  }
}

void LocalCluster::stop() noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  // Sentinels first, so that they do not start a failover while the nodes go down.
  sentinel_members_.kill_all();
  members_.kill_all();
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (opts_.use_clock_shim) {
      try {
        write_clock_offset(data_dirs_[n] + "/clock", std::chrono::nanoseconds(0));
      } catch (const std::exception&) {
        // No file: the node never started.
      }
    }
  }
  links_.reset(proxy_);
}

void LocalCluster::kill(size_t n) {
  LOCKCHECK_ASSERT(n < nodes_.size(), "node " + std::to_string(n) + " of " + std::to_string(nodes_.size()));
  std::lock_guard<std::mutex> lock(mu_);
  members_.kill(n);
  // Every proxy link to it refuses from now on, as the dead node would (not accept-then-close).
  if (proxy_) proxy_->upstream_down(nodes_[n].own_endpoint());
}

PowerLossReport LocalCluster::power_loss(size_t n) {
  LOCKCHECK_ASSERT(n < nodes_.size(), "node " + std::to_string(n) + " of " + std::to_string(nodes_.size()));
  if (!opts_.use_power_shim) throw ClusterError("power loss needs the power shim (use_power_shim is off)");
  kill(n);
  std::lock_guard<std::mutex> lock(mu_);
  // The node is dead (reaped): its journal is complete.
  return apply_power_loss_here(fs::absolute(data_dirs_[n] + "/" + kPowerJournalName).string(),
                               fs::canonical(data_dirs_[n]).string());
}

void LocalCluster::restart(size_t n) {
  LOCKCHECK_ASSERT(n < nodes_.size(), "node " + std::to_string(n) + " of " + std::to_string(nodes_.size()));
  std::lock_guard<std::mutex> lock(mu_);
  if (members_.continue_if_running(n)) return;  // already up
  spawn(n);
  if (proxy_) proxy_->upstream_up(nodes_[n].own_endpoint());
}

void LocalCluster::pause(size_t n) {
  LOCKCHECK_ASSERT(n < nodes_.size(), "node " + std::to_string(n) + " of " + std::to_string(nodes_.size()));
  std::lock_guard<std::mutex> lock(mu_);
  members_.pause(n, nodes_[n].name);
}

void LocalCluster::resume(size_t n) {
  LOCKCHECK_ASSERT(n < nodes_.size(), "node " + std::to_string(n) + " of " + std::to_string(nodes_.size()));
  std::lock_guard<std::mutex> lock(mu_);
  members_.resume(n);
}

void LocalCluster::write_node_clock(size_t n, const char* what,
                                    const std::function<void(const std::string&)>& write) {
  LOCKCHECK_ASSERT(n < nodes_.size(), "node " + std::to_string(n) + " of " + std::to_string(nodes_.size()));
  if (!opts_.use_clock_shim) throw ClusterError("clock faults need the clock shim (use_clock_shim is off)");
  try {
    write(data_dirs_.at(n) + "/clock");
  } catch (const std::exception& e) {
    throw ClusterError(std::string("cannot set ") + what + " of " + nodes_[n].name + ": " + e.what());
  }
}

void LocalCluster::set_clock_rate(size_t n, int64_t rate_ppb) {
  write_node_clock(n, "the clock rate", [&](const std::string& file) { write_clock_rate(file, rate_ppb); });
}

std::optional<std::chrono::nanoseconds> LocalCluster::clock_shift(size_t n) const {
  if (!opts_.use_clock_shim || n >= data_dirs_.size()) return std::nullopt;
  try {
    return read_clock_offset(data_dirs_[n] + "/clock");
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void LocalCluster::set_clock_offset(size_t n, std::chrono::nanoseconds offset) {
  write_node_clock(n, "the clock", [&](const std::string& file) { write_clock_offset(file, offset); });
}

bool LocalCluster::is_running(size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  return members_.running(n);
}

pid_t LocalCluster::pid(size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  return members_.pid(n);
}

pid_t LocalCluster::sentinel_pid(size_t k) const {
  std::lock_guard<std::mutex> lock(mu_);
  return sentinel_members_.pid(k);
}

}  // namespace lockcheck
