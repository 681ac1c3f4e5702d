#include "docker/docker_cluster.h"

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include <boost/filesystem.hpp>

#include "cluster/clock_shim.h"
#include "cluster/fault_proxy.h"
#include "cluster/redis_cluster_form.h"
#include "cluster/redis_config.h"
#include "cluster/replicated_ready.h"
#include "core/party.h"
#include "docker/node_image.h"
#include "sys/redis_conn.h"

namespace lockcheck {

namespace fs = boost::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

constexpr int kRedisPort = 6379;
constexpr int kSentinelPort = 26379;
constexpr int kClusterBusPort = 16379;  // the data port + 10000, Redis Cluster's default
constexpr const char* kContainerClusterDir = "/lockcheck/cluster";
constexpr const char* kContainerLog = "/var/log/redis.log";
constexpr const char* kContainerClockFile = "/lockcheck/clock";
constexpr const char* kContainerConfDir = "/lockcheck/conf";
constexpr auto kQuickTimeout = seconds(20);  // inspect, ls, logs, pause, kill

void sleep_ms(int ms) { std::this_thread::sleep_for(milliseconds(ms)); }

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n')) ++i;
  return s.substr(i);
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line);
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

// Docker names allow [a-zA-Z0-9][a-zA-Z0-9_.-]*; keep the run folder's name readable within that.
std::string sanitise(const std::string& s) {
  std::string out;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a'), ok = true;
    out += ok ? c : '-';
  }
  while (!out.empty() && !((out[0] >= 'a' && out[0] <= 'z') || (out[0] >= '0' && out[0] <= '9'))) out.erase(0, 1);
  if (out.size() > 40) out.resize(40);
  return out.empty() ? "run" : out;
}

std::string random_suffix() {
  std::random_device rd;  // only names the run's objects uniquely; the run's randomness comes from its seed
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rd()));
  return std::string(buf, 6);
}

std::string hostname() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// IPv4 a.b.c.d as a number and back.
bool parse_ipv4(const std::string& s, uint32_t* out) {
  unsigned a, b, c, d;
  char tail;
  if (std::sscanf(s.c_str(), "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) != 4) return false;
  if (a > 255 || b > 255 || c > 255 || d > 255) return false;
  *out = (a << 24) | (b << 16) | (c << 8) | d;
  return true;
}
std::string ipv4_str(uint32_t v) {
  return std::to_string(v >> 24) + "." + std::to_string((v >> 16) & 255) + "." + std::to_string((v >> 8) & 255) + "." +
         std::to_string(v & 255);
}

// A `--mount` value for a bind mount. docker parses it as one CSV record, so a field holding a comma or a
// quote (a run folder may be called anything) is quoted the CSV way.
std::string bind_mount(const std::string& src, const std::string& dst, bool readonly) {
  auto field = [](const std::string& f) {
    if (f.find_first_of(",\"") == std::string::npos) return f;
    std::string q = "\"";
    for (char c : f) q += (c == '"') ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  return "type=bind," + field("src=" + fs::absolute(src).string()) + "," + field("dst=" + dst) +
         (readonly ? ",readonly" : "");
}

void touch(const std::string& path) {
  std::ofstream f(path, std::ios::app);
  if (!f) throw ClusterError("cannot create " + path);
}

}  // namespace

DockerCluster::DockerCluster(const RunConfig& config, std::string run_dir, DockerClusterOptions options)
    : config_(config), run_dir_(std::move(run_dir)), options_(std::move(options)), cli_(options_.docker_path) {
  if (config_.nodes < 1 || config_.nodes > 80) throw ClusterError("docker cluster: --nodes must be 1..80");
  if (config_.topology == Topology::kReplicated && options_.sentinels < 1) {
    throw ClusterError("docker cluster: the replicated topology needs at least one Sentinel");
  }
  const bool redis_cluster = config_.topology == Topology::kCluster;
  if (redis_cluster && config_.nodes < 6) {
    throw ClusterError("docker cluster: the cluster topology needs at least 6 nodes (3 masters, 3 replicas)");
  }
  fs::path dir(run_dir_);
  std::string base = dir.filename().string();
  if (base.empty() || base == ".") base = dir.parent_path().filename().string();
  base = sanitise(base);
  if (base.rfind("lockcheck-", 0) == 0 && base.size() > 10) base = base.substr(10);  // names start with it
  run_id_ = base + "-" + random_suffix();
  network_ = "lockcheck-" + run_id_;
  for (int i = 0; i < config_.nodes; ++i) {
    NodeInfo info;
    info.name = Party::node(i).name();
    const bool replica =
        (config_.topology == Topology::kReplicated && i > 0) || (redis_cluster && i >= config_.nodes / 2);
    info.role = replica ? NodeRole::kReplica : NodeRole::kMaster;
    info.endpoint.port = kRedisPort;
    info.log_path = path("nodes/" + info.name + ".log");
    nodes_.push_back(info);
  }
  if (config_.topology == Topology::kReplicated) {
    for (int s = 0; s < options_.sentinels; ++s) {
      NodeInfo info;
      info.name = Party::sentinel(s).name();
      info.role = NodeRole::kSentinel;
      info.endpoint.port = kSentinelPort;
      info.log_path = path("nodes/" + info.name + ".log");
      sentinels_.push_back(info);
    }
  }
  state_.resize(nodes_.size());
  links_ = SplitNetwork("docker cluster", nodes_.size(), sentinels_.size(), config_.concurrency, this);
}

DockerCluster::~DockerCluster() { stop(); }

std::string DockerCluster::path(const std::string& rel) const { return (fs::path(run_dir_) / rel).string(); }

std::string DockerCluster::container_name(const std::string& node_name) const {
  return "lockcheck-" + run_id_ + "-" + node_name;
}

std::vector<std::string> DockerCluster::labels() const {
  return {"--label", std::string(kDockerRunLabel) + "=" + run_id_,
          "--label", std::string(kDockerOwnerPidLabel) + "=" + std::to_string(::getpid()),
          "--label", std::string(kDockerOwnerHostLabel) + "=" + hostname()};
}

// ---------------------------------------------------------------------------------------------------------
// start / stop

void DockerCluster::start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_ || stopped_) throw ClusterError("docker cluster: start() called twice, or after stop()");
  started_ = true;
  try {
    start_locked();
  } catch (const ClusterError&) {
    stop_locked();
    throw;
  } catch (const std::exception& e) {
    stop_locked();
    throw ClusterError(std::string("docker cluster: ") + e.what());
  }
}

