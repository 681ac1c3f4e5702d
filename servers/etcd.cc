// etcd (--server etcd): every node a member of one Raft cluster. Debian's etcd-server (3.4.23 on bookworm), or a
// build of the project's (scripts/build-clients builds etcd 3.4.3, the version Jepsen's etcd analysis tested, from the Go module
// proxy into build/servers/etcd-3.4.3/; --server-version picks it). The harness asks the members itself with the
// build's etcdctl, run on this machine.
//
// Ports: clients on the member's client port, peers on its peer port (etcd's own 2379 and 2380 where a member has
// a host of its own; members sharing an SSH host step by two). Raft messages, snapshots and the lease renewals a
// follower forwards to the leader (POST /leases) all travel on the peer links. A member's data is <folder>/etcd,
// kept across a restart (it rejoins as itself) and dropped at stop where the folder stays in the results (each
// member preallocates a 64 MB write-ahead log: a 90-run matrix filled 60 GB of disk when they were kept).
//
// Ready: every member answers `etcdctl endpoint status` naming the same elected leader and `endpoint health` (a
// quorum read) succeeds on each; a restarted member is ready once its client port accepts connections (it may
// be cut off and unable to find a leader). The leader is the member a majority of the cluster names.
//
// Abilities: kill, pause, the network, a leader. Not the clock: the clock shim is an LD_PRELOAD of libc's clock
// functions, and etcd, a Go program, reads the clock through the vDSO without libc (measured: etcd started under
// the shim with a +1 h offset logs the machine's time, while `date` under the same shim is an hour ahead); etcd
// times leases on the leader with Go's monotonic clock reading anyway, which no wall-clock step moves. Not power
// loss: the power shim (LD_PRELOAD) does not see a Go program's system calls either. Not key holders: every
// member holds every key (one replicated log).
#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include <unistd.h>

#include "cluster/server_cluster.h"
#include "cluster/tcp_probe.h"
#include "core/config.h"
#include "servers/registry.h"
#include "sys/process.h"

namespace lockcheck {

namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr int kEtcdClientPort = 2379;  // etcd's defaults
constexpr int kEtcdPeerPort = 2380;
constexpr auto kEtcdQueryTimeout = milliseconds(2000);  // one etcdctl call

std::string etcd_url(const Endpoint& e) { return "http://" + e.host + ":" + std::to_string(e.port); }

// `etcdctl --endpoints=... endpoint <what> -w json` run here (ETCDCTL_API=3), bounded by timeout per call. Its
// stdout ("" when it could not run; etcdctl prints the endpoints that answered even when others failed), with
// why it failed in *why.
std::string etcdctl_endpoint_json(const std::string& etcdctl, const std::vector<Endpoint>& endpoints,
                                  const std::string& what, milliseconds timeout, std::string* why) {
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
    r = run_command(argv, timeout * 2 + milliseconds(3000), {{"ETCDCTL_API", "3"}});
  } catch (const SpawnError& e) {
    if (why) *why = e.what();
    return "";
  }
  if (!r.ok() && why) *why = r.timed_out ? "etcdctl timed out" : r.err.substr(0, 300);
  return r.out;
}

