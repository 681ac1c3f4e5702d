// The peer network of hosts with addresses of their own (cluster/peer_network.h, HostFirewall): docker
// containers and ssh hosts.
//   cut      iptables DROP by the peer host's address in the run's chain (made on the first cut, jumped to from
//            INPUT and OUTPUT), on each side's host that can filter (RemoteHost::can_filter). Rules are per host:
//            two servers on one host cannot be cut from each other (ClusterError); neither side able to filter:
//            ClusterError.
//   delay    tc netem on both hosts (a prio root qdisc whose 4th band is a netem, one u32 filter per delayed
//            peer address; one delay per host, the largest asked for); a host without it (can_delay false, or
//            no sch_netem): ClusterError "delay not available on HOST".
// teardown() removes the chain and the qdiscs from every host that is not ephemeral.
// Thread-safety: one internal mutex.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cluster/peer_network.h"
#include "cluster/remote.h"

namespace lockcheck {

class HostFirewall final : public PeerNetwork {
 public:
  // backend: its name in messages ("ssh cluster"); hosts: the cluster's (outliving this object, addresses set
  // before the first fault); host_of: the host index of a server party; chain: the iptables chain (at most 28
  // characters); call_timeout: the bound on each remote call.
  HostFirewall(std::string backend, const std::vector<RemoteHost>& hosts,
               std::function<size_t(const std::string&)> host_of, std::string chain,
               std::chrono::milliseconds call_timeout);

  Endpoint advertise(const std::string& name, const std::string& label, const Endpoint& reach, bool first) override;
  void cut(const std::string& a, const std::string& b) override;
  void heal(const std::string& a, const std::string& b) override;
  void heal_all() override;
  void delay(const std::string& a, const std::string& b, std::chrono::milliseconds delay,
             std::chrono::milliseconds jitter) override;
  void teardown() noexcept override;
  Abilities abilities() const override;

  const std::string& chain() const { return chain_; }

 private:
  struct HostState {
    bool chain_made = false;
    std::set<std::string> dropped;                              // peer addresses in the chain now
    std::string netem_dev;                                      // interface with our root qdisc ("" none)
    std::map<std::string, std::pair<int64_t, int64_t>> delays;  // peer address -> (delay, jitter) ms
  };
  std::string check(size_t h, const std::vector<std::string>& argv, bool privileged = false,
                    const std::string& input = "") const;
  bool attempt(size_t h, const std::vector<std::string>& argv, bool privileged = false, std::string* err = nullptr,
               const std::string& input = "") const;
  void sync_rules(size_t h);   // REQUIRES: mu_ held
  void sync_delays(size_t h);  // REQUIRES: mu_ held
  bool used(size_t h) const;   // some cut or delay touched it

  const std::string backend_;
  const std::vector<RemoteHost>& hosts_;
  const std::function<size_t(const std::string&)> host_of_;
  const std::string chain_;
  const std::chrono::milliseconds call_timeout_;
  std::mutex mu_;
  std::vector<HostState> state_;
  std::set<std::pair<std::string, std::string>> cuts_;
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> delays_;
};

}  // namespace lockcheck