void DockerCluster::start_locked() {
  cli_.require_engine();
  engine_answered_ = true;

  if (!options_.image.empty()) {
    image_tag_ = options_.image;
    CommandResult have = cli_.run({"image", "inspect", "--format", "{{.Id}}", image_tag_}, kQuickTimeout);
    if (!have.ok()) {
      throw ClusterError("docker cluster: the engine has no image " + image_tag_ + " (nothing is pulled)");
    }
  } else {
    docker::NodeImageInputs inputs;
    inputs.redis_server = options_.redis_server;
    inputs.iptables = options_.iptables;
    inputs.clock_shim = options_.clock_shim.empty() ? clock_shim_library() : options_.clock_shim;
    image_tag_ = docker::ensure_node_image(cli_, inputs, options_.build_timeout).tag;
  }

  for (const char* d : {"nodes", "docker/clock", "docker/data", "docker/sentinel", "docker/cluster"}) {
    fs::create_directories(path(d));
  }
  create_network();
  // `docker run` costs about a second each here (mostly the storage driver); the engine overlaps them well.
  std::vector<std::future<void>> runs;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    runs.push_back(std::async(std::launch::async, [this, n] { run_data_node(n); }));
  }
  for (size_t s = 0; s < sentinels_.size(); ++s) {
    runs.push_back(std::async(std::launch::async, [this, s] { run_sentinel(s); }));
  }
  std::exception_ptr first_error;
  for (auto& r : runs) {
    try {
      r.get();  // waits for every run, so that teardown sees all that was made
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
  for (const auto& node : nodes_) wait_ready(node.endpoint, "node " + node.name);
  for (const auto& s : sentinels_) wait_ready(s.endpoint, "Sentinel " + s.name);
  if (config_.topology == Topology::kReplicated) wait_replicas_linked();
  if (config_.topology == Topology::kCluster) {
    // Every container has an address of its own on the bridge: it is the node's cluster address (announced)
    // and where the harness asks it; the bus is on the default port. Node <-> node cuts drop by address, so
    // they cut the data port (replication) and the bus (gossip, failure detection, votes) alike.
    std::vector<ClusterFormNode> form;
    for (const auto& node : nodes_) form.push_back({node.name, node.endpoint, node.endpoint, kClusterBusPort});
    form_redis_cluster(form, options_.ready_timeout, "see the logs under " + path("nodes"),
                       [this] { return stop_requested_.load(); });
  }
  open_client_proxies();
}

void DockerCluster::create_network() {
  // Containers need fixed addresses (a restarted node must come back where clients and proxies expect it),
  // and `docker run --ip` works only on a network whose subnet was given explicitly. So: let the engine pick
  // a free subnet (it avoids its other networks and the host's routes), note it, and recreate the network
  // with that subnet pinned. Retried, since another run may take the subnet in between.
  std::string last_error;
  for (int attempt = 0; attempt < 4; ++attempt) {
    std::vector<std::string> create = {"network", "create", "--driver", "bridge"};
    for (const auto& l : labels()) create.push_back(l);
    create.push_back(network_);
    cli_.check(create, options_.engine_timeout);
    std::string ipam;
    try {
      ipam = trim(cli_.check(
          {"network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}} {{.Gateway}};{{end}}", network_},
          kQuickTimeout));
    } catch (...) {
      cli_.run({"network", "rm", network_}, kQuickTimeout);
      throw;
    }
    cli_.check({"network", "rm", network_}, kQuickTimeout);

    std::string subnet, gateway;
    for (const auto& cfg : split_lines(std::string(ipam.begin(), ipam.end()))) {
      std::istringstream in(cfg.substr(0, cfg.find(';')));
      std::string sn, gw;
      in >> sn >> gw;
      if (sn.find(':') == std::string::npos && !sn.empty()) {  // the IPv4 one
        subnet = sn;
        gateway = gw;
        break;
      }
    }
    auto slash = subnet.find('/');
    uint32_t base = 0;
    int prefix = slash == std::string::npos ? -1 : std::atoi(subnet.c_str() + slash + 1);
    if (prefix < 8 || prefix > 24 || !parse_ipv4(subnet.substr(0, slash), &base)) {
      throw ClusterError("docker cluster: the engine gave network " + network_ + " the subnet '" + subnet +
                         "'; need an IPv4 subnet of /24 or larger");
    }
    base &= prefix == 0 ? 0 : ~((1u << (32 - prefix)) - 1);
    uint32_t gw = 0;
    if (gateway.empty() || !parse_ipv4(gateway, &gw)) gw = base + 1;

    std::vector<std::string> pinned = {"network",  "create", "--driver",  "bridge",
                                       "--subnet", subnet,   "--gateway", ipv4_str(gw)};
    for (const auto& l : labels()) pinned.push_back(l);
    pinned.push_back(network_);
    CommandResult r = cli_.run(pinned, options_.engine_timeout);
    if (!r.ok()) {
      last_error = docker::failure_message(pinned, r);
      continue;
    }
    // n1 at .11, n2 at .12, ...; Sentinels at .101 ...: clear of the gateway (.1).
    for (size_t i = 0; i < nodes_.size(); ++i) nodes_[i].endpoint.host = ipv4_str(base + 11 + i);
    for (size_t s = 0; s < sentinels_.size(); ++s) sentinels_[s].endpoint.host = ipv4_str(base + 101 + s);
    return;
  }
  throw ClusterError("docker cluster: cannot create network " + network_ + ": " + last_error);
}

void DockerCluster::run_data_node(size_t n) {
  const NodeInfo& node = nodes_[n];
  touch(node.log_path);
  const std::string clock_file = path("docker/clock/" + node.name);
  create_clock_file(clock_file);

  std::vector<std::string> args = {"run",
                                   "--detach",
                                   "--name",
                                   container_name(node.name),
                                   "--hostname",
                                   node.name,
                                   "--network",
                                   network_,
                                   "--ip",
                                   node.endpoint.host,
                                   "--network-alias",
                                   node.name,
                                   "--cap-add",
                                   "NET_ADMIN",
                                   "--user",
                                   std::to_string(::getuid()) + ":" + std::to_string(::getgid())};
  for (const auto& l : labels()) args.push_back(l);
  args.insert(args.end(), {"--label", "lockcheck.node=" + node.name});
  args.insert(args.end(), {"--mount", bind_mount(node.log_path, kContainerLog, false)});
  args.insert(args.end(), {"--mount", bind_mount(clock_file, kContainerClockFile, true)});
  args.insert(args.end(), {"--env", std::string("LD_PRELOAD=") + docker::kImageClockShim, "--env",
                           std::string(kClockFileEnv) + "=" + kContainerClockFile});
  if (config_.persistence == Persistence::kNone) {
    // A tmpfs is mounted afresh at every container start: a restarted node comes back empty, even as a
    // replica that had written the master's RDB to its dir.
    args.insert(args.end(), {"--tmpfs", "/data:rw,mode=1777"});
  } else {
    const std::string data_dir = path("docker/data/" + node.name);
    fs::create_directories(data_dir);
    args.insert(args.end(), {"--mount", bind_mount(data_dir, "/data", false)});
  }
  const std::string cluster_dir = path("docker/cluster/" + node.name);
  if (config_.topology == Topology::kCluster) {
    // The node's view of the cluster (nodes.conf) lives in a bind mount of its own, not in the data dir (a
    // tmpfs without persistence): a restarted node rejoins as itself, with its data gone.
    fs::create_directories(cluster_dir);
    args.insert(args.end(), {"--mount", bind_mount(cluster_dir, kContainerClusterDir, false)});
  }
  args.push_back(image_tag_);
  args.insert(args.end(),
              {docker::kImageRedisServer, "--bind", "0.0.0.0", "--port", std::to_string(kRedisPort), "--protected-mode",
               "no", "--daemonize", "no", "--logfile", kContainerLog, "--dir", "/data"});
  const std::vector<std::string> node_flags = node_args(config_.persistence);
  args.insert(args.end(), node_flags.begin(), node_flags.end());
  if (config_.topology == Topology::kCluster) {
    args.insert(
        args.end(),
        {"--cluster-enabled", "yes", "--cluster-config-file", std::string(kContainerClusterDir) + "/nodes.conf",
         "--cluster-node-timeout", std::to_string(options_.cluster_node_timeout_ms), "--cluster-port",
         std::to_string(kClusterBusPort), "--cluster-replica-validity-factor", "0",  // a replica may always take over
         "--cluster-announce-ip", node.endpoint.host});
  } else if (node.role == NodeRole::kReplica) {
    args.insert(args.end(), {"--replicaof", nodes_[0].endpoint.host, std::to_string(kRedisPort)});
  }
  cli_.check(args, options_.engine_timeout);
}

void DockerCluster::run_sentinel(size_t s) {
  const NodeInfo& sentinel = sentinels_[s];
  touch(sentinel.log_path);
  const std::string conf_dir = path("docker/sentinel/" + sentinel.name);
  fs::create_directories(conf_dir);
  const int quorum = options_.sentinels / 2 + 1;
  {
    // Sentinel rewrites its config file (by rename), so it gets a writable directory, not a file mount.
    std::ofstream conf(conf_dir + "/sentinel.conf", std::ios::trunc);
    conf << "port " << kSentinelPort << "\n"
         << "bind 0.0.0.0\n"
         << "protected-mode no\n"
         << "daemonize no\n"
         << "logfile " << kContainerLog << "\n"
         << "dir /tmp\n"
         << sentinel_monitor_conf({nodes_[0].endpoint.host, kRedisPort}, quorum, options_.sentinel_timings,
                                  config_.sentinel_parallel_syncs);
    if (!conf) throw ClusterError("cannot write " + conf_dir + "/sentinel.conf");
  }
  std::vector<std::string> args = {"run",
                                   "--detach",
                                   "--name",
                                   container_name(sentinel.name),
                                   "--hostname",
                                   sentinel.name,
                                   "--network",
                                   network_,
                                   "--ip",
                                   sentinel.endpoint.host,
                                   "--network-alias",
                                   sentinel.name,
                                   "--user",
                                   std::to_string(::getuid()) + ":" + std::to_string(::getgid())};
  for (const auto& l : labels()) args.push_back(l);
  args.insert(args.end(), {"--label", "lockcheck.node=" + sentinel.name});
  args.insert(args.end(), {"--mount", bind_mount(sentinel.log_path, kContainerLog, false)});
  args.insert(args.end(), {"--mount", bind_mount(conf_dir, kContainerConfDir, false)});
  args.push_back(image_tag_);
  args.insert(args.end(), {docker::kImageRedisSentinel, std::string(kContainerConfDir) + "/sentinel.conf"});
  cli_.check(args, options_.engine_timeout);
}

void DockerCluster::wait_ready(const Endpoint& ep, const std::string& what) const {
  const auto deadline = std::chrono::steady_clock::now() + options_.ready_timeout;
  std::string err;
  while (true) {
    err = ping_error(ep, milliseconds(300));
    if (err.empty()) return;
    if (std::chrono::steady_clock::now() >= deadline) break;
    if (stop_requested_) throw ClusterError("docker cluster: stopping (while waiting for " + what + ")");
    sleep_ms(50);
  }
  std::string name = what.substr(what.rfind(' ') + 1);
  std::string detail;
  CommandResult logs = cli_.run({"logs", "--tail", "5", container_name(name)}, kQuickTimeout);
  std::string printed = trim(logs.out + logs.err);
  if (!printed.empty()) detail = "; it printed: " + printed;
  throw ClusterError("docker cluster: " + what + " (" + ep.str() + ") did not answer PING within " +
                     std::to_string(options_.ready_timeout.count()) + " ms: " + err + detail +
                     " (log: " + path("nodes/" + name + ".log") +
                     "; the host must reach container addresses over the bridge, which Docker Desktop's VM "
                     "does not route)");
}

void DockerCluster::wait_replicas_linked() const {
  std::vector<ReadyParty> replicas, sentinels;
  for (const auto& node : nodes_) {
    if (node.role == NodeRole::kReplica) replicas.push_back({node.name, node.endpoint});
  }
  for (const auto& s : sentinels_) sentinels.push_back({s.name, s.endpoint});
  wait_replicated_ready(replicas, sentinels, options_.ready_timeout, "docker cluster",
                        "see the logs under " + path("nodes"), [this] { return stop_requested_.load(); });
}

void DockerCluster::open_client_proxies() {
  proxy_ = std::make_unique<FaultProxy>(config_.seed);
  links_.set_proxy(proxy_.get());
  client_endpoints_.assign(static_cast<size_t>(std::max(config_.concurrency, 0)), {});
  for (size_t slot = 0; slot < client_endpoints_.size(); ++slot) {
    for (const auto& node : nodes_) {
      client_endpoints_[slot].push_back(proxy_->add_link(Party::client(slot).name(), node.name, node.endpoint));
    }
  }
}

void DockerCluster::stop() noexcept {
  stop_requested_ = true;  // cuts short a wait for PING in another thread, which holds the mutex
  std::lock_guard<std::mutex> lock(mu_);
  stop_locked();
}

void DockerCluster::stop_locked() noexcept {
  if (stopped_) return;
  stopped_ = true;
  if (proxy_) proxy_->stop();
  if (!engine_answered_) return;  // nothing was made (and there is no engine to ask)
  auto warn = [](const std::string& m) { std::cerr << "lockcheck: docker teardown: " << m << "\n"; };
  auto attempt = [&](const std::vector<std::string>& args, milliseconds timeout) -> std::string {
    try {
      CommandResult r = cli_.run(args, timeout);
      if (!r.ok()) warn(docker::failure_message(args, r));
      return r.out;
    } catch (const std::exception& e) {
      warn(e.what());
      return "";
    }
  };
  const std::string filter = "label=" + std::string(kDockerRunLabel) + "=" + run_id_;
  try {
    // A frozen container would hold its SIGKILL until thawed: thaw first.
    for (const auto& id :
         split_lines(attempt({"ps", "--quiet", "--filter", filter, "--filter", "status=paused"}, kQuickTimeout))) {
      attempt({"unpause", id}, kQuickTimeout);
    }
    // What a node printed before its log file was open (a loader error, a bad flag) is only in docker logs.
    std::vector<const NodeInfo*> all;
    for (const auto& n : nodes_) all.push_back(&n);
    for (const auto& s : sentinels_) all.push_back(&s);
    for (const NodeInfo* info : all) {
      CommandResult r;
      try {
        r = cli_.run({"logs", container_name(info->name)}, kQuickTimeout);
      } catch (const std::exception&) {
        continue;
      }
      std::string printed = trim(r.out + r.err);
      if (r.ok() && !printed.empty()) {
        std::ofstream(info->log_path, std::ios::app) << "--- container output (docker logs) ---\n" << printed << "\n";
      }
    }
    std::vector<std::string> containers =
        split_lines(attempt({"ps", "--all", "--quiet", "--filter", filter}, kQuickTimeout));
    if (!containers.empty()) {
      std::vector<std::string> rm = {"rm", "--force", "--volumes"};
      rm.insert(rm.end(), containers.begin(), containers.end());
      attempt(rm, options_.engine_timeout);
    }
    for (const auto& net : split_lines(attempt({"network", "ls", "--quiet", "--filter", filter}, kQuickTimeout))) {
      attempt({"network", "rm", net}, options_.engine_timeout);
    }
    for (const auto& vol : split_lines(attempt({"volume", "ls", "--quiet", "--filter", filter}, kQuickTimeout))) {
      attempt({"volume", "rm", "--force", vol}, options_.engine_timeout);
    }
    // Undo clock offsets (the files stay in the run folder; a later reader should see 0).
    for (const auto& node : nodes_) {
      const std::string clock_file = path("docker/clock/" + node.name);
      boost::system::error_code ec;
      if (fs::exists(clock_file, ec)) {
        try {
          write_clock_offset(clock_file, std::chrono::nanoseconds(0));
        } catch (const std::exception& e) {
          warn(e.what());
        }
      }
    }
  } catch (const std::exception& e) {
    warn(e.what());
  }
}

// ---------------------------------------------------------------------------------------------------------
// Fault primitives

void DockerCluster::check_node(size_t n) const {
  if (n >= nodes_.size()) {
    throw ClusterError("docker cluster: no node " + std::to_string(n) + " (there are " + std::to_string(nodes_.size()) +
                       ")");
  }
  if (!started_ || stopped_) throw ClusterError("docker cluster: not running (start() first, or stopped)");
}

void DockerCluster::kill(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  NodeState& st = state_[n];
  if (st.killed) return;
  const std::string c = container_name(nodes_[n].name);
  if (st.paused) {
    cli_.check({"unpause", c}, options_.engine_timeout);
    st.paused = false;
  }
  kill_container(c);
  st.killed = true;
  st.rules_for.clear();  // the network namespace goes with the process
  st.rules_known = true;
  // The clients' proxy links to it refuse from now on, as a dead node's port would (a killed container's
  // address would rather leave connects hanging until the host gives up on it).
  if (proxy_) proxy_->upstream_down(nodes_[n].endpoint);
}

void DockerCluster::kill_container(const std::string& c) {
  const std::vector<std::string> args = {"kill", "--signal", "KILL", c};
  CommandResult r = cli_.run(args, options_.engine_timeout);
  if (r.ok()) return;
  // A node that exited by itself (a crash, a bad flag) is down already: that is what kill asked for.
  CommandResult running = cli_.run({"inspect", "--format", "{{.State.Running}}", c}, kQuickTimeout);
  if (running.ok() && trim(running.out) == "false") return;
  throw ClusterError("docker cluster: " + docker::failure_message(args, r));
}

void DockerCluster::restart(size_t n) {
  std::unique_lock<std::mutex> lock(mu_);
  check_node(n);
  NodeState& st = state_[n];
  const std::string c = container_name(nodes_[n].name);
  if (!st.killed) {
    if (st.paused) cli_.check({"unpause", c}, options_.engine_timeout);
    st.paused = false;
    kill_container(c);
    st.killed = true;
  }
  // `docker kill` returns once the signal is sent; `docker start` of a container still exiting fails, so
  // wait (bounded) for the engine to report it stopped.
  cli_.check({"wait", c}, options_.engine_timeout);
  cli_.check({"start", c}, options_.engine_timeout);
  st.killed = false;
  st.rules_for.clear();  // a fresh network namespace: no rules
  st.rules_known = true;
  sync_rules(n);
  wait_ready(nodes_[n].endpoint, "node " + nodes_[n].name);
  if (proxy_) proxy_->upstream_up(nodes_[n].endpoint);
}

void DockerCluster::pause(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  NodeState& st = state_[n];
  if (st.killed) throw ClusterError("docker cluster: cannot pause " + nodes_[n].name + ": it is down (killed)");
  if (st.paused) return;
  cli_.check({"pause", container_name(nodes_[n].name)}, options_.engine_timeout);
  st.paused = true;
}

void DockerCluster::resume(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  NodeState& st = state_[n];
  if (!st.paused) return;
  cli_.check({"unpause", container_name(nodes_[n].name)}, options_.engine_timeout);
  st.paused = false;
  sync_rules(n);  // cuts changed while it was frozen
}

void DockerCluster::set_clock_offset(size_t n, std::chrono::nanoseconds offset) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  try {
    write_clock_offset(path("docker/clock/" + nodes_[n].name), offset);
  } catch (const std::exception& e) {
    throw ClusterError(std::string("docker cluster: clock offset of ") + nodes_[n].name + ": " + e.what());
  }
}

