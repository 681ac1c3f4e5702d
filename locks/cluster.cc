// `cluster`: the V3.1 lock (SET key token NX PX ttl, compare-and-delete release) on a Redis Cluster
// (--topology cluster). Debian ships no C/C++ Redis Cluster client (hiredis 0.14 has no cluster support), so
// the client routes itself, as cluster clients do (redis-py's RedisCluster, Jedis' JedisCluster, redis-plus-
// plus' RedisCluster): it keeps a slot map from CLUSTER SLOTS, sends each command to the master of its key's
// slot (CRC16 of the key or its hash tag), follows MOVED (the slot moved: update the map, go there) and ASK
// (the slot is migrating: ASKING then the command on the node named, once), at most kMaxRedirects hops. A
// transport error, CLUSTERDOWN, TRYAGAIN or READONLY makes it reload the slot map before its next command,
// asking the other nodes first (the failing node's own view may be stale: a master cut off from the cluster
// still lists itself for its slots).
// This is where the failover anomaly of a master/replica lock shows on Redis Cluster: replication is
// asynchronous, so a master cut off from the rest of the cluster keeps granting locks (until its
// cluster-node-timeout runs out) that its replica, promoted by the majority, never receives.
//
// Addresses: CLUSTER SLOTS and redirections name nodes by their cluster addresses (LockOptions.node_addresses,
// the shared proxy links); the client maps each to its own view of that node (LockOptions.nodes[i]).
// Outcomes as for `single` (locks/single_node.h): a redirection or an error reply is fail (nothing ran), a
// timeout or a connection closed after sending is info. Options (LockOptions.extra): none.
#include <hiredis/hiredis.h>

#include <map>

#include "core/random.h"
#include "locks/single_node.h"
#include "sys/process.h"

namespace lockcheck {

namespace {

constexpr int kMaxRedirects = 5;

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Why this lock hands out no fencing tokens (the plan says it before a run starts).
constexpr const char* kNoFencing =
    "a token counter would be one more key on a master that fails over with asynchronous replication (an "
    "acknowledged INCR can be lost and a token handed out twice), so it gives none";

class ClusterLock : public LockClient {
 public:
  explicit ClusterLock(const LockOptions& o)
      : nodes_(o.nodes),
        addresses_(o.node_addresses.empty() ? o.nodes : o.node_addresses),
        connect_timeout_(o.connect_timeout),
        op_timeout_(o.op_timeout),
        fencing_(o.fencing),
        conns_(o.nodes.size()),
        slots_(kClusterSlots, -1) {
    if (nodes_.empty()) throw std::invalid_argument("lock cluster needs at least one node");
    if (fencing_) throw std::invalid_argument(std::string("lock cluster: no fencing tokens: ") + kNoFencing);
    if (addresses_.size() != nodes_.size()) {
      throw std::invalid_argument("lock cluster: node_addresses and nodes differ in length");
    }
  }

  LockResult acquire(const std::string& key, std::chrono::milliseconds ttl) override {
    const auto start = std::chrono::steady_clock::now();
    const std::string token = os_random_hex(20);
    Reply r = run(key, {"SET", key, token, "NX", "PX", std::to_string(ttl.count())});
    if (!r.ok()) {
      if (r.indeterminate()) tokens_[key] = token;  // it may be set: a release must still be able to clean up
      return transport_result(r);
    }
    if (r.is_nil()) return LockResult::fail("held");
    if (!r.is_status("OK")) return LockResult::info("unexpected reply to SET");
    tokens_[key] = token;
    LockResult res = LockResult::ok();
    if (res.outcome == OpType::kOk) res.validity_ms = ttl.count() - ms_since(start);
    return res;
  }

  LockResult release(const std::string& key) override {
    auto it = tokens_.find(key);
    if (it == tokens_.end()) return LockResult::fail("not held by this client");
    Reply r = run(key, {"EVAL", kCompareAndDeleteScript, "1", key, it->second});
    LockResult res = one_or_zero_result(r, "EVAL");
    if (res.outcome != OpType::kInfo) tokens_.erase(key);
    return res;
  }

  LockResult extend(const std::string& key, std::chrono::milliseconds ttl) override {
    auto it = tokens_.find(key);
    if (it == tokens_.end()) return LockResult::fail("not held by this client");
    const auto start = std::chrono::steady_clock::now();
    Reply r = run(key, {"EVAL", kCompareAndPexpireScript, "1", key, it->second, std::to_string(ttl.count())});
    LockResult res = one_or_zero_result(r, "EVAL");
    if (res.outcome == OpType::kOk) res.validity_ms = ttl.count() - ms_since(start);
    return res;
  }

 private:
  RedisConn& conn(size_t n) {
    if (!conns_[n]) conns_[n] = std::make_unique<RedisConn>(nodes_[n], connect_timeout_, op_timeout_);
    return *conns_[n];
  }

  // The node whose cluster address is host:port, or -1.
  int node_at(const std::string& host, int port) const {
    for (size_t i = 0; i < addresses_.size(); ++i) {
      if (addresses_[i].host == host && addresses_[i].port == port) return static_cast<int>(i);
    }
    return -1;
  }

