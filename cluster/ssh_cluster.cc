#include "cluster/ssh_cluster.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

#include <boost/filesystem.hpp>

#include "cluster/clock_shim.h"
#include "cluster/fault_proxy.h"
#include "cluster/redis_config.h"
#include "cluster/replicated_ready.h"
#include "core/party.h"
#include "sys/process.h"
#include "sys/redis_conn.h"

namespace lockcheck {

namespace fs = boost::filesystem;
using std::chrono::milliseconds;

namespace {

constexpr int kSentinelBasePort = 26379;

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
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

std::string random_id() {
  std::random_device rd;  // names the run's remote objects only
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rd()));
  return buf;
}

std::string hostname() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string program(const std::string& name) {
  auto p = find_program(name);
  if (!p) throw ClusterError("ssh cluster: `" + name + "` not found on PATH (apt-get install openssh-client)");
  return *p;
}

CommandResult run_argv(const std::vector<std::string>& argv, milliseconds timeout, const std::string& input = "") {
  CommandOptions o;
  o.timeout = timeout;
  o.stdin_data = input;
  o.own_process_group = true;  // the teardown's ssh calls must outlive a terminal's Ctrl-C
  std::vector<std::string> resolved = argv;
  resolved[0] = program(argv[0]);
  static const bool trace = [] {
    const char* v = std::getenv("LOCKCHECK_SSH_TRACE");
    return v != nullptr && v[0] != '\0' && std::string(v) != "0";
  }();
  try {
    const auto t0 = std::chrono::steady_clock::now();
    CommandResult r = run_command(resolved, o);
    if (trace) {
      auto ms = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "lockcheck: %s ... %s -> exit %d in %lld ms\n", argv[0].c_str(), argv.back().c_str(),
                   r.exit_code, static_cast<long long>(ms));
    }
    return r;
  } catch (const ClusterError&) {
    throw;
  } catch (const std::exception& e) {
    throw ClusterError(std::string("ssh cluster: cannot run ") + argv[0] + ": " + e.what());
  }
}

std::string describe(const std::vector<std::string>& remote) { return remote_command(remote); }

// Remote helper scripts: constant text run as `sh -c SCRIPT sh ARGS...`; everything variable is a quoted
// positional argument, never spliced into the script.
// Start: $1 pid file, $2 a file to remove first ("" none: the RDB of a node without persistence), then the
// command. The server daemonizes; waits (at most 10 s) for its pid file and prints the pid.
constexpr const char* kStartScript =
    "p=$1; shift; [ -n \"$1\" ] && rm -f -- \"$1\"; shift; rm -f -- \"$p\"; \"$@\" || exit $?; i=0; "
    "while [ ! -s \"$p\" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; cat -- \"$p\"";
// Kill: $1 pid. SIGKILL (a stopped process gets SIGCONT too), then waits (at most 10 s) until the process is
// gone or a zombie, so that its port is free. Fails when it is still there.
constexpr const char* kKillScript =
    "kill -s CONT \"$1\" 2>/dev/null; kill -s KILL \"$1\" 2>/dev/null; i=0; "
    "while [ -e /proc/$1 ] && ! grep -q '^State:.*Z' /proc/$1/status 2>/dev/null && [ $i -lt 200 ]; do "
    "sleep 0.05; i=$((i+1)); done; ! { [ -e /proc/$1 ] && ! grep -q '^State:.*Z' /proc/$1/status 2>/dev/null; }";

// Teardown: $1 the run's iptables chain ("" none), $2 the interface with our root qdisc ("" none), then the
// pids of the host's nodes (SIGCONT then SIGKILL; one already gone is fine). Fails when a removal failed.
constexpr const char* kTeardownScript =
    "c=$1; dev=$2; shift 2; ok=0; if [ $# -gt 0 ]; then kill -s CONT \"$@\" 2>/dev/null; kill -s KILL \"$@\" "
    "2>/dev/null; fi; "
    "if [ -n \"$c\" ]; then iptables -D INPUT -j \"$c\"; iptables -D OUTPUT -j \"$c\"; "
    "iptables -F \"$c\" && iptables -X \"$c\" || ok=1; fi; "
    "if [ -n \"$dev\" ]; then tc qdisc del dev \"$dev\" root || ok=1; fi; exit $ok";