bool DockerCluster::is_running(size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  return n < nodes_.size() && started_ && !stopped_ && !state_[n].killed;
}

// ---------------------------------------------------------------------------------------------------------
// Network

size_t DockerCluster::node_index(const std::string& party) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].name == party) return i;
  }
  return std::string::npos;
}

int DockerCluster::client_slot(const std::string& party) const {
  const auto p = Party::parse(party);
  if (!p || !p->is_client() || p->index >= static_cast<size_t>(config_.concurrency)) return -1;
  return static_cast<int>(p->index);
}

size_t DockerCluster::sentinel_index(const std::string& party) const {
  for (size_t s = 0; s < sentinels_.size(); ++s) {
    if (sentinels_[s].name == party) return s;
  }
  return std::string::npos;
}

Endpoint DockerCluster::endpoint_for(const std::string& party, size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  if (node_index(party) != std::string::npos) return nodes_[n].endpoint;
  int slot = client_slot(party);
  if (slot >= 0 && static_cast<size_t>(slot) < client_endpoints_.size()) return client_endpoints_[slot][n];
  throw ClusterError("docker cluster: unknown party '" + party + "' (nodes n1..n" + std::to_string(nodes_.size()) +
                     ", client slots c0..c" + std::to_string(config_.concurrency - 1) + ")");
}