  // "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381" -> the node, or -1.
  int redirect_target(const std::string& error) const {
    const auto space = error.rfind(' ');
    const auto colon = error.rfind(':');
    if (space == std::string::npos || colon == std::string::npos || colon < space) return -1;
    return node_at(error.substr(space + 1, colon - space - 1), std::atoi(error.c_str() + colon + 1));
  }

  static Reply not_run(const std::string& why) {
    Reply r;
    r.status = RedisStatus::kNotSent;
    r.error = why;
    return r;
  }

  // Runs argv (a command on key) on the master of key's slot, following redirections.
  Reply run(const std::string& key, const std::vector<std::string>& argv) {
    if (stale_) reload_slots();
    const int slot = cluster_key_slot(key);
    int node = slots_[static_cast<size_t>(slot)];
    if (node < 0) node = static_cast<int>(next_node_ % nodes_.size());  // any node redirects us
    bool asking = false;
    for (int hop = 0; hop <= kMaxRedirects; ++hop) {
      RedisConn& c = conn(static_cast<size_t>(node));
      if (asking) {
        Reply a = c.command({"ASKING"});
        if (!a.ok()) {
          mark_stale(node);
          if (a.indeterminate()) return not_run("ASKING on " + c.endpoint().str() + ": " + a.error);
          return a;
        }
      }
      Reply r = c.command(argv);
      if (r.status != RedisStatus::kReply) {
        mark_stale(node);
        return r;
      }
      if (!r.is_error()) return r;
      if (starts_with(r.error, "MOVED ") || starts_with(r.error, "ASK ")) {
        const int to = redirect_target(r.error);
        if (to < 0) return not_run("redirected to a node this client does not know: " + r.error);
        asking = starts_with(r.error, "ASK ");
        if (!asking) {
          slots_[static_cast<size_t>(slot)] = to;
          stale_ = true;  // a slot moved: the rest of the map may have too
        }
        node = to;
        continue;
      }
      if (starts_with(r.error, "CLUSTERDOWN") || starts_with(r.error, "TRYAGAIN") || starts_with(r.error, "READONLY") ||
          starts_with(r.error, "MASTERDOWN")) {
        mark_stale(node);
      }
      return r;
    }
    return not_run("more than " + std::to_string(kMaxRedirects) + " redirections for slot " + std::to_string(slot));
  }

  void mark_stale(int node) {
    stale_ = true;
    next_node_ = static_cast<size_t>(node) + 1;  // ask the others first
  }

  // Reloads the slot map from the first node that answers CLUSTER SLOTS, starting at next_node_. Leaves the
  // map as it was (still stale) when none answers.
  void reload_slots() {
    for (size_t k = 0; k < nodes_.size(); ++k) {
      const size_t n = (next_node_ + k) % nodes_.size();
      Reply r = conn(n).command({"CLUSTER", "SLOTS"});
      const redisReply* raw = r.raw();
      if (!r.ok() || !raw || raw->type != REDIS_REPLY_ARRAY) continue;
      std::vector<int> slots(kClusterSlots, -1);
      for (size_t i = 0; i < raw->elements; ++i) {
        const redisReply* range = raw->element[i];
        if (range->type != REDIS_REPLY_ARRAY || range->elements < 3) continue;
        const redisReply* master = range->element[2];
        if (master->type != REDIS_REPLY_ARRAY || master->elements < 2 ||
            master->element[0]->type != REDIS_REPLY_STRING) {
          continue;
        }
        const int node = node_at(std::string(master->element[0]->str, master->element[0]->len),
                                 static_cast<int>(master->element[1]->integer));
        const long long lo = range->element[0]->integer, hi = range->element[1]->integer;
        for (long long s = std::max(0LL, lo); s <= hi && s < kClusterSlots; ++s) slots[static_cast<size_t>(s)] = node;
      }
      slots_ = std::move(slots);
      stale_ = false;
      next_node_ = n;
      return;
    }
  }

  std::vector<Endpoint> nodes_;      // this client's view of each node (its proxy links)
  std::vector<Endpoint> addresses_;  // each node's cluster address, what CLUSTER SLOTS and MOVED name
  std::chrono::milliseconds connect_timeout_;
  std::chrono::milliseconds op_timeout_;
  bool fencing_;
  std::vector<std::unique_ptr<RedisConn>> conns_;
  std::vector<int> slots_;  // slot -> node index, -1 unknown
  bool stale_ = true;       // reload the slot map before the next command
  size_t next_node_ = 0;    // where the next reload starts asking
  std::map<std::string, std::string> tokens_;
};

}  // namespace

std::unique_ptr<LockClient> make_cluster_lock(const LockOptions& o) {
  ignore_sigpipe();
  return std::make_unique<ClusterLock>(o);
}

// This lock's line in the registry (locks/registry.cc): its name, what `lockcheck list` says of it, its factory.
LockAlgorithm cluster_lock() {
  return {"cluster",
          "V3.1 on a Redis Cluster (--topology cluster): the key's slot master, MOVED/ASK followed",
          "replication is asynchronous: a master cut off from the cluster grants locks its promoted replica never "
          "receives",
          make_cluster_lock,
          "",
          /*hands_out_tokens=*/false,
          "resp-cluster",
          /*external=*/false,
          /*no_fencing=*/kNoFencing};
}

}  // namespace lockcheck