// Runs f(h) for every h in hs at once; rethrows the first error after all have finished.
template <typename F>
void for_hosts(const std::vector<size_t>& hs, F f) {
  std::vector<std::future<void>> fs;
  for (size_t h : hs) fs.push_back(std::async(std::launch::async, [h, &f] { f(h); }));
  std::exception_ptr first;
  for (auto& x : fs) {
    try {
      x.get();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

// The iptables-restore input that removes chain c and its jumps (the chain is declared first, which flushes it).
std::string remove_chain_rules(const std::string& c) {
  return "*filter\n:" + c + " - [0:0]\n-D INPUT -j " + c + "\n-D OUTPUT -j " + c + "\n-X " + c + "\nCOMMIT\n";
}

}  // namespace

SshCluster::SshCluster(const RunConfig& config, std::string run_dir, SshClusterOptions options)
    : config_(config), run_dir_(std::move(run_dir)), options_(std::move(options)) {
  file_ = load_ssh_hosts(config_.hosts);
  run_id_ = random_id();
  control_dir_ = "/tmp/lcssh-" + run_id_;
  for (size_t h = 0; h < file_.hosts.size(); ++h) {
    hosts_.emplace_back(SshCommands(file_.hosts[h], file_.known_hosts, control_dir_ + "/" + std::to_string(h),
                                    options_.connect_timeout));
  }
  host_state_.resize(hosts_.size());
  const size_t H = hosts_.size();
  for (int i = 0; i < config_.nodes; ++i) {
    const size_t h = static_cast<size_t>(i) % H;
    NodeInfo info;
    info.name = Party::node(i).name();
    info.role = (config_.topology == Topology::kReplicated && i > 0) ? NodeRole::kReplica : NodeRole::kMaster;
    info.endpoint = {file_.hosts[h].address, file_.hosts[h].base_port + static_cast<int>(i / H)};
    info.log_path = path("nodes/" + info.name + ".log");
    nodes_.push_back(info);
    node_host_.push_back(h);
    procs_.push_back({info.name, h});
    host_state_[h].used = true;
  }
  if (config_.topology == Topology::kReplicated) {
    for (int s = 0; s < options_.sentinels; ++s) {
      const size_t h = static_cast<size_t>(config_.nodes + s) % H;  // after the nodes: own hosts when there are enough
      NodeInfo info;
      info.name = Party::sentinel(s).name();
      info.role = NodeRole::kSentinel;
      info.endpoint = {file_.hosts[h].address, kSentinelBasePort + static_cast<int>((config_.nodes + s) / H)};
      info.log_path = path("nodes/" + info.name + ".log");
      sentinels_.push_back(info);
      procs_.push_back({info.name, h});
      host_state_[h].used = true;
    }
  }
  links_ = SplitNetwork("ssh cluster", nodes_.size(), sentinels_.size(), config_.concurrency, this);
}

SshCluster::~SshCluster() { stop(); }

std::string SshCluster::path(const std::string& rel) const { return (fs::path(run_dir_) / rel).string(); }

std::string SshCluster::remote_dir(size_t h) const {
  std::string w = hosts_[h].host().work_dir;
  while (w.size() > 1 && w.back() == '/') w.pop_back();
  return w + "/lockcheck-" + run_id_;
}

// ---------------------------------------------------------------------------------------------------------
// Remote calls

bool SshCluster::ssh_try(size_t h, const std::vector<std::string>& argv, bool privileged, std::string* err,
                         const std::string& input) const {
  auto r = run_argv(hosts_[h].cmds.run(argv, privileged), options_.call_timeout, input);
  if (r.ok()) return true;
  if (err) {
    *err = "ssh " + hosts_[h].host().name + " (" + hosts_[h].host().address + "): `" + describe(argv) + "` " +
           (r.timed_out ? "did not finish within " + std::to_string(options_.call_timeout.count()) + " ms"
                        : "failed (exit " + std::to_string(r.exit_code) + ")") +
           (trim(r.err).empty() ? "" : ": " + trim(r.err));
  }
  return false;
}

std::string SshCluster::ssh_check(size_t h, const std::vector<std::string>& argv, bool privileged,
                                  const std::string& input) const {
  auto r = run_argv(hosts_[h].cmds.run(argv, privileged), options_.call_timeout, input);
  if (!r.ok()) {
    throw ClusterError("ssh cluster: ssh " + hosts_[h].host().name + " (" + hosts_[h].host().address + "): `" +
                       describe(argv) + "` " +
                       (r.timed_out ? "did not finish within " + std::to_string(options_.call_timeout.count()) + " ms"
                                    : "failed (exit " + std::to_string(r.exit_code) + ")") +
                       (trim(r.err).empty() ? "" : ": " + trim(r.err)));
  }
  return r.out;
}

void SshCluster::scp_check(size_t h, const std::vector<std::string>& argv) const {
  auto r = run_argv(argv, options_.call_timeout);
  if (!r.ok()) {
    throw ClusterError("ssh cluster: scp to/from " + hosts_[h].host().name + " failed" +
                       (r.timed_out ? " (timed out)" : " (exit " + std::to_string(r.exit_code) + ")") +
                       (trim(r.err).empty() ? "" : ": " + trim(r.err)));
  }
}

// ---------------------------------------------------------------------------------------------------------
// start / stop

void SshCluster::start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_ || stopped_) throw ClusterError("ssh cluster: start() called twice, or after stop()");
  started_ = true;
  try {
    start_locked();
  } catch (const ClusterError&) {
    stop_locked();
    throw;
  } catch (const std::exception& e) {
    stop_locked();
    throw ClusterError(std::string("ssh cluster: ") + e.what());
  }
}