// The rules of one node's namespace: drop what arrives from each cut peer and what goes to it. The whole
// filter table is replaced at once (iptables-restore), so a sync is atomic and idempotent; Docker keeps its
// own rules of the container's namespace (embedded DNS) in the nat table, which this does not touch.
void DockerCluster::sync_rules(size_t n) {
  NodeState& st = state_[n];
  if (st.killed || st.paused) return;  // applied when it comes back
  std::set<std::string> want;
  for (const auto& cut : cuts_) {
    if (cut.first == nodes_[n].name) want.insert(cut.second);
    if (cut.second == nodes_[n].name) want.insert(cut.first);
  }
  if (st.rules_known && want == st.rules_for) return;
  std::string table = "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n";
  for (const auto& peer : want) {
    const size_t k = node_index(peer);
    const std::string& ip =
        k != std::string::npos ? nodes_[k].endpoint.host : sentinels_[sentinel_index(peer)].endpoint.host;
    table += "-A INPUT -s " + ip + "/32 -j DROP\n";
    table += "-A OUTPUT -d " + ip + "/32 -j DROP\n";
  }
  table += "COMMIT\n";
  st.rules_known = false;
  cli_.check({"exec", "--interactive", "--user", "0:0", "--env", "LD_PRELOAD=", container_name(nodes_[n].name),
              docker::kImageIptablesRestore},
             options_.engine_timeout, table);
  st.rules_for = want;
  st.rules_known = true;
}

