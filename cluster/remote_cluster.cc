#include "cluster/remote_cluster.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <boost/filesystem.hpp>

#include "cluster/clock_shim.h"
#include "cluster/power_loss.h"
#include "cluster/fault_proxy.h"
#include "cluster/redis_cluster_form.h"
#include "cluster/replicated_ready.h"
#include "core/party.h"
#include "sys/redis_conn.h"

namespace lockcheck {

namespace fs = boost::filesystem;
using std::chrono::milliseconds;

// ---------------------------------------------------------------------------------------------------------
// The seam's helpers (cluster/remote.h)

std::string remote_trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

std::vector<std::string> remote_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) {
    line = remote_trim(line);
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

std::string remote_failure(const Remote& r, const std::vector<std::string>& argv, const RemoteCall& call,
                           const CommandResult& result) {
  const std::string err = remote_trim(result.err);
  return r.where() + ": `" + describe_argv(argv) + "` " +
         (result.timed_out ? "did not finish within " + std::to_string(call.timeout.count()) + " ms"
                           : "failed (exit " + std::to_string(result.exit_code) + ")") +
         (err.empty() ? "" : ": " + err);
}

std::string remote_check(const Remote& r, const std::vector<std::string>& argv, const RemoteCall& call,
                         const std::string& prefix) {
  CommandResult result = r.exec(argv, call);
  if (!result.ok()) throw ClusterError(prefix + ": " + remote_failure(r, argv, call, result));
  return result.out;
}

bool remote_try(const Remote& r, const std::vector<std::string>& argv, const RemoteCall& call, std::string* err) {
  CommandResult result = r.exec(argv, call);
  if (result.ok()) return true;
  if (err) *err = remote_failure(r, argv, call, result);
  return false;
}

CommandResult LocalRemote::exec(const std::vector<std::string>& argv, const RemoteCall& call) const {
  CommandOptions o;
  o.timeout = call.timeout;
  o.stdin_data = call.input;
  o.own_process_group = true;  // as the other transports: a teardown outlives a terminal's Ctrl-C
  try {
    return run_command(argv, o);
  } catch (const std::exception& e) {
    throw ClusterError(where() + ": cannot run " + (argv.empty() ? std::string("nothing") : argv[0]) + ": " +
                       e.what());
  }
}

void LocalRemote::upload(const std::string& local, const std::string& remote, milliseconds) const {
  boost::system::error_code ec;
  if (fs::exists(remote, ec)) throw ClusterError(where() + ": cannot upload to " + remote + ": it exists");
  std::error_code sec;
  std::filesystem::copy(local, remote, std::filesystem::copy_options::recursive, sec);
  if (sec) throw ClusterError(where() + ": cannot copy " + local + " to " + remote + ": " + sec.message());
}

void LocalRemote::download(const std::string& remote, const std::string& local, milliseconds) const {
  std::error_code sec;
  std::filesystem::copy_file(remote, local, std::filesystem::copy_options::overwrite_existing, sec);
  if (sec) throw ClusterError(where() + ": cannot copy " + remote + " to " + local + ": " + sec.message());
}

std::string wait_until_ready(const std::function<std::string()>& why, milliseconds timeout,
                             const std::function<bool()>& stopping, const std::string& stopping_message,
                             milliseconds every) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::string reason = why();
    if (reason.empty() || std::chrono::steady_clock::now() >= deadline) return reason;
    if (stopping()) throw ClusterError(stopping_message);
    std::this_thread::sleep_for(every);
  }
}

namespace {

// Remote helper scripts: constant text run as `sh -c SCRIPT sh ARGS...`; everything variable is a quoted
// positional argument, never spliced into the script.
// Start: $1 pid file, $2 a file to remove first ("" none), then the command. The server daemonizes; waits (at
// most 10 s) for its pid file and prints the pid.
constexpr const char* kRemoteStartScript =
    "p=$1; shift; [ -n \"$1\" ] && rm -f -- \"$1\"; shift; rm -f -- \"$p\"; \"$@\" || exit $?; i=0; "
    "while [ ! -s \"$p\" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; cat -- \"$p\"";
// Kill: $1 pid. SIGKILL (a stopped process gets SIGCONT too), then waits (at most 10 s) until the process is
// gone or a zombie, so that its port is free. Fails when it is still there. Alive = its status could be read
// and is not Z: a process reaped between two looks is gone, not alive (one read, never `-e` then a read).
constexpr const char* kRemoteKillScript =
    "kill -s CONT \"$1\" 2>/dev/null; kill -s KILL \"$1\" 2>/dev/null; "
    "alive() { st=$(grep '^State:' /proc/$1/status 2>/dev/null); [ -n \"$st\" ] && case \"$st\" in *Z*) return 1;; "
    "esac; }; i=0; while alive \"$1\" && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; ! alive \"$1\"";
// Signal: $1 the signal, $2 the pid (the shell's kill: hosts need no /bin/kill).
constexpr const char* kRemoteSignalScript = "kill -s \"$1\" \"$2\"";
// Teardown: $1 the run's iptables chain ("" none), $2 the interface with our root qdisc ("" none), then the
// pids of the host's servers (SIGCONT then SIGKILL; one already gone is fine). Fails when a removal failed.
constexpr const char* kRemoteTeardownScript =
    "c=$1; dev=$2; shift 2; ok=0; if [ $# -gt 0 ]; then kill -s CONT \"$@\" 2>/dev/null; kill -s KILL \"$@\" "
    "2>/dev/null; fi; "
    "if [ -n \"$c\" ]; then iptables -D INPUT -j \"$c\"; iptables -D OUTPUT -j \"$c\"; "
    "iptables -F \"$c\" && iptables -X \"$c\" || ok=1; fi; "
    "if [ -n \"$dev\" ]; then tc qdisc del dev \"$dev\" root || ok=1; fi; exit $ok";

std::string remote_hostname() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// Redis: data nodes and Sentinels, from one config file each in the server's folder.
class RedisKind final : public RemoteServerKind {
 public:
  RedisKind(const RunConfig& config, const RemoteClusterOptions& options) : config_(config), options_(options) {}