void SshCluster::start_locked() {
  const std::string shim = options_.clock_shim.empty() ? clock_shim_library() : options_.clock_shim;
  if (!fs::exists(shim)) {
    throw ClusterError("ssh cluster: clock shim not found: " + shim +
                       " (build lockcheck_clockshim or set LOCKCHECK_CLOCK_SHIM)");
  }
  fs::create_directories(path("nodes"));
  fs::create_directories(path("ssh"));
  if (::mkdir(control_dir_.c_str(), 0700) != 0 && errno != EEXIST) {
    throw ClusterError("ssh cluster: cannot create " + control_dir_ + ": " + std::strerror(errno));
  }
  std::ofstream(control_dir_ + "/owner") << ::getpid() << "\n";  // for `lockcheck clean` after a SIGKILL
  std::vector<size_t> used;
  for (size_t h = 0; h < hosts_.size(); ++h) {
    if (host_state_[h].used) used.push_back(h);
  }
  // The masters are children of this thread (PDEATHSIG follows the spawning thread), started one by one.
  masters_.resize(hosts_.size());
  for (size_t h : used) {
    ProcessSpec spec;
    spec.argv = hosts_[h].cmds.master();
    spec.stdout_path = path("ssh/" + hosts_[h].host().name + ".ssh.log");
    spec.stderr_path = "=stdout";
    masters_[h] = std::make_unique<ChildProcess>(spec);
  }
  for_hosts(used, [this](size_t h) { setup_host(h); });
  // Nodes and Sentinels, in parallel over the hosts.
  std::vector<std::future<void>> starts;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    starts.push_back(std::async(std::launch::async,
                                [this, i] { start_proc(procs_[i], hosts_[procs_[i].host].host().redis_server); }));
  }
  std::exception_ptr first;
  for (auto& s : starts) {
    try {
      s.get();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
  for (const auto& n : nodes_) wait_ready(n.endpoint, "node " + n.name);
  for (size_t s = 0; s < sentinels_.size(); ++s) {
    Proc& p = procs_[nodes_.size() + s];
    start_proc(p, hosts_[p.host].host().redis_sentinel);
  }
  for (const auto& s : sentinels_) wait_ready(s.endpoint, "Sentinel " + s.name);
  if (config_.topology == Topology::kReplicated) wait_replicas_linked();
  proxy_ = std::make_unique<FaultProxy>(config_.seed);
  links_.set_proxy(proxy_.get());
  client_endpoints_.assign(static_cast<size_t>(std::max(config_.concurrency, 0)), {});
  for (size_t slot = 0; slot < client_endpoints_.size(); ++slot) {
    for (const auto& node : nodes_) {
      client_endpoints_[slot].push_back(proxy_->add_link(Party::client(slot).name(), node.name, node.endpoint));
    }
  }
}

// Waits for the master connection, then uploads the host's folder: owner, clock shim, per node its config
// and clock file, an empty data dir.
void SshCluster::setup_host(size_t h) {
  const auto& host = hosts_[h].host();
  const auto deadline = std::chrono::steady_clock::now() + options_.connect_timeout + std::chrono::seconds(5);
  while (true) {
    if (run_argv(
            [&] {
              auto a = hosts_[h].cmds.master_exit();
              a[a.size() - 2] = "check";
              return a;
            }(),
            std::chrono::seconds(5))
            .ok()) {
      break;
    }
    if (!masters_[h]->running() || std::chrono::steady_clock::now() > deadline || stop_requested_) {
      std::ifstream log(path("ssh/" + host.name + ".ssh.log"));
      std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
      throw ClusterError("ssh cluster: cannot connect to " + host.name + " (" + hosts_[h].cmds.destination() +
                         "): " + (trim(text).empty() ? "no master connection within the connect timeout" : trim(text)));
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  const std::string stage = path("ssh/" + host.name + "/lockcheck-" + run_id_);
  fs::remove_all(stage);
  fs::create_directories(stage);
  std::ofstream(stage + "/owner") << ::getpid() << " " << hostname() << "\n";
  fs::copy_file(options_.clock_shim.empty() ? clock_shim_library() : options_.clock_shim, stage + "/libclockshim.so");
  const std::string rdir = remote_dir(h);
  for (size_t i = 0; i < procs_.size(); ++i) {
    const Proc& p = procs_[i];
    if (p.host != h) continue;
    const std::string d = stage + "/" + p.name;
    fs::create_directories(d + "/data");
    std::ofstream(d + "/data/.keep");
    create_clock_file(d + "/clock");
    const std::string rd = rdir + "/" + p.name;
    std::ofstream conf(d + "/redis.conf");
    if (i < nodes_.size()) {
      const NodeInfo& n = nodes_[i];
      conf << "port " << n.endpoint.port << "\nbind 0.0.0.0\nprotected-mode no\ndaemonize yes\n"
           << "pidfile " << rd << "/redis.pid\nlogfile " << rd << "/redis.log\ndir " << rd << "/data\n"
           << node_conf(config_.persistence);
      if (n.role == NodeRole::kReplica)
        conf << "replicaof " << nodes_[0].endpoint.host << " " << nodes_[0].endpoint.port << "\n";
    } else {
      const NodeInfo& s = sentinels_[i - nodes_.size()];
      conf << "port " << s.endpoint.port << "\nbind 0.0.0.0\nprotected-mode no\ndaemonize yes\n"
           << "pidfile " << rd << "/redis.pid\nlogfile " << rd << "/redis.log\ndir " << rd << "/data\n"
           << sentinel_monitor_conf(nodes_[0].endpoint, options_.sentinels / 2 + 1, options_.sentinel_timings,
                                    config_.sentinel_parallel_syncs);
    }
    if (!conf) throw ClusterError("ssh cluster: cannot write " + d + "/redis.conf");
  }
  ssh_check(h, {"mkdir", "-p", "--", host.work_dir});
  host_state_[h].dir_made = true;
  auto up = hosts_[h].cmds.upload(stage, rdir);
  up.insert(up.begin() + 1, "-r");
  scp_check(h, up);
  fs::remove_all(path("ssh/" + host.name));  // the staging copy (the shim is large)
}

void SshCluster::start_proc(Proc& p, const std::string& program_path) {
  const std::string rd = remote_dir(p.host) + "/" + p.name;
  const bool sentinel = Party::parse(p.name).value_or(Party::node(0)).is_sentinel();
  std::vector<std::string> argv = {"sh",
                                   "-c",
                                   kStartScript,
                                   "sh",
                                   rd + "/redis.pid",
                                   config_.persistence == Persistence::kNone && !sentinel ? rd + "/data/dump.rdb" : "",
                                   "env",
                                   "LD_PRELOAD=" + remote_dir(p.host) + "/libclockshim.so",
                                   std::string(kClockFileEnv) + "=" + rd + "/clock",
                                   program_path,
                                   rd + "/redis.conf"};
  if (sentinel) argv.push_back("--sentinel");
  std::string err;
  auto r = run_argv(hosts_[p.host].cmds.run(argv), options_.call_timeout);
  const std::string out = trim(r.out);
  if (!r.ok() || out.empty() || !std::all_of(out.begin(), out.end(), ::isdigit)) {
    auto log = run_argv(hosts_[p.host].cmds.run({"tail", "-n", "5", rd + "/redis.log"}), options_.call_timeout);
    throw ClusterError("ssh cluster: " + p.name + " on " + hosts_[p.host].host().name + " did not start (" +
                       (r.timed_out ? std::string("timed out") : "exit " + std::to_string(r.exit_code)) + ": " +
                       trim(r.err) + "); its log ends: " + trim(log.out));
  }
  p.pid = std::atoi(out.c_str());
  p.killed = false;
  p.paused = false;
}

void SshCluster::wait_ready(const Endpoint& ep, const std::string& what) const {
  const auto deadline = std::chrono::steady_clock::now() + options_.ready_timeout;
  std::string err;
  while (true) {
    err = ping_error(ep, milliseconds(300));
    if (err.empty()) return;
    if (std::chrono::steady_clock::now() >= deadline) break;
    if (stop_requested_) throw ClusterError("ssh cluster: stopping (while waiting for " + what + ")");
    std::this_thread::sleep_for(milliseconds(50));
  }
  throw ClusterError("ssh cluster: " + what + " (" + ep.str() + ") did not answer PING within " +
                     std::to_string(options_.ready_timeout.count()) + " ms: " + err);
}

void SshCluster::wait_replicas_linked() const {
  std::vector<ReadyParty> replicas, sentinels;
  for (const auto& node : nodes_) {
    if (node.role == NodeRole::kReplica) replicas.push_back({node.name, node.endpoint});
  }
  for (const auto& s : sentinels_) sentinels.push_back({s.name, s.endpoint});
  wait_replicated_ready(replicas, sentinels, options_.ready_timeout, "ssh cluster", "",
                        [this] { return stop_requested_.load(); });
}

void SshCluster::stop() noexcept {
  stop_requested_ = true;
  std::lock_guard<std::mutex> lock(mu_);
  stop_locked();
}

void SshCluster::stop_locked() noexcept {
  if (stopped_) return;
  stopped_ = true;
  if (proxy_) proxy_->stop();
  if (!started_) return;
  auto warn = [](const std::string& m) { std::cerr << "lockcheck: ssh teardown: " << m << "\n"; };
  std::vector<size_t> used;
  for (size_t h = 0; h < hosts_.size(); ++h) {
    if (host_state_[h].used && host_state_[h].dir_made) used.push_back(h);
  }
  try {
    for_hosts(used, [&](size_t h) {
      std::string err;
      HostState& st = host_state_[h];
      // One call: SIGCONT + SIGKILL to the host's nodes, the chain and the qdisc removed.
      std::vector<std::string> argv = {"sh", "-c", kTeardownScript, "sh", st.chain_made ? chain() : "", st.netem_dev};
      for (const auto& p : procs_) {
        if (p.host == h && p.pid > 0) argv.push_back(std::to_string(p.pid));
      }
      if (!ssh_try(h, argv, true, &err)) warn(err);
      for (const auto& p : procs_) {
        if (p.host != h) continue;
        const std::string local = path("nodes/" + p.name + ".log");
        auto r = run_argv(hosts_[h].cmds.download(remote_dir(h) + "/" + p.name + "/redis.log", local),
                          options_.call_timeout);
        if (!r.ok()) warn("cannot fetch the log of " + p.name + " from " + hosts_[h].host().name + ": " + trim(r.err));
      }
      if (!ssh_try(h, {"rm", "-rf", "--", remote_dir(h)}, false, &err)) warn(err);
    });
  } catch (const std::exception& e) {
    warn(e.what());
  }
  for (size_t h = 0; h < masters_.size(); ++h) {
    if (!masters_[h]) continue;
    try {
      run_argv(hosts_[h].cmds.master_exit(), std::chrono::seconds(5));
    } catch (const std::exception&) {
    }
    if (!masters_[h]->wait_for(milliseconds(2000))) masters_[h]->kill_and_reap();
    masters_[h].reset();
  }
  boost::system::error_code ec;
  fs::remove_all(control_dir_, ec);
}

// ---------------------------------------------------------------------------------------------------------
// Node faults

void SshCluster::check_node(size_t n) const {
  if (n >= nodes_.size()) {
    throw ClusterError("ssh cluster: no node " + std::to_string(n) + " (there are " + std::to_string(nodes_.size()) +
                       ")");
  }
  if (!started_ || stopped_) throw ClusterError("ssh cluster: not running (start() first, or stopped)");
}

void SshCluster::signal_proc(const Proc& p, const char* sig) {
  ssh_check(p.host, {"kill", "-s", sig, std::to_string(p.pid)});
}

void SshCluster::kill(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  Proc& p = procs_[n];
  if (p.killed) return;
  ssh_check(p.host, {"sh", "-c", kKillScript, "sh", std::to_string(p.pid)});
  p.killed = true;
  p.paused = false;
}

void SshCluster::restart(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  Proc& p = procs_[n];
  if (!p.killed) {
    ssh_check(p.host, {"sh", "-c", kKillScript, "sh", std::to_string(p.pid)});
    p.killed = true;
  }
  start_proc(p, hosts_[p.host].host().redis_server);
  wait_ready(nodes_[n].endpoint, "node " + nodes_[n].name);
}

void SshCluster::pause(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  Proc& p = procs_[n];
  if (p.killed) throw ClusterError("ssh cluster: cannot pause " + p.name + ": it is down (killed)");
  if (p.paused) return;
  signal_proc(p, "STOP");
  p.paused = true;
}

void SshCluster::resume(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  Proc& p = procs_[n];
  if (!p.paused) return;
  signal_proc(p, "CONT");
  p.paused = false;
}

void SshCluster::set_clock_offset(size_t n, std::chrono::nanoseconds offset) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  const int64_t v = offset.count();
  std::string bytes(sizeof v, '\0');
  std::memcpy(&bytes[0], &v, sizeof v);  // native byte order, as the shim reads it (the hosts share it: x86_64)
  const Proc& p = procs_[n];
  ssh_check(
      p.host,
      {"dd", "of=" + remote_dir(p.host) + "/" + p.name + "/clock", "bs=8", "count=1", "conv=notrunc", "status=none"},
      false, bytes);
}

bool SshCluster::is_running(size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  return n < nodes_.size() && started_ && !stopped_ && !procs_[n].killed;
}

// ---------------------------------------------------------------------------------------------------------
// Network

size_t SshCluster::node_index(const std::string& party) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].name == party) return i;
  }
  return std::string::npos;
}

