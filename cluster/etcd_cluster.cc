#include "cluster/etcd_cluster.h"

#include "cluster/etcd_common.h"
#include "cluster/server_builds.h"
#include "sys/process.h"

namespace lockcheck {

EtcdClusterOptions EtcdClusterOptions::from(const RunConfig& c, const std::string& run_dir) {
  EtcdClusterOptions o;
  o.nodes = c.nodes;
  o.nodes_dir = run_dir + "/nodes";
  o.seed = c.seed;
  const ServerBuild build = resolve_server_build(c);  // --server-version (ConfigError when it is not here)
  o.etcd = build.server;
  o.etcdctl = build.ctl;
  return o;
}


EtcdCluster::EtcdCluster(EtcdClusterOptions opts)
    : LocalEnsemble(opts, "etcd", {"peer"}), etcd_(std::move(opts)) {
  member_ids_.assign(nodes_.size(), 0);
}

void EtcdCluster::check_programs() const {
  if (!find_program(etcd_.etcd)) {
    throw ClusterError("etcd binary not found: '" + etcd_.etcd + "' (--server etcd needs Debian's etcd-server package)");
  }
  if (!find_program(etcd_.etcdctl)) {
    throw ClusterError("etcdctl not found: '" + etcd_.etcdctl +
                       "' (--server etcd asks it whether the cluster is ready: Debian's etcd-client package)");
  }
}

std::vector<std::string> EtcdCluster::member_argv(size_t n) const {
  std::vector<std::string> names;
  std::vector<Endpoint> peers;
  for (size_t m = 0; m < nodes_.size(); ++m) {
    names.push_back(nodes_[m].name);
    peers.push_back(peer_advertise_[m][0]);
  }
  EtcdMemberArgs a;
  a.etcd = etcd_.etcd;
  a.name = nodes_[n].name;
  a.data_dir = data_dirs_[n] + "/data";
  a.client_listen = a.client_advertise = nodes_[n].listen;
  a.peer_listen = peer_listen_[n][0];
  a.peer_advertise = peer_advertise_[n][0];
  a.initial_cluster = etcd_initial_cluster(names, peers);
  a.seed = etcd_.seed;
  a.heartbeat_ms = etcd_.heartbeat_ms;
  a.election_ms = etcd_.election_ms;
  return etcd_member_argv(a);
}

std::string EtcdCluster::ready_error() {
  std::vector<Endpoint> all;
  for (const auto& n : nodes_) all.push_back(n.listen);
  return etcd_ready_error(etcd_.etcdctl, all, etcd_.query_timeout, &member_ids_);
}

std::optional<size_t> EtcdCluster::leader() const {
  std::vector<Endpoint> up;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (is_running(n)) up.push_back(nodes_[n].listen);
  }
  return etcd_majority_leader(etcd_.etcdctl, up, member_ids_, nodes_.size(), etcd_.query_timeout);
}

std::string EtcdCluster::clock_refusal(size_t n) const { return etcd_clock_refusal(nodes_[n].name); }

}  // namespace lockcheck