std::string DockerCluster::iptables_rules(size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  return cli_.check(
      {"exec", "--user", "0:0", "--env", "LD_PRELOAD=", container_name(nodes_[n].name), docker::kImageIptables, "-S"},
      options_.engine_timeout);
}

// The party dispatch is SplitNetwork's (cluster/split_network.h): client links go to the fault proxy, links
// between nodes and Sentinels come back here as peer links, cut by iptables in the node's namespace.
void DockerCluster::cut(const std::string& a, const std::string& b) { links_.cut(a, b); }
void DockerCluster::heal(const std::string& a, const std::string& b) { links_.heal(a, b); }
void DockerCluster::heal_all() { links_.heal_all(); }
void DockerCluster::set_delay(const std::string& a, const std::string& b, milliseconds delay, milliseconds jitter) {
  links_.set_delay(a, b, delay, jitter);
}

void DockerCluster::require_running() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_ || stopped_) throw ClusterError("docker cluster: not running");
}

// The rules of the node(s) on the link: either side's rules alone cut a node <-> node link, and both get them so
// that it stays cut while one is paused or down; a node <-> Sentinel link is cut by the node's rules alone
// (Sentinels run without CAP_NET_ADMIN).
void DockerCluster::sync_link(const std::string& a, const std::string& b) {
  std::string error;
  for (const std::string& p : {a, b}) {
    const size_t n = node_index(p);
    if (n == std::string::npos) continue;
    try {
      sync_rules(n);
    } catch (const ClusterError& e) {
      error = e.what();
    }
  }
  if (!error.empty()) throw ClusterError(error);
}

