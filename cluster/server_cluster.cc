#include "cluster/server_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <boost/filesystem.hpp>

#include "cluster/fault_proxy.h"
#include "cluster/power_loss.h"
#include "core/party.h"

namespace lockcheck {

namespace fs = boost::filesystem;
using std::chrono::milliseconds;

namespace {

// A member's files in its folder, whatever its server kind.
constexpr const char* kPidFile = "server.pid";
constexpr const char* kLogFile = "server.log";
constexpr const char* kProgramFile = "server.program";  // the program's name, for `lockcheck clean`
constexpr const char* kClockFile = "clock";

std::string this_hostname() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string basename_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Writes each of a member's configuration files (ServerSpec files(): a path under its folder, and the text) into
// the local folder dir, making the subfolders. Throws ClusterError naming the file.
void write_member_files(const std::vector<std::pair<std::string, std::string>>& files, const std::string& dir,
                        const std::string& backend) {
  for (const auto& [name, text] : files) {
    const std::string path = dir + "/" + name;
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream f(path, std::ios::trunc);
    f << text;
    if (!f) throw ClusterError(backend + ": cannot write " + path);
  }
}

// True when the log says a port was taken (Redis: "Address already in use"; etcd: "address already in use").
bool says_port_taken(const std::string& log) { return log.find("ddress already in use") != std::string::npos; }

}  // namespace

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

// ---------------------------------------------------------------------------------------------------------
// Construction and placement

ServerCluster::ServerCluster(std::string backend, ServerRun server, ClusterSetup setup, std::string run_id)
    : backend_(std::move(backend)),
      setup_(std::move(setup)),
      run_(std::move(server)),
      server_(run_.server.get()),
      run_id_(std::move(run_id)),
      abilities_(run_.abilities) {
  if (!server_) throw ClusterError(backend_ + ": no server");
}

ServerCluster::~ServerCluster() { stop(); }

void ServerCluster::place(std::vector<RemoteHost> hosts, std::unique_ptr<PeerNetwork> network,
                          const std::vector<Placement>& nodes, const std::vector<Placement>& sentinels) {
  hosts_ = std::move(hosts);
  network_ = std::move(network);
  host_dir_made_.assign(hosts_.size(), false);
  const std::vector<NodeRole> roles = server_->node_roles(static_cast<int>(nodes.size()));
  auto add = [&](const Placement& p, const std::string& name, NodeRole role) {
    Member m;
    m.addr.name = name;
    m.addr.role = role;
    m.host = p.host;
    for (const auto& port : server_->ports(role)) {
      const auto it = p.ports.find(port.label);
      m.planned[port.label] = it == p.ports.end() ? 0 : it->second;
    }
    m.log_copy = fs::absolute(path("nodes/" + name + ".log")).string();
    members_.push_back(m);
  };
  for (size_t i = 0; i < nodes.size(); ++i) add(nodes[i], Party::node(i).name(), roles.at(i));
  for (size_t s = 0; s < sentinels.size(); ++s) add(sentinels[s], Party::sentinel(s).name(), NodeRole::kSentinel);
  // Where a port is fixed on a host whose address is known, that is where it will be (start() places it again).
  for (auto& m : members_) {
    const std::string& address = hosts_[m.host].address;
    if (address.empty()) continue;
    for (const auto& [label, port] : m.planned) {
      if (port == 0) continue;
      m.addr.advertised[label] = Endpoint{address, port};
      if (label == "client") m.addr.admin = Endpoint{address, port};
    }
  }
  refresh_infos();
  links_ = SplitNetwork(backend_, nodes_.size(), sentinels_.size(), setup_.concurrency, this);
  abilities_ = run_.abilities.both(network_->abilities());
  if (!setup_.network_faults) {
    for (Ability a : {Ability::kCutPeers, Ability::kDelayPeers}) {
      abilities_.refuse(a, "this cluster runs without network faults");
    }
  }
  if (!setup_.clock_shim) {
    for (Ability a : {Ability::kClockStep, Ability::kClockRate}) abilities_.refuse(a, "the clock shim is off");
  }
  if (!setup_.power_shim) {
    abilities_.refuse(Ability::kPowerLoss,
                      "the power shim is preloaded only into the nodes of a run whose faults include a power loss");
  }
}

std::vector<int> ServerCluster::round_ports(NodeRole role) const {
  std::vector<int> out;
  for (const auto& p : server_->ports(role)) out.push_back(p.default_port);
  return out;
}

void ServerCluster::refresh_infos() {
  nodes_.clear();
  sentinels_.clear();
  for (auto& m : members_) {
    const RemoteHost& host = hosts_[m.host];
    m.dir = remote_dir(m.host) + "/" + m.addr.name;
    m.log = host.results_in_place ? m.log_copy : m.dir + "/" + kLogFile;
    NodeInfo info;
    info.name = m.addr.name;
    info.role = m.addr.role;
    const auto client = m.addr.advertised.find("client");
    if (client != m.addr.advertised.end()) info.endpoint = client->second;
    if (m.addr.admin.port != 0 && m.addr.admin != info.endpoint) info.listen = m.addr.admin;
    info.log_path = m.log_copy;
    (m.addr.role == NodeRole::kSentinel ? sentinels_ : nodes_).push_back(info);
  }
}

std::string ServerCluster::path(const std::string& rel) const { return (fs::path(setup_.run_dir) / rel).string(); }

bool ServerCluster::host_used(size_t h) const {
  return std::any_of(members_.begin(), members_.end(), [h](const Member& m) { return m.host == h; });
}

std::string ServerCluster::remote_dir(size_t h) const {
  if (hosts_[h].results_in_place) return fs::absolute(path("nodes")).string();
  std::string w = hosts_[h].work_dir;
  while (w.size() > 1 && w.back() == '/') w.pop_back();
  return w + "/lockcheck-" + run_id_;
}

bool ServerCluster::clock_shim_on() const {
  return setup_.clock_shim && run_.abilities.has(Ability::kClockStep);
}

bool ServerCluster::power_shim_on() const { return setup_.power_shim && run_.abilities.has(Ability::kPowerLoss); }

std::string ServerCluster::shim_on(size_t h, bool power) const {
  const std::string& have = power ? hosts_[h].power_shim : hosts_[h].clock_shim;
  return have.empty() ? remote_dir(h) + (power ? "/libpowershim.so" : "/libclockshim.so") : have;
}

size_t ServerCluster::party_host(const std::string& party) const {
  for (const auto& m : members_) {
    if (m.addr.name == party) return m.host;
  }
  return std::string::npos;
}

// Draws the member's free ports (planned 0) and asks the network where its peers reach each peer port.
void ServerCluster::place_ports(Member& m, bool first) {
  const RemoteHost& host = hosts_[m.host];
  // Distinct from every port another member of this host listens on: a port drawn free is free only until it is
  // bound, and the members bind theirs after all are drawn (a node's bus port once came out as another's client
  // port).
  std::set<int> taken;
  for (const Member& other : members_) {
    if (&other == &m || other.host != m.host) continue;
    for (const auto& [label, at] : other.listen) taken.insert(at.port);
  }
  for (const auto& port : server_->ports(m.addr.role)) {
    int p = m.planned.at(port.label);
    if (p == 0) {
      do {
        if (setup_.draw_port) {
          p = setup_.draw_port();
        } else {
          port_reservations_.push_back(reserve_loopback_port(port_rng_));
          p = port_reservations_.back().port();
        }
      } while (taken.count(p));
    }
    taken.insert(p);
    m.listen[port.label] = Endpoint{host.bind_address, p};
    const Endpoint reach{host.address, p};
    if (port.label == "client") m.addr.admin = reach;
    m.addr.advertised[port.label] =
        port.peer && setup_.network_faults ? network_->advertise(m.addr.name, port.label, reach, first) : reach;
  }
}

MemberContext ServerCluster::context_of(const Member& m) const {
  const RemoteHost& host = hosts_[m.host];
  MemberContext c;
  c.self = m.addr;
  c.listen = m.listen;
  c.dir = m.dir;
  c.log_path = m.log;
  // Only a member that talks to its peers needs to be told apart by the address it connects from.
  const auto ports = server_->ports(m.addr.role);
  const bool peers = std::any_of(ports.begin(), ports.end(), [](const ServerPort& p) { return p.peer; });
  c.source_address = setup_.network_faults && peers ? network_->source_address(m.addr.name) : "";
  for (const auto& other : members_) c.members.push_back(other.addr);
  c.programs = run_.build.programs;
  for (const auto& [name, program] : host.programs) c.programs[name] = program;
  if (setup_.ship_build) {
    for (const auto& [name, program] : run_.build.programs) c.programs[name] = remote_dir(m.host) + "/bin/" + name;
  }
  return c;
}

// ---------------------------------------------------------------------------------------------------------
// start / stop

void ServerCluster::start() {
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

void ServerCluster::start_locked() {
  fs::create_directories(path("nodes"));
  provision();
  if (setup_.network_faults) {
    try {
      proxy_ = std::make_unique<FaultProxy>(setup_.seed);
    } catch (const std::exception& e) {
      throw ClusterError(std::string("cannot start the fault proxy: ") + e.what());
    }
  }
  network_->attach(proxy_.get());
  links_.set_proxy(proxy_.get());
  refresh_infos();  // the hosts' addresses are known now
  for (auto& m : members_) place_ports(m, true);
  refresh_infos();
  std::vector<size_t> used;
  for (size_t h = 0; h < hosts_.size(); ++h) {
    if (host_used(h)) used.push_back(h);
  }
  for_each_at_once(used, [this](size_t h) { setup_host(h); });
  fs::remove_all(path("stage"));  // the staging copies (the shim is large)
  const milliseconds bound = server_->start_timeout();
  // The nodes at once over the hosts, then the Sentinels (they watch nodes that answer).
  std::vector<size_t> nodes, sentinels;
  for (size_t i = 0; i < members_.size(); ++i) (i < nodes_.size() ? nodes : sentinels).push_back(i);
  for (const auto* group : {&nodes, &sentinels}) {
    for_each_at_once(*group, [this](size_t i) { start_member(members_[i]); });
    for (size_t i : *group) wait_ready(members_[i], bound);
    if (group == &nodes && !sentinels.empty()) {
      refresh_infos();
      std::vector<MemberAddress> node_addrs;
      for (size_t i : nodes) node_addrs.push_back(members_[i].addr);
      server_->nodes_started(node_addrs, bound, "see the node logs (" + path("nodes") + ")" + ready_hint_,
                             [this] { return stop_requested_.load(); });
    }
  }
  refresh_infos();  // a member started again on other ports
  std::vector<MemberAddress> addrs;
  for (const auto& m : members_) addrs.push_back(m.addr);
  server_->after_start(addrs, bound, "see the node logs (" + path("nodes") + ")" + ready_hint_,
                       [this] { return stop_requested_.load(); });
  primary_ = server_->primary(*this);
  key_holders_ = server_->key_holders(*this);
}

// Writes the host's folder: owner, the shims (unless the host has them), per member its files, clock file, an
// empty data folder and the name of its program; then uploads it.
void ServerCluster::setup_host(size_t h) {
  const RemoteHost& host = hosts_[h];
  const std::string stage = path("stage/" + host.name + "/lockcheck-" + run_id_);
  fs::remove_all(stage);
  fs::create_directories(stage);
  if (!host.results_in_place) {
    std::ofstream(stage + "/owner") << ::getpid() << " " << this_hostname() << "\n";
  }
  if (clock_shim_on() && host.clock_shim.empty()) {
    const std::string shim = setup_.clock_shim_path.empty() ? clock_shim_library() : setup_.clock_shim_path;
    if (!fs::exists(shim)) {
      throw ClusterError(backend_ + ": clock shim not found: " + shim +
                         " (build lockcheck_clockshim or set LOCKCHECK_CLOCK_SHIM)");
    }
    fs::copy_file(shim, stage + "/libclockshim.so");
  }
  if (power_shim_on() && host.power_shim.empty()) {
    if (!fs::exists(power_shim_library())) {
      throw ClusterError(backend_ + ": power shim not found: " + power_shim_library() +
                         " (build lockcheck_powershim or set LOCKCHECK_POWER_SHIM)");
    }
    fs::copy_file(power_shim_library(), stage + "/libpowershim.so");
  }
  // A shim the host has already (this machine's, on loopback) must be there.
  if (host.results_in_place && clock_shim_on() && !fs::exists(host.clock_shim)) {
    throw ClusterError(backend_ + ": clock shim not found: " + host.clock_shim +
                       " (build lockcheck_clockshim or set LOCKCHECK_CLOCK_SHIM)");
  }
  if (host.results_in_place && power_shim_on() && !fs::exists(host.power_shim)) {
    throw ClusterError(backend_ + ": power shim not found: " + host.power_shim +
                       " (build lockcheck_powershim or set LOCKCHECK_POWER_SHIM)");
  }
  if (setup_.ship_build) {
    fs::create_directories(stage + "/bin");
    for (const auto& [name, program] : run_.build.programs) {
      const auto found = find_program(program);
      if (!found) throw ClusterError(backend_ + ": cannot ship " + program + " to " + host.name + ": not found here");
      fs::copy_file(*found, stage + "/bin/" + name);  // keeps its mode: the copy on the host runs
    }
  }
  for (const Member& m : members_) {
    if (m.host != h) continue;
    const std::string d = stage + "/" + m.addr.name;
    fs::create_directories(d + "/data");
    std::ofstream(d + "/data/.keep");  // an empty folder may not survive every transport's copy
    create_clock_file(d + "/" + kClockFile);
    const MemberContext ctx = context_of(m);
    write_member_files(server_->files(ctx), d, backend_);
    const Launch launch = server_->launch(ctx);
    std::ofstream(d + "/" + kProgramFile) << (launch.argv.empty() ? "" : basename_of(launch.argv[0])) << "\n";
  }
  if (host.results_in_place) {
    // The members' folders are the run's nodes/<name>/, written here.
    for (const Member& m : members_) {
      if (m.host == h) host.remote->upload(stage + "/" + m.addr.name, m.dir, setup_.call_timeout);
    }
    host_dir_made_[h] = true;
    return;
  }
  if (!host.work_dir_exists) {
    remote_check(*host.remote, {"mkdir", "-p", "--", host.work_dir}, RemoteCall{false, "", setup_.call_timeout},
                 backend_);
  }
  host_dir_made_[h] = true;
  host.remote->upload(stage, remote_dir(h), setup_.call_timeout);
}

void ServerCluster::rewrite_files(const Member& m) {
  const RemoteHost& host = hosts_[m.host];
  const std::string stage = path("stage/" + m.addr.name + "-again");
  const auto files = server_->files(context_of(m));
  write_member_files(files, stage, backend_);
  for (const auto& [name, text] : files) {
    const std::string target = m.dir + "/" + name;
    remote_check(*host.remote, {"rm", "-f", "--", target}, RemoteCall{false, "", setup_.call_timeout}, backend_);
    host.remote->upload(stage + "/" + name, target, setup_.call_timeout);
  }
  fs::remove_all(stage);
}

void ServerCluster::start_member(Member& m) {
  const RemoteHost& host = hosts_[m.host];
  const MemberContext ctx = context_of(m);
  Launch launch = server_->launch(ctx);
  ProcessStart p;
  p.argv = std::move(launch.argv);
  p.env = std::move(launch.env);
  p.log = m.log;
  p.pid_file = m.dir + "/" + kPidFile;
  for (const auto& rel : server_->wipe_before_start(ctx)) p.remove_first.push_back(m.dir + "/" + rel);
  std::vector<std::string> preload;
  if (clock_shim_on()) {
    preload.push_back(shim_on(m.host, false));
    p.env[kClockFileEnv] = m.dir + "/" + kClockFile;
  }
  if (power_shim_on()) {
    preload.push_back(shim_on(m.host, true));
    p.env[kPowerJournalEnv] = m.dir + "/" + kPowerJournalName;
  }
  if (!preload.empty()) p.env["LD_PRELOAD"] = preload_list(preload);
  try {
    m.pid = host.remote->start_process(p, setup_.call_timeout);
  } catch (const ClusterError& e) {
    throw ClusterError(backend_ + ": " + m.addr.name + " on " + host.name + " did not start (" + e.what() +
                       "); its log ends: " + log_tail(m));
  }
  m.killed = false;
  m.paused = false;
  network_->member_pid(m.addr.name, m.pid);
}

std::string ServerCluster::log_tail(const Member& m, int lines) const {
  try {
    const CommandResult log = hosts_[m.host].remote->exec({"tail", "-n", std::to_string(lines), m.log},
                                                          RemoteCall{false, "", setup_.call_timeout});
    return remote_trim(log.out);
  } catch (const std::exception&) {
    return "";
  }
}

void ServerCluster::wait_ready(Member& m, milliseconds timeout) {
  const RemoteHost& host = hosts_[m.host];
  const std::string what = (m.addr.role == NodeRole::kSentinel ? "Sentinel " : "node ") + m.addr.name;
  const bool drawn = std::any_of(m.planned.begin(), m.planned.end(), [](const auto& p) { return p.second == 0; });
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string err;
  for (int poll = 0;; ++poll) {
    err = server_->ready_error(m.addr);
    if (err.empty()) return;
    if (std::chrono::steady_clock::now() >= deadline) break;
    if (stop_requested_) throw ClusterError(backend_ + ": stopping (while waiting for " + what + ")");
    // Whether it still runs: every poll on this machine, every tenth (half a second) across a transport.
    if ((host.results_in_place || poll % 10 == 9) && !host.remote->process_running(m.pid, setup_.call_timeout)) {
      const std::string tail = log_tail(m);
      // A port drawn free can be taken before the member binds it (another run starting at the same time): its
      // peers name it by its proxy links, so it can start again on other ports, twice at most. Read from more of
      // the log than is shown: a JVM's BindException is followed by its stack trace and its exit lines.
      if (drawn && m.respawns < 2 && says_port_taken(log_tail(m, 80))) {
        ++m.respawns;
        host.remote->kill_process(m.pid, setup_.call_timeout);
        place_ports(m, false);
        rewrite_files(m);
        start_member(m);
        deadline = std::chrono::steady_clock::now() + timeout;
        continue;
      }
      host.remote->kill_process(m.pid, setup_.call_timeout);
      m.killed = true;
      throw ClusterError(backend_ + ": " + what + " exited at start; see " + m.log_copy +
                         (tail.empty() ? "" : "; its log ends: " + tail));
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  const std::string printed = log_tail(m);
  throw ClusterError(backend_ + ": " + what + " (" + m.addr.admin.str() + ") did not answer within " +
                     std::to_string(timeout.count()) + " ms: " + err +
                     (printed.empty() ? "" : "; its log ends: " + printed) + ready_hint_);
}

void ServerCluster::stop() noexcept {
  stop_requested_ = true;  // cuts short a wait for readiness in another thread, which holds the mutex
  std::lock_guard<std::mutex> lock(mu_);
  stop_locked();
}

void ServerCluster::stop_locked() noexcept {
  if (stopped_) return;
  stopped_ = true;
  if (proxy_) proxy_->stop();
  if (!started_) return;
  primary_.reset();
  key_holders_.reset();
  std::vector<size_t> made;
  for (size_t h = 0; h < hosts_.size(); ++h) {
    if (host_dir_made_[h]) made.push_back(h);
  }
  try {
    for_each_at_once(made, [this](size_t h) { teardown_host(h); });
  } catch (const std::exception& e) {
    std::cerr << "lockcheck: " << backend_ << " teardown: " << e.what() << "\n";
  }
  if (network_) network_->teardown();
  unprovision();
  port_reservations_.clear();  // the members are gone: their ports may go to another run
}

// The host's members killed (Sentinels first: no failover while the nodes go down), their logs fetched and the
// folder removed. An ephemeral host (it goes away with the run) only has its logs fetched; a host whose folders
// are the run's results keeps them, without what the server kind discards.
void ServerCluster::teardown_host(size_t h) noexcept {
  auto warn = [this](const std::string& msg) {
    std::cerr << "lockcheck: " << backend_ << " teardown: " << msg << "\n";
  };
  try {
    const RemoteHost& host = hosts_[h];
    if (!host.ephemeral) {
      // Signalled in reverse order (Sentinels first), then waited for together: the members die side by side.
      std::vector<int> pids;
      for (auto it = members_.rbegin(); it != members_.rend(); ++it) {
        Member& m = *it;
        if (m.host != h || m.pid <= 0 || m.killed) continue;
        pids.push_back(m.pid);
        m.killed = true;
      }
      try {
        host.remote->kill_processes(pids, setup_.call_timeout);
      } catch (const std::exception& e) {
        warn(e.what());
      }
    }
    if (host.results_in_place) {
      for (const auto& m : members_) {
        if (m.host != h) continue;
        for (const auto& rel : server_->discard_at_stop()) {
          boost::system::error_code ec;
          fs::remove_all(m.dir + "/" + rel, ec);
        }
      }
      return;
    }
    for (const auto& m : members_) {
      if (m.host != h) continue;
      try {
        host.remote->download(m.log, m.log_copy, setup_.call_timeout);
      } catch (const std::exception& e) {
        warn("cannot fetch the log of " + m.addr.name + ": " + e.what());
      }
    }
    std::string err;
    if (!host.ephemeral && !remote_try(*host.remote, {"rm", "-rf", "--", remote_dir(h)},
                                       RemoteCall{false, "", setup_.call_timeout}, &err)) {
      warn(err);
    }
  } catch (const std::exception& e) {
    warn(e.what());
  }
}

// ---------------------------------------------------------------------------------------------------------
// Node faults

void ServerCluster::check_node(size_t n) const {
  if (n >= nodes_.size()) {
    throw ClusterError(backend_ + ": no node " + std::to_string(n) + " (there are " + std::to_string(nodes_.size()) +
                       ")");
  }
  if (!started_ || stopped_) throw ClusterError(backend_ + ": not running (start() first, or stopped)");
}

std::vector<Endpoint> ServerCluster::upstreams_of(const Member& m) const {
  std::vector<Endpoint> out;
  for (const auto& [label, listen] : m.listen) out.push_back(Endpoint{hosts_[m.host].address, listen.port});
  // The clients' links go to the admin address, which on Docker is a published port, not the container's own.
  if (std::find(out.begin(), out.end(), m.addr.admin) == out.end()) out.push_back(m.addr.admin);
  return out;
}

void ServerCluster::kill_member(Member& m) {
  hosts_[m.host].remote->kill_process(m.pid, setup_.call_timeout);
  m.killed = true;
  m.paused = false;
  network_->member_pid(m.addr.name, -1);
}

void ServerCluster::kill(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  Member& m = members_[n];
  if (m.killed) return;
  kill_member(m);
  // The proxy links to it refuse from now on, as the dead node's port does (a definite failure, not a connection
  // accepted and then closed).
  if (proxy_) {
    for (const auto& up : upstreams_of(m)) proxy_->upstream_down(up);
  }
}

void ServerCluster::restart(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  Member& m = members_[n];
  const RemoteHost& host = hosts_[m.host];
  if (!m.killed) {
    if (host.remote->process_running(m.pid, setup_.call_timeout)) {
      // Already up: a paused member is continued, not started again.
      if (m.paused) {
        host.remote->signal_process(m.pid, "CONT", setup_.call_timeout);
        m.paused = false;
      }
      return;
    }
    kill_member(m);  // it exited by itself: reaped before it starts again
  }
  start_member(m);
  wait_ready(m, server_->start_timeout());
  if (proxy_) {
    for (const auto& up : upstreams_of(m)) proxy_->upstream_up(up);
  }
}

void ServerCluster::pause(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  Member& m = members_[n];
  if (m.killed) throw ClusterError(backend_ + ": cannot pause " + m.addr.name + ": it is down (killed)");
  if (m.paused) return;
  hosts_[m.host].remote->signal_process(m.pid, "STOP", setup_.call_timeout);
  m.paused = true;
}

void ServerCluster::resume(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  Member& m = members_[n];
  if (!m.paused || m.killed) return;
  hosts_[m.host].remote->signal_process(m.pid, "CONT", setup_.call_timeout);
  m.paused = false;
}

bool ServerCluster::is_running(size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  return n < nodes_.size() && started_ && !stopped_ && !members_[n].killed;
}

int ServerCluster::pid(size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  return n < nodes_.size() && !members_[n].killed ? members_[n].pid : -1;
}

int ServerCluster::sentinel_pid(size_t k) const {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t i = nodes_.size() + k;
  return i < members_.size() && !members_[i].killed ? members_[i].pid : -1;
}

// Two writes, in order, each a write() of its own: the slot not in force, then the generation that puts it in
// force (the shim reads either setting whole: cluster/clockshim.c).
void ServerCluster::write_clock_locked(size_t n, const ClockSetting& setting) {
  if (!abilities_.has(Ability::kClockStep)) {
    throw ClusterError("clock faults on " + run_.name + " node " + nodes_[n].name + ": " +
                       abilities_.why_not(Ability::kClockStep));
  }
  Member& m = members_[n];
  const Remote& remote = *hosts_[m.host].remote;
  const uint64_t g = m.clock_generation + 1;
  const std::string file = m.dir + "/" + kClockFile;
  remote.write_at(file, clock_slot_offset(g), clock_slot_bytes(setting), setup_.call_timeout);
  remote.write_at(file, 0, clock_generation_bytes(g), setup_.call_timeout);  // native byte order: hosts are x86_64
  m.clock = setting;
  m.clock_generation = g;
}

int64_t ServerCluster::host_clock_delta_locked(size_t h) {
  if (hosts_[h].shares_harness_clock) return 0;
  const auto it = clock_delta_ns_.find(h);
  if (it != clock_delta_ns_.end()) return it->second;
  const int64_t before = real_wall_ns();
  const std::string out = remote_trim(remote_check(*hosts_[h].remote, {"date", "+%s%N"},
                                                   RemoteCall{false, "", setup_.call_timeout}, backend_));
  const int64_t after = real_wall_ns();
  if (out.empty() || !std::all_of(out.begin(), out.end(), ::isdigit)) {
    throw ClusterError(backend_ + ": cannot read the clock of " + hosts_[h].name + " (`date +%s%N` said '" + out +
                       "'): a clock rate needs the host's time to start from");
  }
  const int64_t delta = std::stoll(out) - (before + (after - before) / 2);
  clock_delta_ns_[h] = delta;
  return delta;
}

std::optional<std::chrono::nanoseconds> ServerCluster::clock_shift(size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (n >= nodes_.size() || !clock_shim_on()) return std::nullopt;
  const Member& m = members_[n];
  const auto delta = clock_delta_ns_.find(m.host);
  const bool shares = hosts_[m.host].shares_harness_clock;
  if (m.clock.rate_ppb != 0 && !shares && delta == clock_delta_ns_.end()) return std::nullopt;
  const int64_t d = shares || delta == clock_delta_ns_.end() ? 0 : delta->second;
  return std::chrono::nanoseconds(m.clock.shift_at(real_wall_ns() + d));
}

void ServerCluster::set_clock_offset(size_t n, std::chrono::nanoseconds offset) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  write_clock_locked(n, ClockSetting{static_cast<int64_t>(offset.count()), 0, 0});
}

void ServerCluster::set_clock_rate(size_t n, int64_t rate_ppb) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  if (!abilities_.has(Ability::kClockRate)) {
    throw ClusterError("clock faults on " + run_.name + " node " + nodes_[n].name + ": " +
                       abilities_.why_not(Ability::kClockRate));
  }
  const Member& m = members_[n];
  const int64_t host_now = real_wall_ns() + host_clock_delta_locked(m.host);
  write_clock_locked(n, clock_with_rate(m.clock, host_now, rate_ppb));
}

namespace {

// Power loss, read: $1 the member's data folder, $2 its journal. Prints the folder's physical path (the journal's
// paths are physical), then the journal; fails when there is no journal (the shim never ran).
constexpr const char* kPowerReadScript = "cd \"$1\" && pwd -P && cat -- \"$2\"";
// Power loss, stat: one line per path argument, "<dev> <ino> <size>" of a regular file, else "-".
constexpr const char* kPowerStatScript =
    "for f; do s=$(stat -c '%F|%d %i %s' -- \"$f\" 2>/dev/null); case \"$s\" in 'regular file|'*|'regular empty "
    "file|'*) echo \"${s#*|}\";; *) echo -;; esac; done";
// Power loss, apply: $1 the journal, then triples T PATH LEN (truncate) or R PATH - (remove); empties the journal.
constexpr const char* kPowerApplyScript =
    "j=$1; shift; while [ $# -ge 3 ]; do if [ \"$1\" = T ]; then truncate -s \"$3\" -- \"$2\" || exit 1; else rm "
    "-f -- \"$2\" || exit 1; fi; shift 3; done; : > \"$j\"";

}  // namespace

PowerLossReport ServerCluster::power_loss(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  check_node(n);
  if (!abilities_.has(Ability::kPowerLoss)) {
    throw ClusterError("power loss on " + run_.name + " node " + nodes_[n].name + ": " +
                       abilities_.why_not(Ability::kPowerLoss));
  }
  Member& m = members_[n];
  const Remote& remote = *hosts_[m.host].remote;
  const RemoteCall call{false, "", setup_.call_timeout};
  if (!m.killed) {
    kill_member(m);
    if (proxy_) {
      for (const auto& up : upstreams_of(m)) proxy_->upstream_down(up);
    }
  }
  // The node is dead (reaped): its journal is complete.
  const std::string journal = m.dir + "/" + kPowerJournalName;
  const std::string read =
      remote_check(remote, {"sh", "-c", kPowerReadScript, "sh", m.dir + "/data", journal}, call, backend_);
  const auto newline = read.find('\n');
  const std::string scope = remote_trim(read.substr(0, newline));
  const PowerJournal j = PowerJournal::parse(newline == std::string::npos ? "" : read.substr(newline + 1));
  const std::vector<std::string> paths = j.paths(scope);
  std::map<std::string, std::optional<FileStat>> now;
  if (!paths.empty()) {
    std::vector<std::string> argv = {"sh", "-c", kPowerStatScript, "sh"};
    argv.insert(argv.end(), paths.begin(), paths.end());
    const std::vector<std::string> lines = remote_lines(remote_check(remote, argv, call, backend_));
    if (lines.size() != paths.size()) {
      throw ClusterError(backend_ + ": power loss on " + m.addr.name + ": stat answered " +
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
  std::vector<std::string> argv = {"sh", "-c", kPowerApplyScript, "sh", journal};
  for (const auto& a : actions) {
    const bool remove = a.kind == PowerLossAction::Kind::kRemove;
    argv.insert(argv.end(), {remove ? "R" : "T", a.path, remove ? "-" : std::to_string(a.keep)});
  }
  remote_check(remote, argv, call, backend_);
  if (j.malformed() > 0) {
    not_undone.push_back(std::to_string(j.malformed()) + " journal line(s) could not be read (torn or garbled)");
  }
  return power_loss_report(actions, std::move(not_undone), j.records(), scope);
}

std::optional<size_t> ServerCluster::leader() const {
  std::vector<std::optional<MemberAddress>> running;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_ || stopped_) return std::nullopt;
    for (size_t n = 0; n < nodes_.size(); ++n) {
      running.push_back(members_[n].killed ? std::nullopt : std::optional<MemberAddress>(members_[n].addr));
    }
  }
  return server_->leader(running);  // not under the mutex: it asks the servers
}

std::vector<std::string> ServerCluster::node_versions() const {
  std::vector<MemberAddress> addrs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t n = 0; n < nodes_.size(); ++n) addrs.push_back(members_[n].addr);
  }
  return server_->node_versions(addrs);
}

// ---------------------------------------------------------------------------------------------------------
// Network

size_t ServerCluster::node_index(const std::string& party) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].name == party) return i;
  }
  return std::string::npos;
}

