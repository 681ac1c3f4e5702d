// Redis (--server redis, the default): redis-server nodes in one of three topologies, one spec with an option
// (--topology), since the three share the program, its config, its readiness and its faults:
//   independent  N masters that know nothing of each other (Redlock's setting). Clients speak "resp".
//   replicated   n1 the master, n2..nN its replicas (replicaof), and three Sentinels s1..s3 (redis-server
//                --sentinel) watching it under kSentinelMasterName with quorum 2; a dead or cut-off master is
//                replaced within a few seconds (down-after 1 s, failover-timeout 3 s; 3 s and 10 s where faults
//                cross docker exec or ssh). Every data node runs from its own redis.conf, which Sentinel
//                rewrites (CONFIG REWRITE) when it changes the node's role: a restarted node comes back with the
//                role Sentinel last gave it, as in a real deployment. Ready once every replica's link is up and
//                every Sentinel sees all replicas and the other Sentinels. Clients speak "resp-sentinel".
//   cluster      a Redis Cluster of cluster-enabled nodes: the first half masters (hash slots split evenly,
//                ADDSLOTSRANGE), the others their replicas (replica k of master k mod masters); n1 MEETs every
//                node; cluster-node-timeout 1000 ms, so a master cut off or dead for a second is failed over by its
//                replica. The node's view of the cluster (nodes.conf) lives beside its data folder: a restarted
//                node rejoins as itself. Clients speak "resp-cluster". At least 6 nodes (the default then).
// --persistence none | aof-everysec | aof-always (RDB snapshots are off everywhere; without persistence a
// restarted node comes back empty: its dump.rdb is removed before every start). A full resync starts at once
// (repl-diskless-sync-delay 0; Redis 7 waits 5 s for more replicas by default, which made every start and every
// resync after a failover 5 s late).
//
// Peer links. Where the peers' links are proxied (the local backend), every node and Sentinel connects from a
// loopback source address of its own (bind-source-addr) by which the proxy knows who is on the other end, and
// announces its shared proxy link (replica-announce-ip/port, sentinel announce-ip/port, cluster-announce-*), so
// that what Sentinel and the cluster learn by themselves and hand out (replica addresses, the other Sentinels, a
// promoted master, MOVED and ASK redirections) is the proxied address too. Elsewhere they announce their hosts'
// addresses.
//
// Abilities: every fault of a node (the clock shim and the power shim reach redis-server: FACTS.md), key
// holders (EXISTS on each node), and in the replicated and cluster topologies a primary per key (Sentinel's
// master, or the master of the key's slot) that fails over.
#include <hiredis/hiredis.h>

#include <map>
#include <sstream>
#include <thread>

#include "cluster/server_cluster.h"
#include "servers/registry.h"
#include "core/config.h"
#include "sys/process.h"
#include "sys/redis_conn.h"