// "" when every one of endpoints answers `endpoint status` naming the same elected leader and `endpoint health`
// says each is healthy; else what is missing. *member_ids (when ready) gets each endpoint's member id.
std::string etcd_ready_error(const std::string& etcdctl, const std::vector<Endpoint>& endpoints,
                             std::vector<uint64_t>* member_ids) {
  std::string err;
  const auto status =
      json::parse(etcdctl_endpoint_json(etcdctl, endpoints, "status", kEtcdQueryTimeout, &err), nullptr, false);
  std::map<std::string, uint64_t> member_of;  // endpoint -> member id
  std::set<uint64_t> leaders;
  if (status.is_array()) {
    for (const auto& s : status) {
      try {
        member_of[s.at("Endpoint").get<std::string>()] = s.at("Status").at("header").at("member_id").get<uint64_t>();
        leaders.insert(s.at("Status").at("leader").get<uint64_t>());
      } catch (const json::exception&) {
      }
    }
  }
  if (member_of.size() != endpoints.size() || leaders.size() != 1 || *leaders.begin() == 0) {
    return "status: " + std::to_string(member_of.size()) + " of " + std::to_string(endpoints.size()) +
           " members answered, leaders named: " + std::to_string(leaders.size()) + (err.empty() ? "" : "; " + err);
  }
  const auto health =
      json::parse(etcdctl_endpoint_json(etcdctl, endpoints, "health", kEtcdQueryTimeout, &err), nullptr, false);
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

// The version `program --version` prints ("etcd Version: X"), "" when it cannot run.
std::string etcd_program_version(const std::string& program) {
  if (!find_program(program)) return "";
  CommandResult r;
  try {
    r = run_command({program, "--version"}, std::chrono::seconds(10));
  } catch (const std::exception&) {
    return "";
  }
  const std::string marker = "etcd Version: ";
  const auto pos = r.out.find(marker);
  if (pos == std::string::npos) return "";
  const auto start = pos + marker.size();
  const auto end = r.out.find_first_of(" \t\r\n", start);
  return r.out.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

class EtcdServer final : public Server {
 public:
  EtcdServer(const ServerSetup& s)
      : seed_(s.seed),
        etcdctl_(s.build.tools.count("etcdctl") ? s.build.tools.at("etcdctl") : "etcdctl"),
        etcd_(s.build.programs.count("etcd") ? s.build.programs.at("etcd") : "etcd") {}

  std::vector<ServerPort> ports(NodeRole) const override {
    return {{"client", kEtcdClientPort, false}, {"peer", kEtcdPeerPort, true}};
  }
  int port_stride() const override { return 2; }

  Launch launch(const MemberContext& m) const override {
    std::string initial;
    for (const auto& other : m.members) initial += (initial.empty() ? "" : ",") + other.name + "=" + etcd_url(other.at("peer"));
    return {{m.program("etcd"), "--name", m.self.name, "--data-dir", m.dir + "/etcd", "--listen-client-urls",
             etcd_url(m.listen.at("client")), "--advertise-client-urls", etcd_url(m.self.admin),
             "--listen-peer-urls", etcd_url(m.listen.at("peer")), "--initial-advertise-peer-urls",
             etcd_url(m.self.at("peer")), "--initial-cluster", initial,
             // Ignored once the data dir exists (a restart rejoins as itself).
             "--initial-cluster-state", "new", "--initial-cluster-token", "lockcheck-" + std::to_string(seed_),
             "--heartbeat-interval", "100", "--election-timeout", "1000",  // etcd's defaults
             "--logger", "zap", "--log-outputs", "stderr"},
            {}};
  }
  std::vector<std::string> discard_at_stop() const override { return {"etcd"}; }

  // A member cannot answer requests alone: ready is its client port accepting connections; the cluster's
  // readiness is after_start's.
  std::string ready_error(const MemberAddress& m) const override {
    return port_accepts(m.admin, milliseconds(300)) ? "" : "its client port does not accept connections";
  }
  void after_start(const std::vector<MemberAddress>& members, milliseconds timeout, const std::string& hint,
                   const std::function<bool()>& stopping) const override {
    std::vector<Endpoint> all;
    for (const auto& m : members) all.push_back(m.admin);
    std::vector<uint64_t> ids;
    const std::string why = wait_until_ready([&] { return etcd_ready_error(etcdctl_, all, &ids); }, timeout, stopping,
                                             "etcd: stopping (while waiting for a leader)");
    if (!why.empty()) {
      throw ClusterError("the etcd cluster was not ready within " + std::to_string(timeout.count()) + " ms (" + why +
                         "); " + hint);
    }
    std::lock_guard<std::mutex> lock(mu_);
    member_ids_ = ids;
  }
  milliseconds start_timeout() const override { return milliseconds(60000); }

  // The member a majority of the cluster names as leader, asked of the running members. A member that lost its
  // leader (0) or a stale one that disagrees makes the answer unknown only if no majority names one.
  std::optional<size_t> leader(const std::vector<std::optional<MemberAddress>>& nodes) const override {
    std::vector<Endpoint> running;
    for (const auto& n : nodes) {
      if (n) running.push_back(n->admin);
    }
    if (running.empty()) return std::nullopt;
    std::vector<uint64_t> ids;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ids = member_ids_;
    }
    const auto status =
        json::parse(etcdctl_endpoint_json(etcdctl_, running, "status", kEtcdQueryTimeout, nullptr), nullptr, false);
    if (!status.is_array()) return std::nullopt;
    std::map<uint64_t, size_t> votes;
    for (const auto& s : status) {
      try {
        const uint64_t l = s.at("Status").at("leader").get<uint64_t>();
        if (l != 0) ++votes[l];
      } catch (const json::exception&) {
      }
    }
    for (const auto& v : votes) {
      if (v.second * 2 <= nodes.size()) continue;
      for (size_t n = 0; n < ids.size(); ++n) {
        if (ids[n] == v.first) return n;
      }
    }
    return std::nullopt;
  }

  std::vector<std::string> node_versions(const std::vector<MemberAddress>& nodes) const override {
    std::vector<std::string> versions(nodes.size());
    std::vector<Endpoint> eps;
    for (const auto& n : nodes) eps.push_back(n.admin);
    const auto status =
        json::parse(etcdctl_endpoint_json(etcdctl_, eps, "status", kEtcdQueryTimeout, nullptr), nullptr, false);
    if (!status.is_array()) return versions;
    for (size_t i = 0; i < eps.size(); ++i) {
      for (const auto& s : status) {
        if (s.value("Endpoint", "") != eps[i].str()) continue;
        const auto* st = s.contains("Status") ? &s["Status"] : nullptr;
        if (st && st->contains("version") && (*st)["version"].is_string()) versions[i] = (*st)["version"];
      }
    }
    return versions;
  }

  ImageNeeds image() const override {
    ImageNeeds n;
    n.repository = "lockcheck-etcd";
    n.programs = {{"etcd", "/usr/bin/etcd", etcd_, ""}};
    return n;
  }

 private:
  const uint64_t seed_;
  const std::string etcdctl_;
  const std::string etcd_;
  mutable std::mutex mu_;
  mutable std::vector<uint64_t> member_ids_;  // learnt by after_start, for leader()
};

class EtcdSpec final : public ServerSpec {
 public:
  std::string name() const override { return "etcd"; }
  std::string description() const override {
    return "an etcd cluster (Debian etcd-server 3.4, or etcd 3.4.3 built by scripts/build-clients); every backend";
  }
  const std::vector<ServerOption>& options() const override {
    static const std::vector<ServerOption> none;
    return none;
  }
  std::vector<std::string> protocols(const json&) const override { return {"etcd-v3"}; }

  // The machine's etcd and etcdctl on PATH, then each folder servers_dir()/etcd-VERSION holding both.
  std::vector<ServerBuild> builds(const json&) const override {
    std::vector<ServerBuild> builds;
    if (const std::string v = etcd_program_version("etcd"); !v.empty() && find_program("etcdctl")) {
      builds.push_back({v, {{"etcd", "etcd"}}, {{"etcdctl", "etcdctl"}}, "this machine (PATH)"});
    }
    std::error_code ec;
    std::vector<std::filesystem::path> dirs;
    for (const auto& e : std::filesystem::directory_iterator(servers_dir(), ec)) {
      if (e.path().filename().string().rfind("etcd-", 0) == 0) dirs.push_back(e.path());
    }
    std::sort(dirs.begin(), dirs.end());
    for (const auto& d : dirs) {
      const std::string server = (d / "etcd").string(), ctl = (d / "etcdctl").string();
      if (::access(server.c_str(), X_OK) != 0 || ::access(ctl.c_str(), X_OK) != 0) continue;
      const std::string v = etcd_program_version(server);
      if (!v.empty()) builds.push_back({v, {{"etcd", server}}, {{"etcdctl", ctl}}, d.string()});
    }
    return builds;
  }
  std::string install_hint() const override {
    return "install Debian's etcd-server and etcd-client, or run scripts/build-clients for 3.4.3";
  }

  Abilities abilities(const json&) const override {
    Abilities a = Abilities::basic();
    const std::string go = "the clock shim (LD_PRELOAD of libc) does not reach etcd, a Go program that reads the clock "
                           "through the vDSO";
    a.refuse(Ability::kClockStep, go + ", and etcd times leases with the monotonic clock anyway");
    a.refuse(Ability::kClockRate, go);
    a.refuse(Ability::kPowerLoss, "the power shim (LD_PRELOAD) does not reach etcd, a Go program that makes its "
                                  "system calls without libc");
    a.grant(Ability::kLeader);
    a.refuse(Ability::kKeyHolders, "every member holds every key (one replicated log): aim at the leader instead");
    a.refuse(Ability::kPrimary, "it has no primary that fails over (a Raft leader: see the leader modes)");
    return a;
  }
  std::map<std::string, std::string> legacy_host_programs() const override { return {{"etcd", "etcd"}}; }
  std::vector<LegacyHostPort> legacy_host_ports() const override {
    return {{"etcd_base_port", "client", 0}, {"etcd_base_port", "peer", 1}};
  }
  std::string test_label() const override { return "etcd"; }
  std::unique_ptr<Server> make(const ServerSetup& s) const override { return std::make_unique<EtcdServer>(s); }
};

}  // namespace

// This kind's line in the registry (servers/registry.cc).
ServerKindEntry etcd_server_kind() {
  static const EtcdSpec spec;
  return {"etcd", &spec};
}

}  // namespace lockcheck