int ServerCluster::client_slot(const std::string& party) const {
  const auto p = Party::parse(party);
  if (!p || !p->is_client() || p->index >= static_cast<size_t>(setup_.concurrency)) return -1;
  return static_cast<int>(p->index);
}

Endpoint ServerCluster::endpoint_for(const std::string& party, size_t n) const {
  Endpoint admin;
  {
    std::lock_guard<std::mutex> lock(mu_);
    check_node(n);
    if (node_index(party) != std::string::npos) return nodes_[n].endpoint;
    if (client_slot(party) < 0) {
      throw ClusterError(backend_ + ": unknown party '" + party + "' (nodes n1..n" + std::to_string(nodes_.size()) +
                         ", client slots c0..c" + std::to_string(setup_.concurrency - 1) + ")");
    }
    admin = members_[n].addr.admin;
    if (!proxy_) return admin;
  }
  const Endpoint link = client_links_.endpoint_for(proxy_, party, n, nodes_[n].name, admin);
  // A link opened to a member that is down refuses from the start, as the links opened before its kill do (an
  // unreachable container would otherwise be accepted and then closed: not a definite failure).
  std::lock_guard<std::mutex> lock(mu_);
  if (members_[n].killed && proxy_) proxy_->upstream_down(admin);
  return link;
}