namespace lockcheck {

namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr int kRedisPort = 6379;
constexpr int kClusterBusOffset = 10000;  // Redis Cluster's default bus port: the data port + 10000
constexpr int kSentinelPort = 26379;
constexpr int kSentinels = 3;
constexpr int kClusterMinNodes = 6;  // 3 masters, each with a replica

// ---------------------------------------------------------------------------------------------------------
// Options

const std::vector<ServerOption>& redis_options() {
  static const std::vector<ServerOption> options = {
      {"topology", "topology",
       "independent (N masters), replicated (master, replicas, 3 Sentinels) or cluster (Redis Cluster: half "
       "masters, half replicas)",
       "", "independent", {"independent", "replicated", "cluster"}},
      {"persistence", "persistence", "none, aof-everysec or aof-always", "", "none",
       {"none", "aof-everysec", "aof-always"}},
      {"sentinel_parallel_syncs", "sentinel-parallel-syncs",
       "replicated: replicas Sentinel repoints to a promoted master at a time (parallel-syncs; 1 is Redis' default)",
       "", 1, {},
       [](const json& v) -> std::string {
         const int64_t n = v.get<int64_t>();
         return n >= 1 && n <= 14 ? "" : "must be between 1 and 14";
       }},
      {"redis_server", "redis-server", "redis-server binary (the local backend's nodes, and the docker image's)", "",
       "redis-server", {}},
  };
  return options;
}

std::string topology_of(const json& o) { return o.value("topology", "independent"); }

// ---------------------------------------------------------------------------------------------------------
// Configuration text

struct SentinelTimings {
  int64_t down_after_ms;        // sentinel down-after-milliseconds
  int64_t failover_timeout_ms;  // sentinel failover-timeout
};
// down-after 1 s: a master cut off (or paused) for longer is objectively down and a replica is promoted within a
// few seconds, well inside a nemesis interval of 5 s; failover-timeout 3 s bounds a failover that stalls.
constexpr SentinelTimings kLocalSentinelTimings{1000, 3000};
// Where faults and queries cross `docker exec` or ssh, a fault takes tens of milliseconds per command and
// Sentinel's own elections are slower: 1 s / 3 s did not let a failover complete reliably (measured: the Docker
// split-brain test promoted no replica in 30 s); 3 s / 10 s does.
constexpr SentinelTimings kRemoteSentinelTimings{3000, 10000};

std::string node_conf(const std::string& persistence) {
  std::string c = "save \"\"\nrepl-diskless-sync-delay 0\n";
  if (persistence == "none") c += "appendonly no\n";
  if (persistence == "aof-everysec") c += "appendonly yes\nappendfsync everysec\n";
  if (persistence == "aof-always") c += "appendonly yes\nappendfsync always\n";
  return c;
}

std::string sentinel_monitor_conf(const Endpoint& master, int quorum, const SentinelTimings& t, int64_t parallel) {
  const std::string m = kSentinelMasterName;
  return "sentinel monitor " + m + " " + master.host + " " + std::to_string(master.port) + " " +
         std::to_string(quorum) + "\nsentinel down-after-milliseconds " + m + " " + std::to_string(t.down_after_ms) +
         "\nsentinel failover-timeout " + m + " " + std::to_string(t.failover_timeout_ms) +
         "\nsentinel parallel-syncs " + m + " " + std::to_string(parallel) + "\n";
}

// ---------------------------------------------------------------------------------------------------------
// Readiness of the topologies

// Sentinel replies to SENTINEL MASTER as a flat array of field, value, field, value ...
std::map<std::string, std::string> field_map(const redisReply* r) {
  std::map<std::string, std::string> m;
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY) return m;
  for (size_t i = 0; i + 1 < r->elements; i += 2) {
    const redisReply* k = r->element[i];
    const redisReply* v = r->element[i + 1];
    if (k->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING) {
      m[std::string(k->str, k->len)] = std::string(v->str, v->len);
    }
  }
  return m;
}

// A freshly started replicated topology may be faulted once every replica's replication link is up and every
// Sentinel sees every replica and every other Sentinel. A Sentinel learns the replicas from the master's INFO
// (every 10 s) and the other Sentinels from hello messages (every 2 s): one that knows no replica yet cannot fail
// over (-failover-abort-no-good-slave), and one that knows no other Sentinel never reaches its quorum. What is
// still awaited, or "" when ready; one round of questions, each bounded by a 500 ms timeout.
std::string replicated_pending(const std::vector<MemberAddress>& replicas, const std::vector<MemberAddress>& sentinels) {
  for (const auto& r : replicas) {
    RedisConn c(r.admin, milliseconds(200), milliseconds(500));
    const auto text = c.command({"INFO", "replication"}).str();
    if (!text || text->find("master_link_status:up") == std::string::npos) {
      return r.name + "'s replication link to its master";
    }
  }
  if (sentinels.empty()) return "";
  const std::string want_replicas = std::to_string(replicas.size());
  const std::string want_others = std::to_string(sentinels.size() - 1);
  for (const auto& s : sentinels) {
    RedisConn c(s.admin, milliseconds(200), milliseconds(500));
    Reply r = c.command({"SENTINEL", "MASTER", kSentinelMasterName});
    auto f = field_map(r.raw());
    if (f["num-slaves"] != want_replicas || f["num-other-sentinels"] != want_others) {
      return s.name + " to see " + want_replicas + " replicas and " + want_others + " other Sentinels (sees " +
             (f.count("num-slaves") ? f["num-slaves"] : "?") + " and " +
             (f.count("num-other-sentinels") ? f["num-other-sentinels"] : "?") + ")";
    }
  }
  return "";
}