  std::vector<std::pair<std::string, std::string>> files(const ServerSlot& s, const std::vector<ServerSlot>& servers,
                                                         const std::vector<RemoteHost>& hosts) const override {
    std::ostringstream conf;
    conf << "port " << s.info.endpoint.port << "\nbind 0.0.0.0\nprotected-mode no\ndaemonize yes\n"
         << "pidfile " << s.dir << "/" << pid_file() << "\nlogfile " << s.dir << "/" << log_file() << "\ndir "
         << s.dir << "/data\n";
    const Endpoint& master = servers[0].info.endpoint;
    if (s.info.role == NodeRole::kSentinel) {
      conf << sentinel_monitor_conf(master, options_.sentinels / 2 + 1, options_.sentinel_timings,
                                    config_.sentinel_parallel_syncs);
    } else {
      conf << node_conf(config_.persistence);
      if (config_.topology == Topology::kCluster) {
        // The node's view of the cluster (nodes.conf) lives beside the data dir, not in it: a restarted node
        // rejoins as itself, with its data gone. The bus is on port + 10000, Redis Cluster's default.
        conf << "cluster-enabled yes\ncluster-config-file " << s.dir << "/nodes.conf\ncluster-node-timeout "
             << options_.cluster_node_timeout_ms << "\ncluster-port " << s.info.endpoint.port + 10000
             << "\ncluster-replica-validity-factor 0\ncluster-announce-ip " << hosts[s.host].address << "\n";
      } else if (s.info.role == NodeRole::kReplica) {
        conf << "replicaof " << master.host << " " << master.port << "\n";
      }
    }
    return {{"redis.conf", conf.str()}};
  }

  std::vector<std::string> start_command(const ServerSlot& s, const std::vector<ServerSlot>&,
                                         const std::vector<RemoteHost>& hosts,
                                         const std::string& shim) const override {
    const RemoteHost& host = hosts[s.host];
    const bool sentinel = s.info.role == NodeRole::kSentinel;
    const auto program = host.programs.find(sentinel ? "redis-sentinel" : "redis-server");
    std::vector<std::string> argv = {"env", "LD_PRELOAD=" + shim, std::string(kClockFileEnv) + "=" + s.dir + "/clock",
                                     program == host.programs.end() ? (sentinel ? "redis-sentinel" : "redis-server")
                                                                    : program->second,
                                     s.dir + "/redis.conf"};
    if (sentinel) argv.push_back("--sentinel");
    return argv;
  }
  std::string pid_file() const override { return "redis.pid"; }
  std::string log_file() const override { return "redis.log"; }
  std::string wipe_before_start(const ServerSlot& s) const override {
    return config_.persistence == Persistence::kNone && s.info.role != NodeRole::kSentinel ? s.dir + "/data/dump.rdb"
                                                                                           : "";
  }
  std::string ready_error(const Endpoint& ep) const override { return ping_error(ep, milliseconds(300)); }

  void after_start(const std::vector<ServerSlot>& servers, milliseconds timeout, const std::string& hint,
                   const std::function<bool()>& stopping) const override {
    if (config_.topology == Topology::kReplicated) {
      std::vector<ReadyParty> replicas, sentinels;
      for (const auto& s : servers) {
        if (s.info.role == NodeRole::kReplica) replicas.push_back({s.info.name, s.info.endpoint});
        if (s.info.role == NodeRole::kSentinel) sentinels.push_back({s.info.name, s.info.endpoint});
      }
      wait_replicated_ready(replicas, sentinels, timeout, "cluster", hint, stopping);
    }
    if (config_.topology == Topology::kCluster) {
      // Every node's address is its host's: its cluster address (announced) and where the harness asks it.
      // Server <-> server cuts drop by address, so they cut the data port and the bus alike.
      std::vector<ClusterFormNode> form;
      for (const auto& s : servers) {
        if (s.info.role != NodeRole::kSentinel) {
          form.push_back({s.info.name, s.info.endpoint, s.info.endpoint, s.info.endpoint.port + 10000});
        }
      }
      form_redis_cluster(form, timeout, hint, stopping);
    }
  }

 private:
  const RunConfig config_;
  const RemoteClusterOptions options_;
};

}  // namespace

std::unique_ptr<RemoteServerKind> redis_remote_kind(const RunConfig& config, const RemoteClusterOptions& options) {
  return std::make_unique<RedisKind>(config, options);
}