// The party dispatch is SplitNetwork's (cluster/split_network.h): client links go to this machine's fault proxy,
// links between nodes and Sentinels come back here as peer links, for the backend's peer network.
void ServerCluster::cut(const std::string& a, const std::string& b) { links_.cut(a, b); }
void ServerCluster::heal(const std::string& a, const std::string& b) { links_.heal(a, b); }
void ServerCluster::heal_all() { links_.heal_all(); }
void ServerCluster::cut_links(const LinkPairs& pairs) { links_.cut_many(pairs); }
void ServerCluster::heal_links(const LinkPairs& pairs) { links_.heal_many(pairs); }
void ServerCluster::set_delays(const std::vector<LinkDelay>& delays) { links_.set_delays(delays); }
void ServerCluster::set_delay(const std::string& a, const std::string& b, milliseconds delay, milliseconds jitter) {
  links_.set_delay(a, b, delay, jitter);
}

void ServerCluster::require_running() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_ || stopped_) throw ClusterError(backend_ + ": not running");
  if (!setup_.network_faults) throw ClusterError(backend_ + ": this cluster runs without network faults");
}

void ServerCluster::cut_peers(const std::string& a, const std::string& b) { network_->cut(a, b); }
void ServerCluster::heal_peers(const std::string& a, const std::string& b) { network_->heal(a, b); }
void ServerCluster::heal_all_peers() { network_->heal_all(); }
void ServerCluster::delay_peers(const std::string& a, const std::string& b, milliseconds delay, milliseconds jitter) {
  network_->delay(a, b, delay, jitter);
}
void ServerCluster::cut_peers_many(const LinkPairs& pairs) { network_->cut_many(pairs); }
void ServerCluster::heal_peers_many(const LinkPairs& pairs) { network_->heal_many(pairs); }
void ServerCluster::delay_peers_many(const std::vector<LinkDelay>& delays) { network_->delays(delays); }

