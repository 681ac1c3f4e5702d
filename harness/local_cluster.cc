#include "harness/local_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/filesystem.hpp>
#include <fstream>

#include "harness/redis_conn.h"

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
  o.persistence = c.persistence;
  o.redis_server = c.redis_server;
  o.nodes_dir = run_dir + "/nodes";
  return o;
}

LocalCluster::LocalCluster(LocalClusterOptions opts) : opts_(std::move(opts)) {
  if (opts_.nodes < 1) throw ClusterError("a cluster needs at least one node");
  for (int i = 0; i < opts_.nodes; ++i) {
    NodeInfo info;
    info.name = opts_.name_prefix + std::to_string(i + 1);
    info.role = NodeRole::kMaster;
    info.endpoint = Endpoint{"127.0.0.1", 0};
    info.log_path = opts_.nodes_dir + "/" + info.name + ".log";
    nodes_.push_back(info);
    data_dirs_.push_back(opts_.nodes_dir + "/" + info.name);
  }
  procs_.resize(nodes_.size());
  paused_.assign(nodes_.size(), false);
}

LocalCluster::~LocalCluster() { stop(); }

std::vector<std::string> LocalCluster::argv_for(size_t n) const {
  std::vector<std::string> argv = {
      opts_.redis_server,
      "--port", std::to_string(nodes_[n].endpoint.port),
      "--bind", "127.0.0.1",
      "--dir", data_dirs_[n],
      "--logfile", fs::absolute(nodes_[n].log_path).string(),
      "--daemonize", "no",
      "--protected-mode", "no",
      "--save", "",
  };
  switch (opts_.persistence) {
    case Persistence::kNone:
      argv.insert(argv.end(), {"--appendonly", "no"});
      break;
    case Persistence::kAofEverysec:
      argv.insert(argv.end(), {"--appendonly", "yes", "--appendfsync", "everysec"});
      break;
    case Persistence::kAofAlways:
      argv.insert(argv.end(), {"--appendonly", "yes", "--appendfsync", "always"});
      break;
  }
  return argv;
}

void LocalCluster::spawn(size_t n) {
  ProcessSpec spec;
  spec.argv = argv_for(n);
  spec.stdout_path = nodes_[n].log_path;  // anything redis-server prints before its log file is open
  spec.stderr_path = "=stdout";
  try {
    procs_[n] = std::make_unique<ChildProcess>(spec);
  } catch (const SpawnError& e) {
    throw ClusterError(std::string("cannot start node ") + nodes_[n].name + ": " + e.what());
  }
  paused_[n] = false;
  const auto deadline = std::chrono::steady_clock::now() + opts_.start_timeout;
  while (!wait_for_ping(nodes_[n].endpoint, std::chrono::milliseconds(100))) {
    if (!procs_[n]->running()) {
      procs_[n].reset();
      throw ClusterError("node " + nodes_[n].name + " exited at start; see " + nodes_[n].log_path);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      procs_[n].reset();
      throw ClusterError("node " + nodes_[n].name + " did not answer PING within " +
                         std::to_string(opts_.start_timeout.count()) + " ms; see " + nodes_[n].log_path);
    }
  }
}

void LocalCluster::start() {
  if (!find_program(opts_.redis_server)) {
    throw ClusterError("redis-server binary not found: '" + opts_.redis_server +
                       "' (install Debian's redis-server package or pass --redis-server PATH)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  boost::system::error_code ec;
  fs::create_directories(opts_.nodes_dir, ec);
  if (ec) throw ClusterError("cannot create " + opts_.nodes_dir + ": " + ec.message());
  try {
    for (size_t n = 0; n < nodes_.size(); ++n) {
      fs::create_directories(data_dirs_[n], ec);
      if (ec) throw ClusterError("cannot create " + data_dirs_[n] + ": " + ec.message());
      // A port can be taken between free_loopback_port() and the bind; try a few.
      for (int attempt = 0;; ++attempt) {
        nodes_[n].endpoint.port = free_loopback_port();
        try {
          spawn(n);
          break;
        } catch (const ClusterError&) {
          if (attempt >= 2) throw;
        }
      }
    }
  } catch (...) {
    for (auto& p : procs_) p.reset();
    throw;
  }
}

void LocalCluster::stop() noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t n = 0; n < procs_.size(); ++n) {
    if (procs_[n]) procs_[n]->kill_and_reap();
    procs_[n].reset();
    paused_[n] = false;
  }
}

void LocalCluster::kill(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (procs_.at(n)) procs_[n]->kill_and_reap();
  procs_[n].reset();
  paused_[n] = false;
}

void LocalCluster::restart(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (procs_.at(n) && procs_[n]->running()) {
    if (paused_[n]) procs_[n]->signal(SIGCONT);
    paused_[n] = false;
    return;  // already up
  }
  procs_[n].reset();
  spawn(n);
}

void LocalCluster::pause(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!procs_.at(n)) throw ClusterError("cannot pause " + nodes_[n].name + ": it is down");
  procs_[n]->signal(SIGSTOP);
  paused_[n] = true;
}

void LocalCluster::resume(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!procs_.at(n)) return;
  procs_[n]->signal(SIGCONT);
  paused_[n] = false;
}

void LocalCluster::set_clock_offset(size_t n, std::chrono::nanoseconds offset) {
  (void)n;
  (void)offset;
  throw ClusterError("clock faults need the clock shim");
}

bool LocalCluster::is_running(size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  return procs_.at(n) != nullptr && procs_[n]->running();
}

pid_t LocalCluster::pid(size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  return procs_.at(n) ? procs_[n]->pid() : -1;
}

Endpoint LocalCluster::endpoint_for(const std::string& party, size_t n) const {
  (void)party;
  return nodes_.at(n).endpoint;
}

void LocalCluster::cut(const std::string& a, const std::string& b) {
  throw ClusterError("cannot cut " + a + "<->" + b + ": network faults need the fault proxy");
}
void LocalCluster::heal(const std::string&, const std::string&) {}
void LocalCluster::heal_all() {}
void LocalCluster::set_delay(const std::string& a, const std::string& b, std::chrono::milliseconds,
                             std::chrono::milliseconds) {
  throw ClusterError("cannot delay " + a + "<->" + b + ": network faults need the fault proxy");
}

}  // namespace lockcheck