// ---------------------------------------------------------------------------------------------------------
// Construction and placement

RemoteCluster::RemoteCluster(std::string backend, const RunConfig& config, std::string run_dir,
                             RemoteClusterOptions options, std::string run_id, std::string chain)
    : backend_(std::move(backend)),
      config_(config),
      run_dir_(std::move(run_dir)),
      options_(std::move(options)),
      run_id_(std::move(run_id)),
      chain_(std::move(chain)),
      kind_(config_.server == ServerKind::kEtcd        ? etcd_remote_kind(config_, options_)
            : config_.server == ServerKind::kZooKeeper ? zookeeper_remote_kind(config_, options_)
                                                       : redis_remote_kind(config_, options_)) {}

RemoteCluster::~RemoteCluster() { stop(); }

void RemoteCluster::place(std::vector<RemoteHost> hosts, const std::vector<Placement>& nodes,
                          const std::vector<Placement>& sentinels) {
  hosts_ = std::move(hosts);
  host_state_.assign(hosts_.size(), HostState{});
  const bool redis_cluster = config_.topology == Topology::kCluster;
  auto add = [&](const Placement& p, const std::string& name, NodeRole role) {
    ServerSlot s;
    s.info.name = name;
    s.info.role = role;
    s.info.endpoint.port = p.port;
    s.info.log_path = path("nodes/" + name + ".log");
    s.host = p.host;
    servers_.push_back(s);
    host_state_[p.host].used = true;
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const bool replica =
        (config_.topology == Topology::kReplicated && i > 0) || (redis_cluster && i >= nodes.size() / 2);
    add(nodes[i], Party::node(i).name(), replica ? NodeRole::kReplica : NodeRole::kMaster);
  }
  for (size_t s = 0; s < sentinels.size(); ++s) add(sentinels[s], Party::sentinel(s).name(), NodeRole::kSentinel);
  refresh_endpoints();
  links_ = SplitNetwork(backend_, nodes_.size(), sentinels_.size(), config_.concurrency, this);
}

void RemoteCluster::refresh_endpoints() {
  nodes_.clear();
  sentinels_.clear();
  for (auto& s : servers_) {
    s.info.endpoint.host = hosts_[s.host].address;
    s.dir = remote_dir(s.host) + "/" + s.info.name;
    (s.info.role == NodeRole::kSentinel ? sentinels_ : nodes_).push_back(s.info);
  }
}

std::string RemoteCluster::path(const std::string& rel) const { return (fs::path(run_dir_) / rel).string(); }

std::string RemoteCluster::remote_dir(size_t h) const {
  std::string w = hosts_[h].work_dir;
  while (w.size() > 1 && w.back() == '/') w.pop_back();
  return w + "/lockcheck-" + run_id_;
}

std::string RemoteCluster::shim_on(size_t h) const {
  return hosts_[h].clock_shim.empty() ? remote_dir(h) + "/libclockshim.so" : hosts_[h].clock_shim;
}

std::string RemoteCluster::preload_on(size_t h) const {
  if (!needs_power_shim(config_)) return shim_on(h);
  return preload_list({shim_on(h), hosts_[h].power_shim.empty() ? remote_dir(h) + "/libpowershim.so"
                                                                 : hosts_[h].power_shim});
}

// ---------------------------------------------------------------------------------------------------------
// Remote calls

std::string RemoteCluster::check(size_t h, const std::vector<std::string>& argv, bool privileged,
                                 const std::string& input) const {
  return remote_check(*hosts_[h].remote, argv, RemoteCall{privileged, input, options_.call_timeout}, backend_);
}

bool RemoteCluster::attempt(size_t h, const std::vector<std::string>& argv, bool privileged, std::string* err,
                            const std::string& input) const {
  return remote_try(*hosts_[h].remote, argv, RemoteCall{privileged, input, options_.call_timeout}, err);
}

// ---------------------------------------------------------------------------------------------------------
// start / stop

void RemoteCluster::start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_ || stopped_) throw ClusterError(backend_ + ": start() called twice, or after stop()");
  started_ = true;
  try {
    start_locked();
  } catch (const ClusterError&) {
    stop_locked();
    throw;
  } catch (const std::exception& e) {
    stop_locked();
    throw ClusterError(backend_ + ": " + e.what());
  }
}

void RemoteCluster::start_locked() {
  fs::create_directories(path("nodes"));
  provision();
  refresh_endpoints();
  std::vector<size_t> used;
  for (size_t h = 0; h < hosts_.size(); ++h) {
    if (host_state_[h].used) used.push_back(h);
  }
  for_each_at_once(used, [this](size_t h) { setup_host(h); });
  fs::remove_all(path("stage"));  // the staging copies (the shim is large)
  // The nodes at once over the hosts, then the Sentinels (they monitor a master that answers).
  std::vector<size_t> nodes, sentinels;
  for (size_t i = 0; i < servers_.size(); ++i) (i < nodes_.size() ? nodes : sentinels).push_back(i);
  for_each_at_once(nodes, [this](size_t i) { start_server(servers_[i]); });
  for (size_t i : nodes) wait_ready(servers_[i]);
  for_each_at_once(sentinels, [this](size_t i) { start_server(servers_[i]); });
  for (size_t i : sentinels) wait_ready(servers_[i]);
  kind_->after_start(servers_, options_.ready_timeout, "see the node logs (fetched into " + path("nodes") + " at stop)",
                     [this] { return stop_requested_.load(); });
  proxy_ = std::make_unique<FaultProxy>(config_.seed);
  links_.set_proxy(proxy_.get());
  client_endpoints_.assign(static_cast<size_t>(std::max(config_.concurrency, 0)), {});
  for (size_t slot = 0; slot < client_endpoints_.size(); ++slot) {
    for (const auto& node : nodes_) {
      client_endpoints_[slot].push_back(proxy_->add_link(Party::client(slot).name(), node.name, node.endpoint));
    }
  }
}