size_t SshCluster::party_host(const std::string& party) const {
  for (const auto& p : procs_) {
    if (p.name == party) return p.host;
  }
  return std::string::npos;
}

int SshCluster::client_slot(const std::string& party) const {
  const auto p = Party::parse(party);
  if (!p || !p->is_client() || p->index >= static_cast<size_t>(config_.concurrency)) return -1;
  return static_cast<int>(p->index);
}

Endpoint SshCluster::endpoint_for(const std::string& party, size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  if (node_index(party) != std::string::npos) return nodes_[n].endpoint;
  int slot = client_slot(party);
  if (slot >= 0 && static_cast<size_t>(slot) < client_endpoints_.size()) return client_endpoints_[slot][n];
  throw ClusterError("ssh cluster: unknown party '" + party + "'");
}

// Makes host h's chain drop exactly the peers it is cut from. The chain (and its jumps) is made on first use;
// iptables-restore --noflush with the chain declared replaces its rules in one step.
void SshCluster::sync_rules(size_t h) {
  HostState& st = host_state_[h];
  std::set<std::string> want;
  for (const auto& [a, b] : cuts_) {
    size_t ha = party_host(a), hb = party_host(b);
    if (ha == h) want.insert(hosts_[hb].host().address);
    if (hb == h) want.insert(hosts_[ha].host().address);
  }
  if (st.chain_made && want == st.dropped) return;
  std::string table = "*filter\n:" + chain() + " - [0:0]\n";
  if (!st.chain_made) table += "-I INPUT 1 -j " + chain() + "\n-I OUTPUT 1 -j " + chain() + "\n";
  for (const auto& ip : want)
    table += "-A " + chain() + " -s " + ip + "/32 -j DROP\n-A " + chain() + " -d " + ip + "/32 -j DROP\n";
  table += "COMMIT\n";
  const bool first = !st.chain_made;
  st.chain_made = true;  // a failed first load may have made it half: teardown removes what is there
  try {
    ssh_check(h, {"iptables-restore", "--noflush"}, true, table);
  } catch (const ClusterError&) {
    if (first) st.chain_made = false;
    throw;
  }
  st.dropped = want;
}

