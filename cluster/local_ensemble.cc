#include "cluster/local_ensemble.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <unistd.h>

#include <boost/filesystem.hpp>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "cluster/local_cluster.h"
#include "cluster/tcp_probe.h"
#include "core/assert.h"

namespace fs = boost::filesystem;

namespace lockcheck {

namespace {

// The inodes of the IPv4 TCP sockets whose local end is source, from /proc/net/tcp. Entries without an inode
// (TIME_WAIT: a closed socket that used the same port before) are skipped: on a busy machine an ephemeral port
// comes back while its old TIME_WAIT entry is still listed, and taking that entry left a member's connection
// unclassified (never faulted). Linux may also give one ephemeral port to two live connections to different
// destinations: every live match is returned.
std::vector<unsigned long> socket_inodes(const Endpoint& source) {
  std::vector<unsigned long> inodes;
  in_addr a{};
  if (::inet_pton(AF_INET, source.host.c_str(), &a) != 1) return inodes;
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
    if (local == want && inode != 0) inodes.push_back(inode);
  }
  return inodes;
}

// True when process pid has the socket with that inode open.
bool pid_holds_socket(pid_t pid, unsigned long inode) {
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

// True when the log says a port was taken (etcd: "address already in use"; Java: "Address already in use").
bool log_says_port_taken(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("ddress already in use") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

LocalEnsemble::LocalEnsemble(LocalEnsembleOptions opts, std::string kind, std::vector<std::string> peer_labels)
    : opts_(std::move(opts)), kind_(std::move(kind)), peer_labels_(std::move(peer_labels)) {
  if (opts_.nodes < 1) throw ClusterError("a " + kind_ + " ensemble needs at least one member");
  if (opts_.nodes > 15) throw ClusterError("at most 15 " + kind_ + " members");
  for (int i = 0; i < opts_.nodes; ++i) {
    NodeInfo info;
    info.name = "n" + std::to_string(i + 1);
    info.role = NodeRole::kMaster;  // a member; which one leads changes: leader()
    info.log_path = opts_.nodes_dir + "/" + info.name + ".log";
    nodes_.push_back(info);
    data_dirs_.push_back(fs::absolute(opts_.nodes_dir + "/" + info.name).string());
  }
  members_.resize(nodes_.size());
  pids_.assign(nodes_.size(), -1);
  peer_listen_.assign(nodes_.size(), std::vector<Endpoint>(peer_labels_.size()));
  peer_advertise_.assign(nodes_.size(), std::vector<Endpoint>(peer_labels_.size()));
  respawns_.assign(nodes_.size(), 0);
}

LocalEnsemble::~LocalEnsemble() { stop(); }

void LocalEnsemble::spawn(size_t n) {
  write_member_files(n);
  ProcessSpec spec;
  spec.argv = member_argv(n);
  spec.stdout_path = nodes_[n].log_path;
  spec.stderr_path = "=stdout";
  const pid_t pid = members_.start(n, spec, kind_ + " member " + nodes_[n].name).pid();
  std::lock_guard<std::mutex> lock(pids_mu_);
  pids_[n] = pid;
}

void LocalEnsemble::place_ports(size_t n) {
  nodes_[n].listen = Endpoint{"127.0.0.1", free_loopback_port()};
  nodes_[n].endpoint = nodes_[n].listen;  // the harness's own queries go direct
  for (size_t k = 0; k < peer_labels_.size(); ++k) {
    const bool first = peer_advertise_[n][k].port == 0;
    bool clash = true;
    while (clash) {
      peer_listen_[n][k] = Endpoint{"127.0.0.1", free_loopback_port()};
      clash = peer_listen_[n][k].port == nodes_[n].listen.port;
      for (size_t j = 0; j < k; ++j) clash = clash || peer_listen_[n][k].port == peer_listen_[n][j].port;
    }
    if (!proxy_) {
      peer_advertise_[n][k] = peer_listen_[n][k];
      continue;
    }
    try {
      if (first) {
        peer_advertise_[n][k] = proxy_->add_shared_link(nodes_[n].name, peer_listen_[n][k], peer_labels_[k]);
      } else {
        proxy_->set_upstream("*" + peer_labels_[k], nodes_[n].name, peer_listen_[n][k]);
      }
    } catch (const std::exception& e) {
      throw ClusterError("cannot open the shared proxy link to " + nodes_[n].name + "'s " + peer_labels_[k] +
                         " port: " + e.what());
    }
  }
}

void LocalEnsemble::wait_until_ready() {
  const auto deadline = std::chrono::steady_clock::now() + opts_.start_timeout;
  std::string why = "no answer yet";
  while (std::chrono::steady_clock::now() < deadline) {
    for (size_t n = 0; n < nodes_.size(); ++n) {
      if (members_.running(n)) continue;
      // A port drawn free can be taken before the member binds it (another run starting at the same time): its
      // peers name it by its proxy links, so it can start again on other ports, twice at most.
      if (proxy_ && respawns_[n] < 2 && log_says_port_taken(nodes_[n].log_path)) {
        ++respawns_[n];
        place_ports(n);
        spawn(n);
        continue;
      }
      throw ClusterError(kind_ + " member " + nodes_[n].name + " exited at start; see " + nodes_[n].log_path);
    }
    why = ready_error();
    if (why.empty()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  throw ClusterError("the " + kind_ + " ensemble was not ready within " + std::to_string(opts_.start_timeout.count()) +
                     " ms (" + why + "); see the logs under " + opts_.nodes_dir);
}

void LocalEnsemble::start() {
  check_programs();
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
    // Ports first: every member names every peer.
    for (size_t n = 0; n < nodes_.size(); ++n) {
      fs::create_directories(data_dirs_[n], ec);
      if (ec) throw ClusterError("cannot create " + data_dirs_[n] + ": " + ec.message());
      place_ports(n);
    }
    for (size_t n = 0; n < nodes_.size(); ++n) spawn(n);
    wait_until_ready();
  } catch (...) {
    members_.kill_all();
    std::lock_guard<std::mutex> pids_lock(pids_mu_);
    pids_.assign(nodes_.size(), -1);
    throw;
  }
}

void LocalEnsemble::stop() noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  members_.kill_all();
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

void LocalEnsemble::kill(size_t n) {
  LOCKCHECK_ASSERT(n < nodes_.size(), "node " + std::to_string(n) + " of " + std::to_string(nodes_.size()));
  std::lock_guard<std::mutex> lock(mu_);
  members_.kill(n);
  {
    std::lock_guard<std::mutex> pids_lock(pids_mu_);
    pids_[n] = -1;
  }
  if (proxy_) {
    proxy_->upstream_down(nodes_[n].listen);
    for (const auto& p : peer_listen_[n]) proxy_->upstream_down(p);
  }
}

void LocalEnsemble::restart(size_t n) {
  LOCKCHECK_ASSERT(n < nodes_.size(), "node " + std::to_string(n) + " of " + std::to_string(nodes_.size()));
  std::lock_guard<std::mutex> lock(mu_);
  if (members_.continue_if_running(n)) return;  // already up
  spawn(n);
  const auto deadline = std::chrono::steady_clock::now() + opts_.restart_timeout;
  while (!port_accepts(nodes_[n].listen, std::chrono::milliseconds(100))) {
    if (!members_.running(n) || std::chrono::steady_clock::now() > deadline) {
      const bool exited = !members_.running(n);
      members_.kill(n);
      throw ClusterError(kind_ + " member " + nodes_[n].name +
                         (exited ? " exited at restart"
                                 : " did not listen within " + std::to_string(opts_.restart_timeout.count()) +
                                       " ms of its restart") +
                         "; see " + nodes_[n].log_path);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (proxy_) {
    proxy_->upstream_up(nodes_[n].listen);
    for (const auto& p : peer_listen_[n]) proxy_->upstream_up(p);
  }
}

void LocalEnsemble::pause(size_t n) {
  LOCKCHECK_ASSERT(n < nodes_.size(), "node " + std::to_string(n) + " of " + std::to_string(nodes_.size()));
  std::lock_guard<std::mutex> lock(mu_);
  members_.pause(n, nodes_[n].name);
}

void LocalEnsemble::resume(size_t n) {
  LOCKCHECK_ASSERT(n < nodes_.size(), "node " + std::to_string(n) + " of " + std::to_string(nodes_.size()));
  std::lock_guard<std::mutex> lock(mu_);
  members_.resume(n);
}

void LocalEnsemble::set_clock_offset(size_t n, std::chrono::nanoseconds) {
  LOCKCHECK_ASSERT(n < nodes_.size(), "node " + std::to_string(n) + " of " + std::to_string(nodes_.size()));
  throw ClusterError(clock_refusal(n));
}

bool LocalEnsemble::is_running(size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  return members_.running(n);
}

pid_t LocalEnsemble::pid(size_t n) const {
  std::lock_guard<std::mutex> lock(pids_mu_);
  return pids_.at(n);
}

std::string LocalEnsemble::member_owning(const Endpoint& source) const {
  std::vector<pid_t> pids;
  {
    std::lock_guard<std::mutex> lock(pids_mu_);
    pids = pids_;
  }
  for (const unsigned long inode : socket_inodes(source)) {
    for (size_t n = 0; n < pids.size(); ++n) {
      if (pids[n] > 0 && pid_holds_socket(pids[n], inode)) return nodes_[n].name;
    }
  }
  return "";
}

}  // namespace lockcheck