// Uploads the host's folder: owner, the clock shim (unless the host has it), per server its files, clock file
// and an empty data dir.
void RemoteCluster::setup_host(size_t h) {
  const RemoteHost& host = hosts_[h];
  const std::string stage = path("stage/" + host.name + "/lockcheck-" + run_id_);
  fs::remove_all(stage);
  fs::create_directories(stage);
  std::ofstream(stage + "/owner") << ::getpid() << " " << remote_hostname() << "\n";
  if (host.clock_shim.empty()) {
    const std::string shim = options_.clock_shim.empty() ? clock_shim_library() : options_.clock_shim;
    if (!fs::exists(shim)) {
      throw ClusterError(backend_ + ": clock shim not found: " + shim +
                         " (build lockcheck_clockshim or set LOCKCHECK_CLOCK_SHIM)");
    }
    fs::copy_file(shim, stage + "/libclockshim.so");
  }
  if (needs_power_shim(config_) && host.power_shim.empty()) {
    if (!fs::exists(power_shim_library())) {
      throw ClusterError(backend_ + ": power shim not found: " + power_shim_library() +
                         " (build lockcheck_powershim or set LOCKCHECK_POWER_SHIM)");
    }
    fs::copy_file(power_shim_library(), stage + "/libpowershim.so");
  }
  if (!options_.etcd_upload.empty() && config_.server == ServerKind::kEtcd) {
    fs::copy_file(options_.etcd_upload, stage + "/etcd");  // keeps its mode: the copy on the host runs
  }
  for (const ServerSlot& s : servers_) {
    if (s.host != h) continue;
    const std::string d = stage + "/" + s.info.name;
    fs::create_directories(d + "/data");
    std::ofstream(d + "/data/.keep");
    create_clock_file(d + "/clock");
    for (const auto& [name, text] : kind_->files(s, servers_, hosts_)) {
      std::ofstream f(d + "/" + name, std::ios::trunc);
      f << text;
      if (!f) throw ClusterError(backend_ + ": cannot write " + d + "/" + name);
    }
  }
  if (!host.work_dir_exists) check(h, {"mkdir", "-p", "--", host.work_dir});
  host_state_[h].dir_made = true;
  host.remote->upload(stage, remote_dir(h), options_.call_timeout);
}

void RemoteCluster::start_server(ServerSlot& s) {
  const RemoteHost& host = hosts_[s.host];
  std::vector<std::string> argv = {"sh", "-c", kRemoteStartScript, "sh", s.dir + "/" + kind_->pid_file(),
                                   kind_->wipe_before_start(s)};
  // The power shim's journal (power-loss runs): one more `env` in front of the kind's command.
  if (needs_power_shim(config_)) {
    argv.insert(argv.end(), {"env", std::string(kPowerJournalEnv) + "=" + s.dir + "/" + kPowerJournalName});
  }
  for (auto& a : kind_->start_command(s, servers_, hosts_, preload_on(s.host))) argv.push_back(std::move(a));
  const RemoteCall call{false, "", options_.call_timeout};
  CommandResult r = host.remote->exec(argv, call);
  const std::string out = remote_trim(r.out);
  if (!r.ok() || out.empty() || !std::all_of(out.begin(), out.end(), ::isdigit)) {
    CommandResult log = host.remote->exec({"tail", "-n", "5", s.dir + "/" + kind_->log_file()}, call);
    throw ClusterError(backend_ + ": " + s.info.name + " on " + host.name + " did not start (" +
                       (r.timed_out ? std::string("timed out") : "exit " + std::to_string(r.exit_code)) + ": " +
                       remote_trim(r.err) + "); its log ends: " + remote_trim(log.out));
  }
  s.pid = std::atoi(out.c_str());
  s.killed = false;
  s.paused = false;
}

void RemoteCluster::wait_ready(const ServerSlot& s) const {
  const std::string what = (s.info.role == NodeRole::kSentinel ? "Sentinel " : "node ") + s.info.name;
  const auto deadline = std::chrono::steady_clock::now() + options_.ready_timeout;
  std::string err;
  while (true) {
    err = kind_->ready_error(s.info.endpoint);
    if (err.empty()) return;
    if (std::chrono::steady_clock::now() >= deadline) break;
    if (stop_requested_) throw ClusterError(backend_ + ": stopping (while waiting for " + what + ")");
    std::this_thread::sleep_for(milliseconds(50));
  }
  const RemoteHost& host = hosts_[s.host];
  CommandResult log =
      host.remote->exec({"tail", "-n", "5", s.dir + "/" + kind_->log_file()}, {false, "", options_.call_timeout});
  const std::string printed = remote_trim(log.out);
  throw ClusterError(backend_ + ": " + what + " (" + s.info.endpoint.str() + ") did not answer within " +
                     std::to_string(options_.ready_timeout.count()) + " ms: " + err +
                     (printed.empty() ? "" : "; its log ends: " + printed) + ready_hint_);
}

