// etcd as a server kind of the Remote seam (cluster/remote_cluster.h: etcd_remote_kind describes it).
#include <mutex>
#include <thread>

#include "cluster/etcd_common.h"
#include "cluster/tcp_probe.h"
#include "cluster/remote_cluster.h"
#include "cluster/server_builds.h"

namespace lockcheck {

namespace {

using std::chrono::milliseconds;

constexpr auto kEtcdQueryTimeout = milliseconds(2000);  // one etcdctl call

class EtcdKind final : public RemoteServerKind {
 public:
  EtcdKind(const RunConfig& config, const RemoteClusterOptions& options) : config_(config), options_(options) {}

  std::vector<std::pair<std::string, std::string>> files(const ServerSlot&, const std::vector<ServerSlot>&,
                                                         const std::vector<RemoteHost>&) const override {
    return {};  // everything is on the command line
  }

  std::vector<std::string> start_command(const ServerSlot& s, const std::vector<ServerSlot>& servers,
                                         const std::vector<RemoteHost>& hosts, const std::string&) const override {
    std::vector<std::string> names;
    std::vector<Endpoint> peers;
    for (const auto& m : servers) {
      names.push_back(m.info.name);
      peers.push_back(peer_of(m, hosts));
    }
    const RemoteHost& host = hosts[s.host];
    const auto program = host.programs.find("etcd");
    EtcdMemberArgs a;
    a.etcd = program == host.programs.end() ? "etcd" : program->second;
    if (!options_.etcd_upload.empty()) {
      a.etcd = s.dir.substr(0, s.dir.rfind('/')) + "/etcd";  // uploaded with the host's folder (setup_host)
    }
    a.name = s.info.name;
    a.data_dir = s.dir + "/etcd";
    a.client_listen = Endpoint{"0.0.0.0", s.info.endpoint.port};
    a.client_advertise = Endpoint{host.address, s.info.endpoint.port};
    a.peer_listen = Endpoint{"0.0.0.0", etcd_peer_port(s.info.endpoint.port)};
    a.peer_advertise = peer_of(s, hosts);
    a.initial_cluster = etcd_initial_cluster(names, peers);
    a.seed = config_.seed;
    std::vector<std::string> argv = {"sh", "-c", kRemoteBackgroundScript, "sh", s.dir + "/" + pid_file(),
                                     s.dir + "/" + log_file()};
    for (auto& x : etcd_member_argv(a)) argv.push_back(std::move(x));
    return argv;
  }
  std::string pid_file() const override { return "etcd.pid"; }
  std::string log_file() const override { return "etcd.log"; }
  std::string wipe_before_start(const ServerSlot&) const override { return ""; }  // a restart rejoins with its data
  // A member cannot answer requests alone: ready is its client port accepting connections (a restarted member
  // may be cut off from its peers, as on the local backend); the cluster's readiness is after_start's.
  std::string ready_error(const Endpoint& ep) const override {
    return port_accepts(ep, milliseconds(300)) ? "" : "its client port does not accept connections";
  }

  void after_start(const std::vector<ServerSlot>& servers, milliseconds timeout, const std::string& hint,
                   const std::function<bool()>& stopping) const override {
    std::vector<Endpoint> all;
    for (const auto& s : servers) all.push_back(s.info.endpoint);
    std::vector<uint64_t> ids;
    const std::string why = wait_until_ready(
        [&] { return etcd_ready_error(options_.etcdctl, all, kEtcdQueryTimeout, &ids); }, timeout, stopping,
        "etcd: stopping (while waiting for a leader)");
    if (why.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      member_ids_ = ids;
      return;
    }
    throw ClusterError("the etcd cluster was not ready within " + std::to_string(timeout.count()) + " ms (" + why +
                       "); " + hint);
  }

  ServerKind server() const override { return ServerKind::kEtcd; }
  std::optional<size_t> leader(const std::vector<Endpoint>& running, size_t nodes) const override {
    std::vector<uint64_t> ids;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ids = member_ids_;
    }
    return etcd_majority_leader(options_.etcdctl, running, ids, nodes, kEtcdQueryTimeout);
  }
  std::string clock_refusal(const ServerSlot& s) const override { return etcd_clock_refusal(s.info.name); }

 private:
  static Endpoint peer_of(const ServerSlot& s, const std::vector<RemoteHost>& hosts) {
    return Endpoint{hosts[s.host].address, etcd_peer_port(s.info.endpoint.port)};
  }

  const RunConfig config_;
  const RemoteClusterOptions options_;
  mutable std::mutex mu_;
  mutable std::vector<uint64_t> member_ids_;  // learnt by after_start, for leader()
};

}  // namespace

RemoteClusterOptions with_server_build(RemoteClusterOptions options, const RunConfig& config, bool ship_server) {
  if (config.server != ServerKind::kEtcd) return options;
  if (config.cluster == "ssh" && config.server_version.empty()) return options;
  const ServerBuild build = resolve_server_build(config);
  options.etcdctl = build.ctl;
  if (ship_server) options.etcd_upload = build.server;
  return options;
}

std::unique_ptr<RemoteServerKind> etcd_remote_kind(const RunConfig& config, const RemoteClusterOptions& options) {
  return std::make_unique<EtcdKind>(config, options);
}

}  // namespace lockcheck