// Forms a Redis Cluster out of the freshly started nodes (see the header comment); ready when every node sees
// cluster_state:ok with all nodes known and every replica's replication link is up.
void form_redis_cluster(const std::vector<MemberAddress>& nodes, milliseconds ready_timeout, const std::string& hint,
                        const std::function<bool()>& stopping) {
  const size_t masters = nodes.size() / 2;
  const auto deadline = std::chrono::steady_clock::now() + ready_timeout;
  auto ask = [&](size_t n, const std::vector<std::string>& argv) {
    RedisConn c(nodes[n].admin, milliseconds(500), milliseconds(2000));
    return c.command(argv);
  };
  auto fail = [&](const std::string& what, const Reply& r) {
    throw ClusterError("cluster topology: " + what + ": " + (r.error.empty() ? "unexpected reply" : r.error) + "; " +
                       hint);
  };
  auto check_stop = [&](const std::string& what) {
    if (stopping && stopping()) throw ClusterError("cluster topology: stopping (while waiting for " + what + ")");
  };
  for (size_t m = 0; m < masters; ++m) {  // hash slots split evenly over the masters
    const size_t lo = m * kClusterSlots / masters, hi = (m + 1) * kClusterSlots / masters - 1;
    Reply r = ask(m, {"CLUSTER", "ADDSLOTSRANGE", std::to_string(lo), std::to_string(hi)});
    if (!r.is_status("OK")) fail("ADDSLOTSRANGE on " + nodes[m].name, r);
  }
  for (size_t n = 1; n < nodes.size(); ++n) {  // the first node meets everyone at their cluster addresses
    const Endpoint& at = nodes[n].at("client");
    Reply r = ask(0, {"CLUSTER", "MEET", at.host, std::to_string(at.port), std::to_string(nodes[n].at("bus").port)});
    if (!r.is_status("OK")) fail("MEET " + nodes[n].name, r);
  }
  std::vector<std::string> ids(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    Reply r = ask(n, {"CLUSTER", "MYID"});
    if (!r.str()) fail("MYID on " + nodes[n].name, r);
    ids[n] = *r.str();
  }
  // Replica k replicates master k % masters, once it has heard of that master by gossip.
  for (size_t n = masters; n < nodes.size(); ++n) {
    const size_t m = (n - masters) % masters;
    for (;;) {
      Reply r = ask(n, {"CLUSTER", "REPLICATE", ids[m]});
      if (r.is_status("OK")) break;
      if (std::chrono::steady_clock::now() > deadline) fail(nodes[n].name + " REPLICATE " + nodes[m].name, r);
      check_stop(nodes[n].name + " to replicate " + nodes[m].name);
      std::this_thread::sleep_for(milliseconds(100));
    }
  }
  const std::string known = "cluster_known_nodes:" + std::to_string(nodes.size()) + "\r";
  std::string waiting;
  while (std::chrono::steady_clock::now() < deadline) {
    waiting.clear();
    for (size_t n = 0; n < nodes.size() && waiting.empty(); ++n) {
      auto info = ask(n, {"CLUSTER", "INFO"}).str();
      if (!info || info->find("cluster_state:ok") == std::string::npos || info->find(known) == std::string::npos) {
        waiting = nodes[n].name + " to see the cluster ok with all " + std::to_string(nodes.size()) + " nodes";
      }
    }
    for (size_t n = masters; n < nodes.size() && waiting.empty(); ++n) {
      auto info = ask(n, {"INFO", "replication"}).str();
      if (!info || info->find("master_link_status:up") == std::string::npos) {
        waiting = nodes[n].name + "'s replication link";
      }
    }
    if (waiting.empty()) return;
    check_stop(waiting);
    std::this_thread::sleep_for(milliseconds(100));
  }
  throw ClusterError("Redis Cluster not ready within " + std::to_string(ready_timeout.count()) + " ms: waiting for " +
                     waiting + "; " + hint);
}