void RemoteCluster::stop() noexcept {
  stop_requested_ = true;  // cuts short a wait for readiness in another thread, which holds the mutex
  std::lock_guard<std::mutex> lock(mu_);
  stop_locked();
}

void RemoteCluster::stop_locked() noexcept {
  if (stopped_) return;
  stopped_ = true;
  if (proxy_) proxy_->stop();
  if (!started_) return;
  std::vector<size_t> made;
  for (size_t h = 0; h < hosts_.size(); ++h) {
    if (host_state_[h].used && host_state_[h].dir_made) made.push_back(h);
  }
  try {
    for_each_at_once(made, [this](size_t h) { teardown_host(h); });
  } catch (const std::exception& e) {
    std::cerr << "lockcheck: " << backend_ << " teardown: " << e.what() << "\n";
  }
  unprovision();
}

// One call: SIGCONT + SIGKILL to the host's servers, the chain and the qdisc removed; then the logs fetched
// and the folder removed. An ephemeral host (it goes away with the run) only has its logs fetched.
void RemoteCluster::teardown_host(size_t h) noexcept {
  auto warn = [this](const std::string& m) { std::cerr << "lockcheck: " << backend_ << " teardown: " << m << "\n"; };
  try {
    const RemoteHost& host = hosts_[h];
    HostState& st = host_state_[h];
    std::string err;
    if (!host.ephemeral) {
      std::vector<std::string> argv = {"sh", "-c", kRemoteTeardownScript, "sh", st.chain_made ? chain_ : "",
                                       st.netem_dev};
      for (const auto& s : servers_) {
        if (s.host == h && s.pid > 0) argv.push_back(std::to_string(s.pid));
      }
      if (!attempt(h, argv, true, &err)) warn(err);
    }
    for (const auto& s : servers_) {
      if (s.host != h) continue;
      try {
        host.remote->download(s.dir + "/" + kind_->log_file(), s.info.log_path, options_.call_timeout);
      } catch (const std::exception& e) {
        warn("cannot fetch the log of " + s.info.name + ": " + e.what());
      }
    }
    if (!host.ephemeral && !attempt(h, {"rm", "-rf", "--", remote_dir(h)}, false, &err)) warn(err);
  } catch (const std::exception& e) {
    warn(e.what());
  }
}

// ---------------------------------------------------------------------------------------------------------
// Node faults

void RemoteCluster::check_node(size_t n) const {
  if (n >= nodes_.size()) {
    throw ClusterError(backend_ + ": no node " + std::to_string(n) + " (there are " + std::to_string(nodes_.size()) +
                       ")");
  }
  if (!started_ || stopped_) throw ClusterError(backend_ + ": not running (start() first, or stopped)");
}

void RemoteCluster::signal_server(const ServerSlot& s, const char* sig) {
  check(s.host, {"sh", "-c", kRemoteSignalScript, "sh", sig, std::to_string(s.pid)});
}

void RemoteCluster::kill_server(ServerSlot& s) {
  check(s.host, {"sh", "-c", kRemoteKillScript, "sh", std::to_string(s.pid)});
  s.killed = true;
  s.paused = false;
}

void RemoteCluster::kill(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  if (servers_[n].killed) return;
  kill_server(servers_[n]);
  // The clients' proxy links to it refuse from now on, as the dead node's port does (a definite failure, not
  // a connection accepted and then closed).
  if (proxy_) proxy_->upstream_down(nodes_[n].endpoint);
}

void RemoteCluster::restart(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  ServerSlot& s = servers_[n];
  if (!s.killed) kill_server(s);
  start_server(s);
  wait_ready(s);
  if (proxy_) proxy_->upstream_up(nodes_[n].endpoint);
}

void RemoteCluster::pause(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  ServerSlot& s = servers_[n];
  if (s.killed) throw ClusterError(backend_ + ": cannot pause " + s.info.name + ": it is down (killed)");
  if (s.paused) return;
  signal_server(s, "STOP");
  s.paused = true;
}

void RemoteCluster::resume(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  ServerSlot& s = servers_[n];
  if (!s.paused) return;
  signal_server(s, "CONT");
  s.paused = false;
}

// Two writes, in order, each a write() of its own: the slot not in force, then the generation that puts it in
// force (the shim reads either setting whole, even if dd copies byte by byte: cluster/clockshim.c).
constexpr const char* kClockWriteScript =
    "dd of=\"$1\" bs=24 count=1 iflag=fullblock oflag=seek_bytes seek=\"$2\" conv=notrunc status=none && "
    "dd of=\"$1\" bs=8 count=1 iflag=fullblock conv=notrunc status=none";