void DockerCluster::cut_peers(const std::string& a, const std::string& b) {
  std::lock_guard<std::mutex> lock(mu_);
  if (node_index(a) == std::string::npos && node_index(b) == std::string::npos) {
    throw ClusterError("docker cluster: cutting Sentinel from Sentinel (" + a + ", " + b + ") is not supported");
  }
  cuts_.insert(std::minmax(a, b));
  sync_link(a, b);
}

void DockerCluster::heal_peers(const std::string& a, const std::string& b) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!cuts_.erase(std::minmax(a, b)) && node_index(a) == std::string::npos && node_index(b) == std::string::npos) {
    return;  // Sentinel <-> Sentinel: never cut
  }
  sync_link(a, b);
}

void DockerCluster::heal_all_peers() {
  std::lock_guard<std::mutex> lock(mu_);
  cuts_.clear();
  std::string error;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    try {
      sync_rules(n);
    } catch (const ClusterError& e) {
      error = e.what();
    }
  }
  if (!error.empty()) throw ClusterError(error);
}

void DockerCluster::delay_peers(const std::string& a, const std::string& b, milliseconds delay, milliseconds jitter) {
  if (delay.count() == 0 && jitter.count() == 0) return;  // nothing to remove
  throw ClusterError("docker cluster: delay between nodes (" + a + ", " + b +
                     ") is not supported: it needs tc netem inside the containers");
}

