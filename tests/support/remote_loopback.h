// The cluster's remote path (what docker and ssh hosts get: the run's folder and the shims uploaded into a work
// folder, the servers started by the transports' shell scripts, the logs fetched and the folder removed at stop)
// with this machine as its one host, through LocalRemote: no root, Docker or sshd (no iptables, no tc: the peer
// network refuses cuts between servers, which one host could not make anyway).
#pragma once

#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "cluster/host_firewall.h"
#include "cluster/server_cluster.h"
#include "tests/support/local_cluster.h"

namespace lockcheck {
namespace testing_util {

// A Remote that is this machine, but starts, signals and kills its servers as every transport does: through the
// shared scripts (the servers are not its children).
class ScriptedLocalRemote final : public Remote {
 public:
  std::string where() const override { return local_.where(); }
  CommandResult exec(const std::vector<std::string>& argv, const RemoteCall& call) const override {
    return local_.exec(argv, call);
  }
  void upload(const std::string& from, const std::string& to, std::chrono::milliseconds t) const override {
    local_.upload(from, to, t);
  }
  void download(const std::string& from, const std::string& to, std::chrono::milliseconds t) const override {
    local_.download(from, to, t);
  }

 private:
  LocalRemote local_;
};

class RemoteLoopbackCluster final : public ServerCluster {
 public:
  // The members of s on ports drawn free now, their folders under work_dir/lockcheck-<id>/.
  RemoteLoopbackCluster(const LocalClusterSpec& s, const std::string& run_dir, const std::string& work_dir)
      : ServerCluster("loopback cluster", plan_server_run(local_cluster_plan(s)), setup_of(s, run_dir),
                      "t" + std::to_string(::getpid())) {
    RemoteHost host;
    host.remote = std::make_shared<ScriptedLocalRemote>();
    host.name = "lo";
    host.address = "127.0.0.1";
    host.work_dir = work_dir;
    host.can_filter = false;
    host.can_delay = false;
    host.shares_harness_clock = true;
    std::vector<Placement> nodes;
    for (int n = 0; n < s.nodes; ++n) {
      Placement p;
      for (const auto& port : server().ports(NodeRole::kMaster)) p.ports[port.label] = free_loopback_port();
      nodes.push_back(p);
    }
    auto firewall = std::make_unique<HostFirewall>(backend_, hosts_, [this](const std::string& party) {
      return party_host(party);
    }, "LC-test", setup_.call_timeout);
    place({host}, std::move(firewall), nodes, {});
  }
  ~RemoteLoopbackCluster() override { stop(); }

 private:
  static ClusterSetup setup_of(const LocalClusterSpec& s, const std::string& run_dir) {
    ClusterSetup c;
    c.run_dir = run_dir;
    c.concurrency = s.concurrency;
    c.seed = s.seed;
    c.power_shim = s.power_shim;
    c.clock_shim = s.clock_shim;
    return c;
  }
};

}  // namespace testing_util
}  // namespace lockcheck