void RemoteCluster::write_clock_locked(size_t n, const ClockSetting& setting) {
  ServerSlot& s = servers_[n];
  const std::string refusal = kind_->clock_refusal(s);
  if (!refusal.empty()) throw ClusterError(refusal);
  const uint64_t g = s.clock_generation + 1;
  check(s.host, {"sh", "-c", kClockWriteScript, "sh", s.dir + "/clock", std::to_string(clock_slot_offset(g))}, false,
        clock_slot_bytes(setting) + clock_generation_bytes(g));  // native byte order: the hosts share it (x86_64)
  s.clock = setting;
  s.clock_generation = g;
}

int64_t RemoteCluster::host_clock_delta_locked(size_t h) {
  if (hosts_[h].shares_harness_clock) return 0;
  HostState& st = host_state_[h];
  if (!st.clock_delta_ns) {
    const int64_t before = real_wall_ns();
    const std::string out = remote_trim(check(h, {"date", "+%s%N"}));
    const int64_t after = real_wall_ns();
    if (out.empty() || !std::all_of(out.begin(), out.end(), ::isdigit)) {
      throw ClusterError(backend_ + ": cannot read the clock of " + hosts_[h].name + " (`date +%s%N` said '" + out +
                         "'): a clock rate needs the host's time to start from");
    }
    st.clock_delta_ns = std::stoll(out) - (before + (after - before) / 2);
  }
  return *st.clock_delta_ns;
}

std::optional<std::chrono::nanoseconds> RemoteCluster::clock_shift(size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (n >= nodes_.size()) return std::nullopt;
  const ServerSlot& s = servers_[n];
  const auto& delta = host_state_[s.host].clock_delta_ns;
  if (s.clock.rate_ppb != 0 && !hosts_[s.host].shares_harness_clock && !delta) return std::nullopt;
  return std::chrono::nanoseconds(s.clock.shift_at(real_wall_ns() + (delta ? *delta : 0)));
}

void RemoteCluster::set_clock_offset(size_t n, std::chrono::nanoseconds offset) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  write_clock_locked(n, ClockSetting{static_cast<int64_t>(offset.count()), 0, 0});
}

void RemoteCluster::set_clock_rate(size_t n, int64_t rate_ppb) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  const ServerSlot& s = servers_[n];
  const int64_t host_now = real_wall_ns() + host_clock_delta_locked(s.host);
  write_clock_locked(n, clock_with_rate(s.clock, host_now, rate_ppb));
}

namespace {

// Power loss, read: $1 the server's data folder, $2 its journal. Prints the folder's physical path (the journal's
// paths are physical), then the journal; fails when there is no journal (the shim never ran).
constexpr const char* kRemotePowerReadScript = "cd \"$1\" && pwd -P && cat -- \"$2\"";
// Power loss, stat: one line per path argument, "<dev> <ino> <size>" of a regular file, else "-".
constexpr const char* kRemotePowerStatScript =
    "for f; do s=$(stat -c '%F|%d %i %s' -- \"$f\" 2>/dev/null); case \"$s\" in 'regular file|'*|'regular empty "
    "file|'*) echo \"${s#*|}\";; *) echo -;; esac; done";
// Power loss, apply: $1 the journal, then triples T PATH LEN (truncate) or R PATH - (remove); empties the journal.
constexpr const char* kRemotePowerApplyScript =
    "j=$1; shift; while [ $# -ge 3 ]; do if [ \"$1\" = T ]; then truncate -s \"$3\" -- \"$2\" || exit 1; else rm "
    "-f -- \"$2\" || exit 1; fi; shift 3; done; : > \"$j\"";

}  // namespace

PowerLossReport RemoteCluster::power_loss(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  if (!needs_power_shim(config_)) {
    throw ClusterError(backend_ + ": power loss needs the power shim, preloaded only in runs with --nemesis "
                       "power-loss");
  }
  ServerSlot& s = servers_[n];
  if (!s.killed) {
    kill_server(s);
    if (proxy_) proxy_->upstream_down(nodes_[n].endpoint);
  }
  const std::string journal = s.dir + "/" + kPowerJournalName;
  const std::string read =
      check(s.host, {"sh", "-c", kRemotePowerReadScript, "sh", s.dir + "/data", journal}, false, "");
  const auto newline = read.find('\n');
  const std::string scope = remote_trim(read.substr(0, newline));
  const PowerJournal j = PowerJournal::parse(newline == std::string::npos ? "" : read.substr(newline + 1));
  const std::vector<std::string> paths = j.paths(scope);
  std::map<std::string, std::optional<FileStat>> now;
  if (!paths.empty()) {
    std::vector<std::string> argv = {"sh", "-c", kRemotePowerStatScript, "sh"};
    argv.insert(argv.end(), paths.begin(), paths.end());
    const std::vector<std::string> lines = remote_lines(check(s.host, argv, false, ""));
    if (lines.size() != paths.size()) {
      throw ClusterError(backend_ + ": power loss on " + s.info.name + ": stat answered " +
                         std::to_string(lines.size()) + " lines for " + std::to_string(paths.size()) + " files");
    }
    for (size_t i = 0; i < paths.size(); ++i) {
      std::istringstream in(lines[i]);
      FileStat st;
      if (lines[i] != "-" && (in >> st.dev >> st.ino >> st.size)) now[paths[i]] = st;
      else now[paths[i]] = std::nullopt;
    }
  }
  std::vector<std::string> not_undone;
  const auto actions = j.plan(now, scope, &not_undone);
  std::vector<std::string> argv = {"sh", "-c", kRemotePowerApplyScript, "sh", journal};
  for (const auto& a : actions) {
    const bool remove = a.kind == PowerLossAction::Kind::kRemove;
    argv.insert(argv.end(), {remove ? "R" : "T", a.path, remove ? "-" : std::to_string(a.keep)});
  }
  check(s.host, argv, false, "");
  if (j.malformed() > 0) {
    not_undone.push_back(std::to_string(j.malformed()) + " journal line(s) could not be read (torn or garbled)");
  }
  return power_loss_report(actions, std::move(not_undone), j.records(), scope);
}