// ---------------------------------------------------------------------------------------------------------
// Abilities over a running cluster

// The most frequent of votes (node -> count); nullopt when empty.
std::optional<size_t> most_voted(const std::map<size_t, int>& votes) {
  std::optional<size_t> best;
  for (const auto& v : votes) {
    if (!best || v.second > votes.at(*best)) best = v.first;
  }
  return best;
}

// The node whose cluster address is ep (what Sentinel and CLUSTER SLOTS name it by).
std::optional<size_t> node_at(const Cluster& c, const Endpoint& ep) {
  for (size_t n = 0; n < c.nodes().size(); ++n) {
    if (c.nodes()[n].endpoint == ep) return n;
  }
  return std::nullopt;
}

class RedisPrimary final : public Primary {
 public:
  RedisPrimary(const Cluster& cluster, bool sharded) : c_(cluster), sharded_(sharded) {}

  std::optional<size_t> elected_primary(const std::string& key) const override {
    return sharded_ ? slot_master(key) : sentinels_master();
  }

  bool says_primary(size_t n) const override {
    const redisReply* raw = nullptr;
    Reply r = role(n, &raw);
    return raw && raw->type == REDIS_REPLY_ARRAY && raw->elements >= 1 && raw->element[0]->str &&
           std::string(raw->element[0]->str, raw->element[0]->len) == "master";
  }

  bool replicates_from(size_t n, size_t primary) const override {
    const redisReply* raw = nullptr;
    Reply r = role(n, &raw);
    // ["slave", master host, master port, state, offset]
    if (!raw || raw->type != REDIS_REPLY_ARRAY || raw->elements < 4 || !raw->element[0]->str ||
        std::string(raw->element[0]->str) != "slave" || !raw->element[1]->str || !raw->element[3]->str) {
      return false;
    }
    const Endpoint& m = c_.nodes()[primary].endpoint;
    return raw->element[1]->str == m.host && raw->element[2]->integer == m.port &&
           std::string(raw->element[3]->str) == "connected";
  }

  bool shards_by_key() const override { return sharded_; }
  json describe_key(const std::string& key) const override {
    return sharded_ ? json{{"slot", cluster_key_slot(key)}} : json::object();
  }

 private:
  // ROLE of node n, asked on its own endpoint (down, paused, unreachable: no reply).
  Reply role(size_t n, const redisReply** raw) const {
    Reply r;
    if (!c_.is_running(n)) return r;
    RedisConn conn(c_.nodes()[n].own_endpoint(), milliseconds(150), milliseconds(150));
    r = conn.command({"ROLE"});
    if (r.ok()) *raw = r.raw();
    return r;
  }

  // The data node the Sentinels name master now (the answer most of them give, asked directly).
  std::optional<size_t> sentinels_master() const {
    std::map<size_t, int> votes;
    for (const auto& s : c_.sentinels()) {
      RedisConn conn(s.own_endpoint(), milliseconds(150), milliseconds(300));
      Reply r = conn.command({"SENTINEL", "get-master-addr-by-name", kSentinelMasterName});
      const redisReply* raw = r.raw();
      if (!r.ok() || !raw || raw->type != REDIS_REPLY_ARRAY || raw->elements != 2 || !raw->element[0]->str ||
          !raw->element[1]->str) {
        continue;
      }
      if (auto n = node_at(c_, Endpoint{raw->element[0]->str, std::atoi(raw->element[1]->str)})) ++votes[*n];
    }
    return most_voted(votes);
  }