std::string SshCluster::iptables_rules(size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  return ssh_check(node_host_[n], {"iptables", "-S"}, true);
}

// The party dispatch is SplitNetwork's (cluster/split_network.h): client links go to this machine's fault proxy,
// links between nodes and Sentinels come back here as peer links: iptables rules (and tc netem) on their hosts.
void SshCluster::cut(const std::string& a, const std::string& b) { links_.cut(a, b); }
void SshCluster::heal(const std::string& a, const std::string& b) { links_.heal(a, b); }
void SshCluster::heal_all() { links_.heal_all(); }
void SshCluster::set_delay(const std::string& a, const std::string& b, milliseconds delay, milliseconds jitter) {
  links_.set_delay(a, b, delay, jitter);
}

void SshCluster::require_running() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_ || stopped_) throw ClusterError("ssh cluster: not running");
}

void SshCluster::cut_peers(const std::string& a, const std::string& b) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t ha = party_host(a), hb = party_host(b);
  if (ha == hb) {
    throw ClusterError("ssh cluster: cannot cut " + a + " from " + b + ": both run on host " + hosts_[ha].host().name +
                       " (give the hosts file as many hosts as nodes)");
  }
  cuts_.insert(std::minmax(a, b));
  for_hosts({ha, hb}, [this](size_t h) { sync_rules(h); });  // both at once
}