std::optional<size_t> RemoteCluster::leader() const {
  std::vector<Endpoint> running;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_ || stopped_) return std::nullopt;
    for (size_t n = 0; n < nodes_.size(); ++n) {
      if (!servers_[n].killed) running.push_back(nodes_[n].endpoint);
    }
  }
  return kind_->leader(running, nodes_.size());  // not under the mutex: it asks the servers
}

bool RemoteCluster::is_running(size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  return n < nodes_.size() && started_ && !stopped_ && !servers_[n].killed;
}

// ---------------------------------------------------------------------------------------------------------
// Network

size_t RemoteCluster::node_index(const std::string& party) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].name == party) return i;
  }
  return std::string::npos;
}

size_t RemoteCluster::party_host(const std::string& party) const {
  for (const auto& s : servers_) {
    if (s.info.name == party) return s.host;
  }
  return std::string::npos;
}

int RemoteCluster::client_slot(const std::string& party) const {
  const auto p = Party::parse(party);
  if (!p || !p->is_client() || p->index >= static_cast<size_t>(config_.concurrency)) return -1;
  return static_cast<int>(p->index);
}

Endpoint RemoteCluster::endpoint_for(const std::string& party, size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  if (node_index(party) != std::string::npos) return nodes_[n].endpoint;
  int slot = client_slot(party);
  if (slot >= 0 && static_cast<size_t>(slot) < client_endpoints_.size()) return client_endpoints_[slot][n];
  throw ClusterError(backend_ + ": unknown party '" + party + "' (nodes n1..n" + std::to_string(nodes_.size()) +
                     ", client slots c0..c" + std::to_string(config_.concurrency - 1) + ")");
}

// Makes host h's chain drop exactly the peers it is cut from. The chain (and its jumps) is made on first use;
// iptables-restore --noflush with the chain declared replaces its rules in one step.
void RemoteCluster::sync_rules(size_t h) {
  HostState& st = host_state_[h];
  if (!hosts_[h].can_filter) return;
  std::set<std::string> want;
  for (const auto& [a, b] : cuts_) {
    size_t ha = party_host(a), hb = party_host(b);
    if (ha == h) want.insert(hosts_[hb].address);
    if (hb == h) want.insert(hosts_[ha].address);
  }
  if (st.chain_made && want == st.dropped) return;
  if (!st.chain_made && want.empty()) return;
  std::string table = "*filter\n:" + chain_ + " - [0:0]\n";
  if (!st.chain_made) table += "-I INPUT 1 -j " + chain_ + "\n-I OUTPUT 1 -j " + chain_ + "\n";
  for (const auto& ip : want)
    table += "-A " + chain_ + " -s " + ip + "/32 -j DROP\n-A " + chain_ + " -d " + ip + "/32 -j DROP\n";
  table += "COMMIT\n";
  const bool first = !st.chain_made;
  st.chain_made = true;  // a failed first load may have made it half: teardown removes what is there
  try {
    check(h, {"iptables-restore", "--noflush"}, true, table);
  } catch (const ClusterError&) {
    if (first) st.chain_made = false;
    throw;
  }
  st.dropped = want;
}

std::string RemoteCluster::iptables_rules(size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  return check(servers_[n].host, {"iptables", "-S"}, true);
}

// The party dispatch is SplitNetwork's (cluster/split_network.h): client links go to this machine's fault proxy,
// links between nodes and Sentinels come back here as peer links: iptables rules (and tc netem) on their hosts.
void RemoteCluster::cut(const std::string& a, const std::string& b) { links_.cut(a, b); }
void RemoteCluster::heal(const std::string& a, const std::string& b) { links_.heal(a, b); }
void RemoteCluster::heal_all() { links_.heal_all(); }
void RemoteCluster::cut_links(const LinkPairs& pairs) { links_.cut_many(pairs); }
void RemoteCluster::heal_links(const LinkPairs& pairs) { links_.heal_many(pairs); }
void RemoteCluster::set_delays(const std::vector<LinkDelay>& delays) { links_.set_delays(delays); }
void RemoteCluster::set_delay(const std::string& a, const std::string& b, milliseconds delay, milliseconds jitter) {
  links_.set_delay(a, b, delay, jitter);
}

void RemoteCluster::require_running() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_ || stopped_) throw ClusterError(backend_ + ": not running");
}