  // The node most running nodes name (CLUSTER SLOTS, asked directly) as master of key's slot.
  std::optional<size_t> slot_master(const std::string& key) const {
    const long long slot = cluster_key_slot(key);
    std::map<size_t, int> votes;
    for (size_t n = 0; n < c_.nodes().size(); ++n) {
      if (!c_.is_running(n)) continue;
      RedisConn conn(c_.nodes()[n].own_endpoint(), milliseconds(150), milliseconds(300));
      Reply r = conn.command({"CLUSTER", "SLOTS"});
      const redisReply* raw = r.raw();
      if (!r.ok() || !raw || raw->type != REDIS_REPLY_ARRAY) continue;
      for (size_t i = 0; i < raw->elements; ++i) {
        const redisReply* range = raw->element[i];
        if (range->type != REDIS_REPLY_ARRAY || range->elements < 3 || range->element[0]->integer > slot ||
            range->element[1]->integer < slot) {
          continue;
        }
        const redisReply* m = range->element[2];
        if (m->type != REDIS_REPLY_ARRAY || m->elements < 2 || m->element[0]->type != REDIS_REPLY_STRING) continue;
        const Endpoint ep{std::string(m->element[0]->str, m->element[0]->len),
                          static_cast<int>(m->element[1]->integer)};
        if (auto k = node_at(c_, ep)) ++votes[*k];
      }
    }
    return most_voted(votes);
  }

  const Cluster& c_;
  const bool sharded_;
};

class RedisKeyHolders final : public KeyHolders {
 public:
  explicit RedisKeyHolders(const Cluster& cluster) : c_(cluster) {}
  std::vector<size_t> nodes_holding_any(const std::vector<std::string>& keys, milliseconds timeout) const override {
    std::vector<size_t> out;
    if (keys.empty()) return out;
    ignore_sigpipe();
    for (size_t n = 0; n < c_.nodes().size(); ++n) {
      if (!c_.is_running(n)) continue;
      // One EXISTS per key: on Redis Cluster keys of different slots cannot share a command.
      RedisConn conn(c_.nodes()[n].own_endpoint(), timeout, timeout);
      for (const auto& k : keys) {
        Reply r = conn.command({"EXISTS", k});
        if (r.ok() && r.integer().value_or(0) == 1) {
          out.push_back(n);
          break;
        }
        if (!r.ok() && !r.is_error()) break;  // unreachable: the next keys would wait out the timeout again
      }
    }
    return out;
  }

 private:
  const Cluster& c_;
};

// ---------------------------------------------------------------------------------------------------------
// One run's Redis

class RedisServer final : public Server {
 public:
  explicit RedisServer(const ServerSetup& s)
      : topology_(topology_of(s.options)),
        persistence_(s.options.value("persistence", "none")),
        parallel_syncs_(s.options.value("sentinel_parallel_syncs", 1)),
        redis_server_(s.options.value("redis_server", "redis-server")),
        timings_(s.remote_control ? kRemoteSentinelTimings : kLocalSentinelTimings) {}

  std::vector<NodeRole> node_roles(int nodes) const override {
    std::vector<NodeRole> roles(static_cast<size_t>(nodes), NodeRole::kMaster);
    for (int i = 0; i < nodes; ++i) {
      if ((topology_ == "replicated" && i > 0) || (topology_ == "cluster" && i >= nodes / 2)) {
        roles[static_cast<size_t>(i)] = NodeRole::kReplica;
      }
    }
    return roles;
  }
  int sentinels() const override { return topology_ == "replicated" ? kSentinels : 0; }
  // Sentinels find each other by hello messages every 2 s; on a loaded machine (the test suite beside Docker runs)
  // one was seen to know only one of the two others after 30 s, so the replicated topology waits up to 60 s.
  std::chrono::milliseconds start_timeout() const override {
    return std::chrono::milliseconds(topology_ == "replicated" ? 60000 : 30000);
  }

