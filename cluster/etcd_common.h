// What every etcd backend shares (the local one, cluster/etcd_cluster.h, and the Docker and SSH ones through the
// Remote seam's etcd kind, etcd_remote_kind in cluster/remote_cluster.h): a member's command line, the
// harness's etcdctl queries and how their JSON is read (ready = one leader named by every member and every
// member healthy; the leader = the member a majority names).
//
// Ports. A member listens on two ports: clients on its endpoint's port, peers on etcd_peer_port() of it (the
// next one up, as etcd's own 2379/2380). The remote backends place one port per member (docker: 2379 in each
// container; ssh: etcd_base_port + 2 * (i / H), so that members sharing a host do not overlap).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster.h"

namespace lockcheck {

constexpr int kEtcdClientPort = 2379;  // etcd's default client port
inline int etcd_peer_port(int client_port) { return client_port + 1; }

std::string etcd_url(const Endpoint& e);  // http://host:port

// One member's command line.
struct EtcdMemberArgs {
  std::string etcd = "etcd";  // the program
  std::string name;           // n1 ...
  std::string data_dir;
  Endpoint client_listen, client_advertise, peer_listen, peer_advertise;
  std::string initial_cluster;  // etcd_initial_cluster()
  uint64_t seed = 0;            // the cluster token: lockcheck-<seed>
  int heartbeat_ms = 100;       // --heartbeat-interval (etcd's default)
  int election_ms = 1000;       // --election-timeout (etcd's default)
};
std::vector<std::string> etcd_member_argv(const EtcdMemberArgs& a);
// name1=http://peer1,name2=http://peer2,...
std::string etcd_initial_cluster(const std::vector<std::string>& names, const std::vector<Endpoint>& peers);

// `etcdctl --endpoints=... endpoint <what> -w json` run here (ETCDCTL_API=3), bounded by timeout per call. Its
// stdout ("" when it could not run; etcdctl prints the endpoints that answered even when others failed), with
// why it failed in *why.
std::string etcdctl_endpoint_json(const std::string& etcdctl, const std::vector<Endpoint>& endpoints,
                                  const std::string& what, std::chrono::milliseconds timeout, std::string* why);

// "" when every one of endpoints answers `endpoint status` naming the same elected leader and `endpoint health`
// says each is healthy; else what is missing. *member_ids (when given and ready) gets each endpoint's member id.
std::string etcd_ready_error(const std::string& etcdctl, const std::vector<Endpoint>& endpoints,
                             std::chrono::milliseconds timeout, std::vector<uint64_t>* member_ids = nullptr);

// The leader as the running members see it: asks `endpoint status` of `running` and returns the index (into
// member_ids, learnt at start) of the member a majority of cluster_size names; nullopt when none does.
std::optional<size_t> etcd_majority_leader(const std::string& etcdctl, const std::vector<Endpoint>& running,
                                           const std::vector<uint64_t>& member_ids, size_t cluster_size,
                                           std::chrono::milliseconds timeout);

// The clock shim does not reach etcd: the ClusterError text for a clock fault on member `name`.
std::string etcd_clock_refusal(const std::string& name);

}  // namespace lockcheck
