#include "cluster/etcd_common.h"

#include <set>

#include <nlohmann/json.hpp>

#include "sys/process.h"

namespace lockcheck {

std::string etcd_url(const Endpoint& e) { return "http://" + e.host + ":" + std::to_string(e.port); }

std::string etcd_initial_cluster(const std::vector<std::string>& names, const std::vector<Endpoint>& peers) {
  std::string out;
  for (size_t m = 0; m < names.size() && m < peers.size(); ++m) {
    out += (m ? "," : "") + names[m] + "=" + etcd_url(peers[m]);
  }
  return out;
}

std::vector<std::string> etcd_member_argv(const EtcdMemberArgs& a) {
  return {
      a.etcd,
      "--name",
      a.name,
      "--data-dir",
      a.data_dir,
      "--listen-client-urls",
      etcd_url(a.client_listen),
      "--advertise-client-urls",
      etcd_url(a.client_advertise),
      "--listen-peer-urls",
      etcd_url(a.peer_listen),
      "--initial-advertise-peer-urls",
      etcd_url(a.peer_advertise),
      "--initial-cluster",
      a.initial_cluster,
      "--initial-cluster-state",
      "new",  // ignored once the data dir exists (a restart rejoins as itself)
      "--initial-cluster-token",
      "lockcheck-" + std::to_string(a.seed),
      "--heartbeat-interval",
      std::to_string(a.heartbeat_ms),
      "--election-timeout",
      std::to_string(a.election_ms),
      "--logger",
      "zap",
      "--log-outputs",
      "stderr",
  };
}

std::string etcdctl_endpoint_json(const std::string& etcdctl, const std::vector<Endpoint>& endpoints,
                                  const std::string& what, std::chrono::milliseconds timeout, std::string* why) {
  std::string list;
  for (const auto& e : endpoints) list += (list.empty() ? "" : ",") + e.str();
  const std::vector<std::string> argv = {etcdctl,
                                         "--endpoints=" + list,
                                         "--dial-timeout=" + std::to_string(timeout.count()) + "ms",
                                         "--command-timeout=" + std::to_string(timeout.count()) + "ms",
                                         "endpoint",
                                         what,
                                         "-w",
                                         "json"};
  CommandResult r;
  try {
    r = run_command(argv, timeout * 2 + std::chrono::milliseconds(3000), {{"ETCDCTL_API", "3"}});
  } catch (const SpawnError& e) {
    if (why) *why = e.what();
    return "";
  }
  if (!r.ok() && why) *why = r.timed_out ? "etcdctl timed out" : r.err.substr(0, 300);
  return r.out;
}

std::string etcd_ready_error(const std::string& etcdctl, const std::vector<Endpoint>& endpoints,
                             std::chrono::milliseconds timeout, std::vector<uint64_t>* member_ids) {
  std::string err;
  const auto status = nlohmann::json::parse(etcdctl_endpoint_json(etcdctl, endpoints, "status", timeout, &err),
                                            nullptr, false);
  std::map<std::string, uint64_t> member_of;  // endpoint -> member id
  std::set<uint64_t> leaders;
  if (status.is_array()) {
    for (const auto& s : status) {
      try {
        member_of[s.at("Endpoint").get<std::string>()] = s.at("Status").at("header").at("member_id").get<uint64_t>();
        leaders.insert(s.at("Status").at("leader").get<uint64_t>());
      } catch (const nlohmann::json::exception&) {
      }
    }
  }
  if (member_of.size() != endpoints.size() || leaders.size() != 1 || *leaders.begin() == 0) {
    return "status: " + std::to_string(member_of.size()) + " of " + std::to_string(endpoints.size()) +
           " members answered, leaders named: " + std::to_string(leaders.size()) + (err.empty() ? "" : "; " + err);
  }
  const auto health =
      nlohmann::json::parse(etcdctl_endpoint_json(etcdctl, endpoints, "health", timeout, &err), nullptr, false);
  size_t healthy = 0;
  if (health.is_array()) {
    for (const auto& h : health) healthy += h.value("health", false) ? 1 : 0;
  }
  if (healthy != endpoints.size()) {
    return "health: " + std::to_string(healthy) + " of " + std::to_string(endpoints.size()) + " healthy";
  }
  if (member_ids) {
    member_ids->clear();
    for (const auto& e : endpoints) {
      const auto it = member_of.find(e.str());
      member_ids->push_back(it == member_of.end() ? 0 : it->second);
    }
  }
  return "";
}

std::optional<size_t> etcd_majority_leader(const std::string& etcdctl, const std::vector<Endpoint>& running,
                                           const std::vector<uint64_t>& member_ids, size_t cluster_size,
                                           std::chrono::milliseconds timeout) {
  if (running.empty()) return std::nullopt;
  const auto status =
      nlohmann::json::parse(etcdctl_endpoint_json(etcdctl, running, "status", timeout, nullptr), nullptr, false);
  if (!status.is_array()) return std::nullopt;
  // A member that lost its leader (0) or a stale one that disagrees makes the answer unknown only if no majority
  // of the cluster names one leader.
  std::map<uint64_t, size_t> votes;
  for (const auto& s : status) {
    try {
      const uint64_t l = s.at("Status").at("leader").get<uint64_t>();
      if (l != 0) ++votes[l];
    } catch (const nlohmann::json::exception&) {
    }
  }
  for (const auto& v : votes) {
    if (v.second * 2 <= cluster_size) continue;
    for (size_t n = 0; n < member_ids.size(); ++n) {
      if (member_ids[n] == v.first) return n;
    }
  }
  return std::nullopt;
}

std::string etcd_clock_refusal(const std::string& name) {
  return "clock faults on etcd member " + name +
         ": the clock shim (LD_PRELOAD of libc) does not reach etcd, a Go program that reads the clock through the "
         "vDSO";
}

}  // namespace lockcheck