  std::vector<ServerPort> ports(NodeRole role) const override {
    if (role == NodeRole::kSentinel) return {{"client", kSentinelPort, true}};
    if (topology_ == "cluster") return {{"client", kRedisPort, true}, {"bus", kRedisPort + kClusterBusOffset, true}};
    return {{"client", kRedisPort, topology_ == "replicated"}};  // independent masters have no peers
  }

  std::vector<std::pair<std::string, std::string>> files(const MemberContext& m) const override {
    const Endpoint& listen = m.listen.at("client");
    std::ostringstream c;
    c << "# written by lockcheck; Sentinel may rewrite it (CONFIG REWRITE)\n"
      << "port " << listen.port << "\nbind " << listen.host << "\nprotected-mode no\ndaemonize no\n"
      << "dir " << m.dir << "/data\nlogfile " << m.log_path << "\n";
    if (!m.source_address.empty()) c << "bind-source-addr " << m.source_address << "\n";
    const Endpoint& self = m.self.at("client");
    if (m.self.role == NodeRole::kSentinel) {
      c << "sentinel announce-ip " << self.host << "\nsentinel announce-port " << self.port << "\n"
        << sentinel_monitor_conf(m.members.at(0).at("client"), kSentinels / 2 + 1, timings_, parallel_syncs_);
      return {{"redis.conf", c.str()}};
    }
    c << node_conf(persistence_);
    if (topology_ == "replicated") {
      c << "replica-announce-ip " << self.host << "\nreplica-announce-port " << self.port << "\n";
      if (m.self.role == NodeRole::kReplica) {
        const Endpoint& master = m.members.at(0).at("client");
        c << "replicaof " << master.host << " " << master.port << "\n";
      }
    }
    if (topology_ == "cluster") {
      c << "cluster-enabled yes\ncluster-config-file " << m.dir << "/nodes.conf\ncluster-node-timeout 1000\n"
        << "cluster-port " << m.listen.at("bus").port << "\ncluster-replica-validity-factor 0\n"
        << "cluster-announce-ip " << self.host << "\ncluster-announce-port " << self.port << "\n"
        << "cluster-announce-bus-port " << m.self.at("bus").port << "\n";
    }
    return {{"redis.conf", c.str()}};
  }

  Launch launch(const MemberContext& m) const override {
    if (m.self.role == NodeRole::kSentinel) return {{m.program("redis-sentinel"), m.dir + "/redis.conf", "--sentinel"}, {}};
    return {{m.program("redis-server"), m.dir + "/redis.conf"}, {}};
  }

  std::vector<std::string> wipe_before_start(const MemberContext& m) const override {
    if (persistence_ != "none" || m.self.role == NodeRole::kSentinel) return {};
    return {"data/dump.rdb"};
  }

  std::string ready_error(const MemberAddress& m) const override { return ping_error(m.admin, milliseconds(300)); }

  // The replicas' links before the Sentinels start: a Sentinel learns the replicas from the master's INFO, every
  // 10 s after its first; one that first asked before a replica had linked held the start up by those 10 s.
  void nodes_started(const std::vector<MemberAddress>& nodes, milliseconds timeout, const std::string& hint,
                     const std::function<bool()>& stopping) const override {
    if (topology_ != "replicated") return;
    std::vector<MemberAddress> replicas;
    for (const auto& m : nodes) {
      if (m.role == NodeRole::kReplica) replicas.push_back(m);
    }
    const std::string pending =
        wait_until_ready([&] { return replicated_pending(replicas, {}); }, timeout, stopping,
                         "replicated topology: stopping (while waiting for replication)", milliseconds(50));
    if (!pending.empty()) {
      throw ClusterError("replicated topology: not ready within " + std::to_string(timeout.count()) +
                         " ms: waiting for " + pending + "; " + hint);
    }
  }

