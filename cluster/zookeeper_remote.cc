// ZooKeeper as a server kind of the Remote seam (cluster/remote_cluster.h: zookeeper_remote_kind describes it).
#include <algorithm>
#include <mutex>

#include "cluster/remote_cluster.h"
#include "cluster/tcp_probe.h"
#include "cluster/zookeeper_common.h"

namespace lockcheck {

namespace {

using std::chrono::milliseconds;

constexpr auto kZooKeeperQueryTimeout = milliseconds(1000);  // one `srvr`, as the local backend's query_timeout

class ZooKeeperKind final : public RemoteServerKind {
 public:
  ZooKeeperKind(const RunConfig& config, const RemoteClusterOptions& options)
      : timing_(zookeeper_timing(config.ttl_ms)), options_(options) {}

  // zoo.cfg (every peer at its host's address; its own entry 0.0.0.0, zookeeper_common.h says why) and myid.
  std::vector<std::pair<std::string, std::string>> files(const ServerSlot& s, const std::vector<ServerSlot>& servers,
                                                         const std::vector<RemoteHost>& hosts) const override {
    ZooKeeperMemberConfig c;
    c.data_dir = s.dir + "/data";
    c.client_listen = Endpoint{"0.0.0.0", s.info.endpoint.port};
    for (size_t m = 0; m < servers.size(); ++m) {
      const std::string& address = hosts[servers[m].host].address;
      const int port = servers[m].info.endpoint.port;
      c.quorum.push_back(Endpoint{address, zookeeper_quorum_port(port)});
      c.election.push_back(Endpoint{address, zookeeper_election_port(port)});
      if (servers[m].info.name == s.info.name) c.id = static_cast<int>(m) + 1;
    }
    c.timing = timing_;
    return {{"zoo.cfg", zookeeper_zoo_cfg(c)}, {"data/myid", std::to_string(c.id) + "\n"}};
  }

  std::vector<std::string> start_command(const ServerSlot& s, const std::vector<ServerSlot>&,
                                         const std::vector<RemoteHost>& hosts, const std::string&) const override {
    const RemoteHost& host = hosts[s.host];
    const auto program = host.programs.find("java");
    std::vector<std::string> argv = {"sh", "-c", kRemoteBackgroundScript, "sh", s.dir + "/" + pid_file(),
                                     s.dir + "/" + log_file()};
    for (auto& x : zookeeper_member_argv(program == host.programs.end() ? "java" : program->second,
                                         zookeeper_default_classpath(), s.dir + "/zoo.cfg")) {
      argv.push_back(std::move(x));
    }
    return argv;
  }
  std::string pid_file() const override { return "zookeeper.pid"; }
  std::string log_file() const override { return "zookeeper.log"; }
  std::string wipe_before_start(const ServerSlot&) const override { return ""; }  // rejoins with its data
  // The JVM is up and its four-letter words work: any answer to `srvr` (a member without a quorum answers that
  // it is not serving; a restarted member may be cut off from its peers). The ensemble's readiness is
  // after_start's.
  std::string ready_error(const Endpoint& ep) const override {
    return tcp_exchange(ep, "srvr", kZooKeeperQueryTimeout) ? "" : "its client port does not answer srvr";
  }

  void after_start(const std::vector<ServerSlot>& servers, milliseconds timeout, const std::string& hint,
                   const std::function<bool()>& stopping) const override {
    std::vector<Endpoint> all;
    for (const auto& s : servers) all.push_back(s.info.endpoint);
    {
      std::lock_guard<std::mutex> lock(mu_);
      members_ = all;
    }
    const milliseconds bound = std::max(timeout, options_.zookeeper_start_timeout);
    const std::string why = wait_until_ready([&] { return zookeeper_ready_error(all, kZooKeeperQueryTimeout); },
                                             bound, stopping, "ZooKeeper: stopping (while waiting for a leader)");
    if (why.empty()) return;
    throw ClusterError("the ZooKeeper ensemble was not ready within " + std::to_string(bound.count()) + " ms (" +
                       why + "; " + describe(timing_) + "); " + hint);
  }

  ServerKind server() const override { return ServerKind::kZooKeeper; }
  // The member (by its place among the nodes after_start saw) that says leader, asked of the running ones.
  std::optional<size_t> leader(const std::vector<Endpoint>& running, size_t nodes) const override {
    std::vector<Endpoint> members;
    {
      std::lock_guard<std::mutex> lock(mu_);
      members = members_;
    }
    std::vector<std::optional<Endpoint>> up(std::min(nodes, members.size()));
    for (size_t n = 0; n < up.size(); ++n) {
      for (const auto& r : running) {
        if (r == members[n]) up[n] = r;
      }
    }
    return zookeeper_leader(up, kZooKeeperQueryTimeout);
  }
  std::string clock_refusal(const ServerSlot& s) const override { return zookeeper_clock_refusal(s.info.name); }

 private:
  const ZooKeeperTiming timing_;
  const RemoteClusterOptions options_;
  mutable std::mutex mu_;
  mutable std::vector<Endpoint> members_;  // the nodes' endpoints, learnt by after_start, for leader()
};

}  // namespace

std::unique_ptr<RemoteServerKind> zookeeper_remote_kind(const RunConfig& config,
                                                        const RemoteClusterOptions& options) {
  return std::make_unique<ZooKeeperKind>(config, options);
}

}  // namespace lockcheck
