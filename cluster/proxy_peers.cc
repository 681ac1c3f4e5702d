// The loopback peer network (cluster/peer_network.h, ProxyPeers).
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "cluster/fault_proxy.h"
#include "cluster/peer_network.h"
#include "core/party.h"

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
bool pid_holds_socket(int pid, unsigned long inode) {
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

class ProxyPeers final : public PeerNetwork {
 public:
  explicit ProxyPeers(bool binds_source) : binds_source_(binds_source) {}

  void attach(FaultProxy* proxy) override {
    proxy_ = proxy;
    // Members that cannot choose their source address (a Go or Java program) are told apart by /proc; the harness's
    // own connections (and anything else) match no member and are never faulted.
    if (proxy_ && !binds_source_) {
      proxy_->set_source_classifier([this](const Endpoint& remote) { return member_owning(remote); });
    }
  }

  Endpoint advertise(const std::string& name, const std::string& label, const Endpoint& reach, bool first) override {
    if (!proxy_) return reach;
    // The shared link's label: "" for the client port (Redis nodes are named by it), the port's label otherwise.
    const std::string link_label = label == "client" ? "" : label;
    try {
      if (first) {
        if (binds_source_) proxy_->name_source(source_address(name), name);
        const Endpoint at = proxy_->add_shared_link(name, reach, link_label);
        std::lock_guard<std::mutex> lock(mu_);
        shared_[{name, label}] = at;
        return at;
      }
      proxy_->set_upstream("*" + link_label, name, reach);
      std::lock_guard<std::mutex> lock(mu_);
      return shared_.at({name, label});
    } catch (const std::exception& e) {
      throw ClusterError("cannot open the shared proxy link to " + name + "'s " + label + " port: " + e.what());
    }
  }

  std::string source_address(const std::string& name) const override {
    if (!binds_source_) return "";
    const auto p = Party::parse(name);
    if (!p || (!p->is_node() && !p->is_sentinel())) return "";
    return (p->is_node() ? "127.0.1." : "127.0.2.") + std::to_string(p->index + 1);
  }

  void member_pid(const std::string& name, int pid) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (pid > 0) {
      pids_[name] = pid;
    } else {
      pids_.erase(name);
    }
  }

  void cut(const std::string& a, const std::string& b) override { apply("cut " + a + "<->" + b, [&] { proxy_->cut(a, b); }); }
  void heal(const std::string& a, const std::string& b) override {
    apply("heal " + a + "<->" + b, [&] { proxy_->heal(a, b); });
  }
  void heal_all() override {
    // The proxy's heal_all also heals the client links: SplitNetwork heals those itself, and healing twice is
    // harmless.
    if (proxy_) apply("heal_all", [&] { proxy_->heal_all(); });
  }
  void delay(const std::string& a, const std::string& b, std::chrono::milliseconds d,
             std::chrono::milliseconds jitter) override {
    apply("delay " + a + "<->" + b, [&] { proxy_->set_delay(a, b, d, jitter); });
  }

  // Many links in one proxy call (one bounded wait), as a partition is one fault.
  void cut_many(const LinkPairs& pairs) override {
    if (!pairs.empty()) apply(describe("cut", pairs.size(), pairs[0].first, pairs[0].second), [&] { proxy_->cut_many(pairs); });
  }
  void heal_many(const LinkPairs& pairs) override {
    if (!pairs.empty()) apply(describe("heal", pairs.size(), pairs[0].first, pairs[0].second), [&] { proxy_->heal_many(pairs); });
  }
  void delays(const std::vector<LinkDelay>& d) override {
    if (!d.empty()) apply(describe("delay", d.size(), d[0].a, d[0].b), [&] { proxy_->set_delays(d); });
  }

  Abilities abilities() const override { return Abilities::basic(); }

 private:
  // "cut 3 links (n1<->n2, ...)": a batch in an error message.
  static std::string describe(const char* verb, size_t n, const std::string& a, const std::string& b) {
    return std::string(verb) + " " + std::to_string(n) + " link" + (n == 1 ? "" : "s") + " (" + a + "<->" + b +
           (n > 1 ? ", ..." : "") + ")";
  }

  template <typename F>
  void apply(const std::string& what, F f) {
    if (!proxy_) throw ClusterError(what + ": this cluster runs without its fault proxy");
    try {
      f();
    } catch (const std::exception& e) {
      throw ClusterError(what + ": " + e.what());
    }
  }

  // The member that owns the TCP socket whose local end is `source` (127.0.0.1:port), by /proc; "" for none.
  // Runs on the proxy thread.
  std::string member_owning(const Endpoint& source) const {
    std::map<std::string, int> pids;
    {
      std::lock_guard<std::mutex> lock(mu_);
      pids = pids_;
    }
    for (const unsigned long inode : socket_inodes(source)) {
      for (const auto& [name, pid] : pids) {
        if (pid_holds_socket(pid, inode)) return name;
      }
    }
    return "";
  }

  const bool binds_source_;
  FaultProxy* proxy_ = nullptr;
  mutable std::mutex mu_;
  std::map<std::string, int> pids_;
  std::map<std::pair<std::string, std::string>, Endpoint> shared_;
};

}  // namespace

std::unique_ptr<PeerNetwork> make_proxy_peers(bool binds_source) { return std::make_unique<ProxyPeers>(binds_source); }

}  // namespace lockcheck