// ---------------------------------------------------------------------------------------------------------
// The local backend

LoopbackCluster::LoopbackCluster(ServerRun server, ClusterSetup setup)
    : ServerCluster("local cluster", server, std::move(setup), "local") {
  if (server.nodes < 1) throw ClusterError("a cluster needs at least one node");
  // Each node and Sentinel may connect from a loopback source address of its own (127.0.1.N, 127.0.2.K).
  if (server.nodes > 254) throw ClusterError("at most 254 nodes (each has a loopback source address of its own)");
  RemoteHost host;
  host.remote = std::make_shared<LocalRemote>("loopback");
  host.name = "lo";
  host.address = "127.0.0.1";
  host.bind_address = "127.0.0.1";
  host.results_in_place = true;
  host.clock_shim = clock_shim_library();
  host.power_shim = power_shim_library();
  host.can_filter = false;  // one host: the peer links are the proxy's
  host.can_delay = false;
  host.shares_harness_clock = true;
  std::vector<Placement> nodes(static_cast<size_t>(server.nodes)), sentinels(
                                                                       static_cast<size_t>(server.server->sentinels()));
  place({host}, make_proxy_peers(server.binds_source_address), nodes, sentinels);
}

LoopbackCluster::~LoopbackCluster() { stop(); }

}  // namespace lockcheck