// ---------------------------------------------------------------------------------------------------------
// Engine probe and clean-up of killed runs

bool docker_engine_available() {
  try {
    docker::DockerCli cli;
    cli.require_engine(seconds(10));
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

int docker_clean(std::ostream& out) {
  docker::DockerCli cli;
  try {
    cli.require_engine();
  } catch (const ClusterError& e) {
    out << e.what() << "\n";
    return 3;
  }
  const std::string me = hostname();
  const std::string label_filter = std::string("label=") + kDockerRunLabel;
  auto format = [](const std::string& id_field) {
    return "{{." + id_field + "}}\t{{.Label \"" + kDockerRunLabel + "\"}}\t{{.Label \"" + kDockerOwnerPidLabel +
           "\"}}\t{{.Label \"" + kDockerOwnerHostLabel + "\"}}";
  };
  // A run is alive when its owner process runs on this host. Runs of other hosts sharing the engine cannot be
  // checked from here; their owner label says where they came from.
  auto alive = [&me](const std::string& pid_s, const std::string& host) {
    if (host != me || pid_s.empty()) return false;
    pid_t pid = static_cast<pid_t>(std::atoll(pid_s.c_str()));
    if (pid <= 0) return false;
    return ::kill(pid, 0) == 0 || errno == EPERM;
  };
  int status = 0;
  auto sweep = [&](const std::string& kind, std::vector<std::string> ls, std::vector<std::string> rm) {
    CommandResult r = cli.run(ls, seconds(30));
    if (!r.ok()) {
      out << docker::failure_message(ls, r) << "\n";
      status = 3;
      return;
    }
    for (const auto& line : split_lines(r.out)) {
      std::vector<std::string> f;
      std::istringstream in(line);
      std::string field;
      while (std::getline(in, field, '\t')) f.push_back(field);
      f.resize(4);
      if (f[2].empty()) {  // made by hand (the compose files), not by a run: its owner removes it
        out << "kept " << kind << " " << f[0] << " (run " << f[1] << ": no owner label, not made by lockcheck run)\n";
        continue;
      }
      if (alive(f[2], f[3])) {
        out << "kept " << kind << " " << f[0] << " (run " << f[1] << ", owner pid " << f[2] << " is alive)\n";
        continue;
      }
      // A frozen container would hold its SIGKILL until thawed: thaw it (an error here just means it was not).
      if (kind == "container") cli.run({"unpause", f[0]}, seconds(30));
      std::vector<std::string> args = rm;
      args.push_back(f[0]);
      CommandResult rr = cli.run(args, seconds(60));
      if (rr.ok()) {
        out << "removed " << kind << " " << f[0] << " (run " << f[1] << ")\n";
      } else {
        out << docker::failure_message(args, rr) << "\n";
        status = 3;
      }
    }
  };
  sweep("container", {"ps", "--all", "--filter", label_filter, "--format", format("ID")},
        {"rm", "--force", "--volumes"});
  sweep("network", {"network", "ls", "--filter", label_filter, "--format", format("ID")}, {"network", "rm"});
  sweep("volume", {"volume", "ls", "--filter", label_filter, "--format", format("Name")}, {"volume", "rm", "--force"});
  return status;
}

}  // namespace lockcheck