void SshCluster::heal_peers(const std::string& a, const std::string& b) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t ha = party_host(a), hb = party_host(b);
  cuts_.erase(std::minmax(a, b));
  node_delays_.erase(std::minmax(a, b));
  for_hosts({ha, hb}, [this](size_t h) {
    if (host_state_[h].chain_made) sync_rules(h);
    sync_delays(h);
  });
}

void SshCluster::heal_all_peers() {
  std::lock_guard<std::mutex> lock(mu_);
  cuts_.clear();
  node_delays_.clear();
  std::vector<size_t> all;
  for (size_t h = 0; h < hosts_.size(); ++h) all.push_back(h);
  for_hosts(all, [this](size_t h) {
    if (host_state_[h].chain_made) sync_rules(h);
    sync_delays(h);
  });
}

// Host h delays what it sends to its delayed peers: a prio root qdisc whose 4th band is a netem, and one u32
// filter per peer address into that band. One delay per host (the largest asked for). No delays: no qdisc.
void SshCluster::sync_delays(size_t h) {
  HostState& st = host_state_[h];
  std::map<std::string, std::pair<int64_t, int64_t>> want;
  for (const auto& [pair, d] : node_delays_) {
    size_t ha = party_host(pair.first), hb = party_host(pair.second);
    if (ha == h) want[hosts_[hb].host().address] = d;
    if (hb == h) want[hosts_[ha].host().address] = d;
  }
  if (want == st.delays) return;
  const std::string name = hosts_[h].host().name;
  if (!st.netem_dev.empty()) {
    ssh_check(h, {"tc", "qdisc", "del", "dev", st.netem_dev, "root"}, true);
    st.netem_dev.clear();
    st.delays.clear();
  }
  if (want.empty()) return;
  // The interface towards the peers (all on one network here): from the route to the first.
  std::string route = ssh_check(h, {"ip", "-o", "route", "get", want.begin()->first});
  std::istringstream words(route);
  std::string w, dev;
  while (words >> w) {
    if (w == "dev" && (words >> dev)) break;
  }
  if (dev.empty()) throw ClusterError("ssh cluster: no route from " + name + " to " + want.begin()->first);
  int64_t delay = 0, jitter = 0;
  for (const auto& [ip, d] : want) delay = std::max(delay, d.first), jitter = std::max(jitter, d.second);
  std::string err;
  if (!ssh_try(h, {"tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "prio", "bands", "4", "priomap", "1", "2",
                   "2",  "2",     "1",   "2",   "0", "0",    "1",      "1",  "1",    "1",     "1", "1",       "1", "1"},
               true, &err)) {
    throw ClusterError("ssh cluster: delay not available on " + name + " (tc prio: " + err + ")");
  }
  st.netem_dev = dev;
  std::vector<std::string> netem = {"tc",  "qdisc",  "add", "dev",   dev,     "parent",
                                    "1:4", "handle", "40:", "netem", "delay", std::to_string(delay) + "ms"};
  if (jitter > 0) netem.push_back(std::to_string(jitter) + "ms");
  if (!ssh_try(h, netem, true, &err)) {
    ssh_try(h, {"tc", "qdisc", "del", "dev", dev, "root"}, true);
    st.netem_dev.clear();
    throw ClusterError("ssh cluster: delay not available on " + name + " (tc netem: " + err + ")");
  }
  for (const auto& [ip, d] : want) {
    ssh_check(h,
              {"tc", "filter", "add", "dev", dev, "parent", "1:0", "protocol", "ip", "prio", "1", "u32", "match", "ip",
               "dst", ip + "/32", "flowid", "1:4"},
              true);
  }
  st.delays = want;
}

