#include "cluster/host_firewall.h"

#include <algorithm>
#include <iostream>
#include <sstream>

namespace lockcheck {

using std::chrono::milliseconds;

HostFirewall::HostFirewall(std::string backend, const std::vector<RemoteHost>& hosts,
                           std::function<size_t(const std::string&)> host_of, std::string chain,
                           milliseconds call_timeout)
    : backend_(std::move(backend)),
      hosts_(hosts),
      host_of_(std::move(host_of)),
      chain_(std::move(chain)),
      call_timeout_(call_timeout) {}

Endpoint HostFirewall::advertise(const std::string&, const std::string&, const Endpoint& reach, bool) { return reach; }

Abilities HostFirewall::abilities() const {
  Abilities a = Abilities::basic();
  bool filter = false, delay = false;
  for (const auto& h : hosts_) {
    filter = filter || h.can_filter;
    delay = delay || h.can_delay;
  }
  if (!filter) a.refuse(Ability::kCutPeers, "no host of the " + backend_ + " can load iptables rules");
  if (!delay) a.refuse(Ability::kDelayPeers, "no host of the " + backend_ + " has tc netem");
  return a;
}

std::string HostFirewall::check(size_t h, const std::vector<std::string>& argv, bool privileged,
                                const std::string& input) const {
  return remote_check(*hosts_[h].remote, argv, RemoteCall{privileged, input, call_timeout_}, backend_);
}

bool HostFirewall::attempt(size_t h, const std::vector<std::string>& argv, bool privileged, std::string* err,
                           const std::string& input) const {
  return remote_try(*hosts_[h].remote, argv, RemoteCall{privileged, input, call_timeout_}, err);
}

bool HostFirewall::used(size_t h) const {
  return h < state_.size() && (state_[h].chain_made || !state_[h].netem_dev.empty());
}

// Makes host h's chain drop exactly the peers it is cut from. The chain (and its jumps) is made on first use;
// iptables-restore --noflush with the chain declared replaces its rules in one step.
void HostFirewall::sync_rules(size_t h) {
  HostState& st = state_[h];
  if (!hosts_[h].can_filter) return;
  std::set<std::string> want;
  for (const auto& [a, b] : cuts_) {
    const size_t ha = host_of_(a), hb = host_of_(b);
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

void HostFirewall::cut(const std::string& a, const std::string& b) {
  std::lock_guard<std::mutex> lock(mu_);
  state_.resize(hosts_.size());
  const size_t ha = host_of_(a), hb = host_of_(b);
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

void HostFirewall::heal(const std::string& a, const std::string& b) {
  std::lock_guard<std::mutex> lock(mu_);
  state_.resize(hosts_.size());
  const size_t ha = host_of_(a), hb = host_of_(b);
  cuts_.erase(std::minmax(a, b));
  delays_.erase(std::minmax(a, b));
  for_each_at_once(std::vector<size_t>{ha, hb}, [this](size_t h) {
    sync_rules(h);
    sync_delays(h);
  });
}

void HostFirewall::heal_all() {
  std::lock_guard<std::mutex> lock(mu_);
  state_.resize(hosts_.size());
  cuts_.clear();
  delays_.clear();
  std::vector<size_t> touched;
  for (size_t h = 0; h < hosts_.size(); ++h) {
    if (used(h)) touched.push_back(h);
  }
  for_each_at_once(touched, [this](size_t h) {
    sync_rules(h);
    sync_delays(h);
  });
}

// Host h delays what it sends to its delayed peers: a prio root qdisc whose 4th band is a netem, and one u32
// filter per peer address into that band. One delay per host (the largest asked for). No delays: no qdisc.
void HostFirewall::sync_delays(size_t h) {
  HostState& st = state_[h];
  std::map<std::string, std::pair<int64_t, int64_t>> want;
  for (const auto& [pair, d] : delays_) {
    const size_t ha = host_of_(pair.first), hb = host_of_(pair.second);
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

void HostFirewall::delay(const std::string& a, const std::string& b, milliseconds d, milliseconds jitter) {
  std::lock_guard<std::mutex> lock(mu_);
  state_.resize(hosts_.size());
  const size_t ha = host_of_(a), hb = host_of_(b);
  const bool remove = d.count() == 0 && jitter.count() == 0;
  if (remove && !delays_.count(std::minmax(a, b))) return;  // nothing to remove
  if (ha == hb) throw ClusterError(backend_ + ": cannot delay " + a + " and " + b + ": both run on one host");
  for (size_t h : {ha, hb}) {
    if (!remove && !hosts_[h].can_delay) {
      throw ClusterError(backend_ + ": delay not available on " + hosts_[h].name + " (between " + a + " and " + b +
                         ": it needs tc netem there)");
    }
  }
  if (remove) {
    delays_.erase(std::minmax(a, b));
  } else {
    delays_[std::minmax(a, b)] = {d.count(), jitter.count()};
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
    delays_.erase(std::minmax(a, b));
    throw ClusterError(error);
  }
}

namespace {

// Teardown: $1 the run's iptables chain ("" none), $2 the interface with our root qdisc ("" none). Fails when a
// removal failed.
constexpr const char* kFirewallTeardownScript =
    "c=$1; dev=$2; ok=0; "
    "if [ -n \"$c\" ]; then iptables -D INPUT -j \"$c\"; iptables -D OUTPUT -j \"$c\"; "
    "iptables -F \"$c\" && iptables -X \"$c\" || ok=1; fi; "
    "if [ -n \"$dev\" ]; then tc qdisc del dev \"$dev\" root || ok=1; fi; exit $ok";

}  // namespace

void HostFirewall::teardown() noexcept {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<size_t> touched;
    for (size_t h = 0; h < state_.size(); ++h) {
      if (used(h) && !hosts_[h].ephemeral) touched.push_back(h);
    }
    for_each_at_once(touched, [this](size_t h) {
      std::string err;
      if (!attempt(h, {"sh", "-c", kFirewallTeardownScript, "sh", state_[h].chain_made ? chain_ : "",
                       state_[h].netem_dev},
                   true, &err)) {
        std::cerr << "lockcheck: " << backend_ << " teardown: " << err << "\n";
      }
      state_[h] = HostState{};
    });
    cuts_.clear();
    delays_.clear();
  } catch (const std::exception& e) {
    std::cerr << "lockcheck: " << backend_ << " teardown: " << e.what() << "\n";
  }
}

}  // namespace lockcheck