  void after_start(const std::vector<MemberAddress>& members, milliseconds timeout, const std::string& hint,
                   const std::function<bool()>& stopping) const override {
    std::vector<MemberAddress> nodes, replicas, sentinels;
    for (const auto& m : members) {
      (m.role == NodeRole::kSentinel ? sentinels : nodes).push_back(m);
      if (m.role == NodeRole::kReplica) replicas.push_back(m);
    }
    if (topology_ == "replicated") {
      const std::string pending =
          wait_until_ready([&] { return replicated_pending(replicas, sentinels); }, timeout, stopping,
                           "replicated topology: stopping (while waiting for replication and Sentinels)",
                           milliseconds(100));
      if (!pending.empty()) {
        throw ClusterError("replicated topology: not ready within " + std::to_string(timeout.count()) +
                           " ms: waiting for " + pending + "; " + hint);
      }
    }
    if (topology_ == "cluster") form_redis_cluster(nodes, timeout, hint, stopping);
  }

  std::vector<std::string> node_versions(const std::vector<MemberAddress>& nodes) const override {
    std::vector<std::string> versions(nodes.size());
    ignore_sigpipe();
    for (size_t i = 0; i < nodes.size(); ++i) {
      std::optional<std::string> text;
      try {
        RedisConn conn(nodes[i].admin, milliseconds(500), milliseconds(1000));
        const Reply r = conn.command({"INFO", "server"});
        if (r.ok()) text = r.str();
      } catch (const std::exception&) {
        // a node that does not answer names no version
      }
      if (!text) continue;
      const auto pos = text->find("redis_version:");
      if (pos == std::string::npos) continue;
      const auto start = pos + 14;
      versions[i] = text->substr(start, text->find_first_of("\r\n", start) - start);
    }
    return versions;
  }

  // TIME: the node's gettimeofday, which the clock shim moves.
  std::optional<int64_t> wall_clock_ns(const MemberAddress& m) const override {
    ignore_sigpipe();
    RedisConn conn(m.admin, milliseconds(500), milliseconds(1000));
    const Reply r = conn.command({"TIME"});
    const redisReply* raw = r.raw();
    if (!r.ok() || !raw || raw->type != REDIS_REPLY_ARRAY || raw->elements != 2 || !raw->element[0]->str ||
        !raw->element[1]->str) {
      return std::nullopt;
    }
    return std::atoll(raw->element[0]->str) * 1000000000LL + std::atoll(raw->element[1]->str) * 1000LL;
  }

  std::unique_ptr<Primary> primary(const Cluster& cluster) const override {
    if (topology_ == "independent") return nullptr;
    return std::make_unique<RedisPrimary>(cluster, topology_ == "cluster");
  }
  std::unique_ptr<KeyHolders> key_holders(const Cluster& cluster) const override {
    return std::make_unique<RedisKeyHolders>(cluster);
  }

  ImageNeeds image() const override {
    ImageNeeds n;
    n.repository = "lockcheck-redis";
    // Debian installs redis-server as redis-check-rdb, redis-server and redis-sentinel being symlinks to it.
    n.programs = {{"redis-server", "/usr/bin/redis-server", redis_server_, ""},
                  {"redis-sentinel", "/usr/bin/redis-sentinel", "", "/usr/bin/redis-server"}};
    // A minimal Sentinel config for the compose files in docker/ (each container may rewrite it in its own layer;
    // the monitor line comes on the command line). The backend writes a config of its own instead.
    n.texts = {{"/etc/lockcheck/sentinel.conf", "port 26379\nbind 0.0.0.0\nprotected-mode no\ndir /tmp\n"}};
    return n;
  }

 private:
  const std::string topology_;
  const std::string persistence_;
  const int64_t parallel_syncs_;
  const std::string redis_server_;
  const SentinelTimings timings_;
};

// ---------------------------------------------------------------------------------------------------------
// The kind