void SshCluster::delay_peers(const std::string& a, const std::string& b, milliseconds delay, milliseconds jitter) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t ha = party_host(a), hb = party_host(b);
  const bool remove = delay.count() == 0 && jitter.count() == 0;
  if (remove && !node_delays_.count(std::minmax(a, b))) return;  // nothing to remove
  if (ha == hb) throw ClusterError("ssh cluster: cannot delay " + a + " and " + b + ": both run on one host");
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

// ---------------------------------------------------------------------------------------------------------
// Clean-up of killed runs

int ssh_clean(const std::string& hosts_file, std::ostream& out) {
  SshHosts file = load_ssh_hosts(hosts_file);
  const std::string me = hostname();
  const std::string control_dir = "/tmp/lcssh-clean-" + random_id();
  ::mkdir(control_dir.c_str(), 0700);
  int status = 0;
  for (size_t h = 0; h < file.hosts.size(); ++h) {
    const SshHost& host = file.hosts[h];
    SshCommands cmds(host, file.known_hosts, control_dir + "/" + std::to_string(h));
    auto call = [&](const std::vector<std::string>& argv, bool privileged = false, const std::string& input = "") {
      return run_argv(cmds.run(argv, privileged), std::chrono::seconds(30), input);
    };
    auto r = call({"ls", "-1", "-a", "--", host.work_dir});
    if (!r.ok()) {
      if (r.exit_code == 2 && r.err.find("No such file") != std::string::npos) {
        out << host.name << ": nothing (no " << host.work_dir << ")\n";
      } else {
        out << host.name << ": did not answer: " << trim(r.err) << "\n";
        status = 3;
        continue;
      }
    }
    std::set<std::string> live_ids;
    for (const auto& entry : split_lines(r.out)) {
      if (entry.rfind("lockcheck-", 0) != 0 || entry.size() != 18) continue;
      const std::string id = entry.substr(10);
      const std::string rdir = host.work_dir + "/" + entry;
      auto owner = call({"cat", "--", rdir + "/owner"});
      std::istringstream in(owner.out);
      long pid = 0;
      std::string owner_host;
      in >> pid >> owner_host;
      if (owner_host == me && pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM)) {
        out << "kept " << host.name << ":" << rdir << " (owner pid " << pid << " is alive)\n";
        live_ids.insert(id);
        continue;
      }
      // Its nodes: the pid files of its subfolders, if the process there is still a Redis.
      auto subs = call({"ls", "-1", "--", rdir});
      for (const auto& sub : split_lines(subs.out)) {
        auto pidr = call({"cat", "--", rdir + "/" + sub + "/redis.pid"});
        const std::string p = trim(pidr.out);
        if (!pidr.ok() || p.empty() || !std::all_of(p.begin(), p.end(), ::isdigit)) continue;
        auto comm = call({"ps", "-o", "comm=", "-p", p});
        if (comm.ok() && trim(comm.out).find("redis") != std::string::npos) {
          call({"kill", "-s", "CONT", p});
          call({"kill", "-s", "KILL", p});
          out << "killed " << host.name << ": " << sub << " (pid " << p << ", run " << id << ")\n";
        }
      }
      auto rm = call({"rm", "-rf", "--", rdir});
      if (rm.ok()) {
        out << "removed " << host.name << ":" << rdir << "\n";
      } else {
        out << host.name << ": cannot remove " << rdir << ": " << trim(rm.err) << "\n";
        status = 3;
      }
    }
    // Chains LC-<id> of runs that are not alive.
    auto rules = call({"iptables", "-S"}, true);
    if (rules.ok()) {
      for (const auto& line : split_lines(rules.out)) {
        if (line.rfind("-N LC-", 0) != 0) continue;
        const std::string c = line.substr(3);
        if (live_ids.count(c.substr(3))) {
          out << "kept " << host.name << ": iptables chain " << c << " (run alive)\n";
          continue;
        }
        auto rr = call({"iptables-restore", "--noflush"}, true, remove_chain_rules(c));
        if (rr.ok()) {
          out << "removed " << host.name << ": iptables chain " << c << "\n";
        } else {
          out << host.name << ": cannot remove iptables chain " << c << ": " << trim(rr.err) << "\n";
          status = 3;
        }
      }
    }
  }
  boost::system::error_code ec;
  fs::remove_all(control_dir, ec);
  // This machine's control-socket folders of runs killed here (their masters died with them).
  for (fs::directory_iterator it("/tmp", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("lcssh-", 0) != 0 || name.rfind("lcssh-clean-", 0) == 0) continue;
    std::ifstream owner((it->path() / "owner").string());
    long pid = 0;
    if (!(owner >> pid) || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM) continue;
    boost::system::error_code rm_ec;
    fs::remove_all(it->path(), rm_ec);
    out << (rm_ec ? "cannot remove " : "removed ") << it->path().string() << " (control sockets of a killed run)\n";
  }
  return status;
}

}  // namespace lockcheck