void RemoteCluster::cut_peers(const std::string& a, const std::string& b) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t ha = party_host(a), hb = party_host(b);
  if (ha == hb) {
    throw ClusterError(backend_ + ": cannot cut " + a + " from " + b + ": both run on host " + hosts_[ha].name +
                       " (give the hosts file as many hosts as nodes)");
  }
  if (!hosts_[ha].can_filter && !hosts_[hb].can_filter) {
    throw ClusterError(backend_ + ": cutting " + a + " from " + b + " is not supported: neither " + hosts_[ha].name +
                       " nor " + hosts_[hb].name + " can load iptables rules");
  }
  cuts_.insert(std::minmax(a, b));
  for_each_at_once(std::vector<size_t>{ha, hb}, [this](size_t h) { sync_rules(h); });  // both at once
}

void RemoteCluster::heal_peers(const std::string& a, const std::string& b) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t ha = party_host(a), hb = party_host(b);
  cuts_.erase(std::minmax(a, b));
  node_delays_.erase(std::minmax(a, b));
  for_each_at_once(std::vector<size_t>{ha, hb}, [this](size_t h) {
    sync_rules(h);
    sync_delays(h);
  });
}

void RemoteCluster::heal_all_peers() {
  std::lock_guard<std::mutex> lock(mu_);
  cuts_.clear();
  node_delays_.clear();
  std::vector<size_t> all;
  for (size_t h = 0; h < hosts_.size(); ++h) {
    if (host_state_[h].used) all.push_back(h);
  }
  for_each_at_once(all, [this](size_t h) {
    sync_rules(h);
    sync_delays(h);
  });
}

// Host h delays what it sends to its delayed peers: a prio root qdisc whose 4th band is a netem, and one u32
// filter per peer address into that band. One delay per host (the largest asked for). No delays: no qdisc.
void RemoteCluster::sync_delays(size_t h) {
  HostState& st = host_state_[h];
  std::map<std::string, std::pair<int64_t, int64_t>> want;
  for (const auto& [pair, d] : node_delays_) {
    size_t ha = party_host(pair.first), hb = party_host(pair.second);
    if (ha == h) want[hosts_[hb].address] = d;
    if (hb == h) want[hosts_[ha].address] = d;
  }
  if (want == st.delays) return;
  const std::string& name = hosts_[h].name;
  if (!st.netem_dev.empty()) {
    check(h, {"tc", "qdisc", "del", "dev", st.netem_dev, "root"}, true);
    st.netem_dev.clear();
    st.delays.clear();
  }
  if (want.empty()) return;
  // The interface towards the peers (all on one network here): from the route to the first.
  std::string route = check(h, {"ip", "-o", "route", "get", want.begin()->first});
  std::istringstream words(route);
  std::string w, dev;
  while (words >> w) {
    if (w == "dev" && (words >> dev)) break;
  }
  if (dev.empty()) throw ClusterError(backend_ + ": no route from " + name + " to " + want.begin()->first);
  int64_t delay = 0, jitter = 0;
  for (const auto& [ip, d] : want) delay = std::max(delay, d.first), jitter = std::max(jitter, d.second);
  std::string err;
  if (!attempt(h, {"tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "prio", "bands", "4", "priomap", "1", "2",
                   "2",  "2",     "1",   "2",   "0", "0",    "1",      "1",  "1",    "1",     "1", "1",       "1", "1"},
               true, &err)) {
    throw ClusterError(backend_ + ": delay not available on " + name + " (tc prio: " + err + ")");
  }
  st.netem_dev = dev;
  std::vector<std::string> netem = {"tc",  "qdisc",  "add", "dev",   dev,     "parent",
                                    "1:4", "handle", "40:", "netem", "delay", std::to_string(delay) + "ms"};
  if (jitter > 0) netem.push_back(std::to_string(jitter) + "ms");
  if (!attempt(h, netem, true, &err)) {
    attempt(h, {"tc", "qdisc", "del", "dev", dev, "root"}, true);
    st.netem_dev.clear();
    throw ClusterError(backend_ + ": delay not available on " + name + " (tc netem: " + err + ")");
  }
  for (const auto& [ip, d] : want) {
    check(h,
          {"tc", "filter", "add", "dev", dev, "parent", "1:0", "protocol", "ip", "prio", "1", "u32", "match", "ip",
           "dst", ip + "/32", "flowid", "1:4"},
          true);
  }
  st.delays = want;
}

void RemoteCluster::delay_peers(const std::string& a, const std::string& b, milliseconds delay, milliseconds jitter) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t ha = party_host(a), hb = party_host(b);
  const bool remove = delay.count() == 0 && jitter.count() == 0;
  if (remove && !node_delays_.count(std::minmax(a, b))) return;  // nothing to remove
  if (ha == hb) throw ClusterError(backend_ + ": cannot delay " + a + " and " + b + ": both run on one host");
  for (size_t h : {ha, hb}) {
    if (!remove && !hosts_[h].can_delay) {
      throw ClusterError(backend_ + ": delay not available on " + hosts_[h].name + " (between " + a + " and " + b +
                         ": it needs tc netem there)");
    }
  }
  if (remove) {
    node_delays_.erase(std::minmax(a, b));
  } else {
    node_delays_[std::minmax(a, b)] = {delay.count(), jitter.count()};
  }
  std::string error;
  for (size_t h : {ha, hb}) {
    try {
      sync_delays(h);
    } catch (const ClusterError& e) {
      error = e.what();
    }
  }
  if (!error.empty()) {
    node_delays_.erase(std::minmax(a, b));
    throw ClusterError(error);
  }
}

}  // namespace lockcheck