// The version redis-server prints for --version ("Redis server v=7.0.15 ..."), "" when it cannot run.
std::string redis_program_version(const std::string& program) {
  if (!find_program(program)) return "";
  CommandResult r;
  try {
    r = run_command({program, "--version"}, std::chrono::seconds(10));
  } catch (const std::exception&) {
    return "";
  }
  const auto pos = r.out.find("v=");
  if (pos == std::string::npos) return "";
  const auto start = pos + 2;
  const auto end = r.out.find_first_of(" \t\r\n", start);
  return r.out.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

class RedisSpec final : public ServerSpec {
 public:
  std::string name() const override { return "redis"; }
  std::string description() const override {
    return "redis-server nodes: independent masters, a master with replicas and Sentinels, or a Redis Cluster "
           "(--topology); every backend";
  }
  const std::vector<ServerOption>& options() const override { return redis_options(); }
  // Sentinels run only with the replicated topology.
  bool option_applies(const json& options, const std::string& key) const override {
    return key.rfind("sentinel_", 0) != 0 || topology_of(options) == "replicated";
  }

  std::string check_options(const json& o, int nodes, const std::string& backend) const override {
    const std::string t = topology_of(o);
    // Not tried on SSH hosts, where members share hosts round-robin (a node and its replica may share one).
    if (t == "cluster" && backend == "ssh") {
      return "--topology cluster: only on the local and docker backends (--cluster local|docker)";
    }
    if (t == "replicated" && nodes < 2) return "--nodes: the replicated topology needs a master and at least one replica";
    if (t != "replicated" && o.value("sentinel_parallel_syncs", 1) != 1) {
      return "--sentinel-parallel-syncs: only with --topology replicated (the topology with Sentinels)";
    }
    if (t == "cluster" && nodes < kClusterMinNodes) {
      return "--nodes " + std::to_string(nodes) + " with --topology cluster: Redis Cluster needs at least " +
             std::to_string(kClusterMinNodes) + " nodes (3 masters, each with a replica); leave --nodes out to get " +
             std::to_string(kClusterMinNodes);
    }
    return "";
  }
  int default_nodes(const json& o) const override { return topology_of(o) == "cluster" ? kClusterMinNodes : 5; }

  std::vector<std::string> protocols(const json& o) const override {
    const std::string t = topology_of(o);
    return {t == "replicated" ? "resp-sentinel" : t == "cluster" ? "resp-cluster" : "resp"};
  }
  json options_serving(const std::string& protocol) const override {
    for (const char* t : {"independent", "replicated", "cluster"}) {
      if (protocols(json{{"topology", t}}).front() == protocol) return json{{"topology", t}};
    }
    return nullptr;
  }

  std::vector<ServerBuild> builds(const json& o) const override {
    const std::string program = o.value("redis_server", "redis-server");
    const std::string v = redis_program_version(program);
    if (v.empty()) return {};
    return {{v, {{"redis-server", program}, {"redis-sentinel", program}}, {}, "this machine (--redis-server " + program + ")"}};
  }
  std::string install_hint() const override {
    return "install Debian's redis-server and redis-sentinel, or give --redis-server PATH";
  }

  Abilities abilities(const json& o) const override {
    Abilities a = Abilities::basic();
    a.grant(Ability::kKeyHolders);
    if (topology_of(o) != "independent") a.grant(Ability::kPrimary);
    else a.refuse(Ability::kPrimary, "its independent masters have no replicas (--topology replicated or cluster has)");
    return a;
  }
  bool binds_source_address() const override { return true; }
  std::map<std::string, std::string> legacy_host_programs() const override {
    return {{"redis_server", "redis-server"}, {"redis_sentinel", "redis-sentinel"}};
  }
  std::vector<LegacyHostPort> legacy_host_ports() const override { return {{"base_port", "client", 0}}; }
  std::string test_label() const override { return "redis"; }
  std::unique_ptr<Server> make(const ServerSetup& s) const override { return std::make_unique<RedisServer>(s); }
};

}  // namespace

// This kind's line in the registry (servers/registry.cc).
ServerKindEntry redis_server_kind() {
  static const RedisSpec spec;
  return {"redis", &spec};
}

}  // namespace lockcheck
