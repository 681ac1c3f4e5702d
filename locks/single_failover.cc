// `single-failover`: the V3.1 lock (SET key token NX PX ttl, compare-and-delete release) on a master that is
// replicated to replicas and watched by Sentinel (--topology replicated). The client asks the Sentinels for
// the current master (SENTINEL get-master-addr-by-name), as Sentinel-aware clients do (redis-py's Sentinel,
// Jedis' JedisSentinelPool), and follows a failover as soon as Sentinel announces it: before each acquire it
// asks again and moves to the master Sentinel names now (JedisSentinelPool does the same on Sentinel's
// +switch-master message). It also asks again after a transport error or a READONLY reply (it was talking to
// a master that has since been demoted). With extra["follow"] = "on-error" it asks only then (a client that
// keeps its connection to the old master as long as it answers).
// This is the setup the Redlock article shows unsafe: replication is asynchronous, so a master can
// acknowledge the lock and die before a replica has it; Sentinel promotes that replica and a second client
// takes the same lock there.
// --lock-opt wait_replicas=N sends WAIT N op_timeout after each SET, and gives the lock back (fail)
// when fewer than N replicas acknowledged, as WAIT-synchronised locks do. It narrows the window (the write
// has reached N replicas) without closing it: WAIT is not a consensus, and Sentinel may still promote a replica
// that did not acknowledge.
//
// Options (LockOptions.extra): master_name (kSentinelMasterName), wait_replicas (0), follow ("sentinel" or
// "on-error").
// The address a Sentinel reports is the node's own; the client maps it to its own view of that node
// (LockOptions.node_addresses[i] -> nodes[i], the fault proxy's link for this client) before connecting, and
// connects directly only to an address it does not know.
#include <hiredis/hiredis.h>

#include <map>
#include <optional>

#include "core/random.h"
#include "locks/fencing.h"
#include "locks/lock_extra.h"
#include "locks/single_node.h"
#include "sys/process.h"

namespace lockcheck {

namespace {

class SingleFailoverLock : public LockClient {
 public:
  explicit SingleFailoverLock(const LockOptions& o)
      : nodes_(o.nodes),
        node_addresses_(o.node_addresses),
        connect_timeout_(o.connect_timeout),
        op_timeout_(o.op_timeout),
        fencing_(o.fencing),
        master_name_(extra_value<std::string>(o, "master_name", kSentinelMasterName)),
        wait_replicas_(extra_int(o, "wait_replicas", 0, 0, 1000)),
        follow_sentinel_(extra_value<std::string>(o, "follow", "sentinel") != "on-error") {
    const std::string follow = extra_value<std::string>(o, "follow", "sentinel");
    if (follow != "sentinel" && follow != "on-error") {
      throw std::invalid_argument("lock option \"follow\": '" + follow + "' is not one of sentinel, on-error");
    }
    if (o.sentinels.empty()) {
      throw std::invalid_argument("lock single-failover needs Sentinels: run it with --topology replicated");
    }
    for (const auto& s : o.sentinels)
      sentinels_.push_back(std::make_unique<RedisConn>(s, connect_timeout_, op_timeout_));
  }

  LockResult acquire(const std::string& key, std::chrono::milliseconds ttl) override {
    std::string why;
    if (follow_sentinel_ && master_) {
      // Where Sentinel says the master is now; a Sentinel that does not answer leaves the connection as it is.
      auto named = ask_sentinels(&why);
      if (named && *named != master_addr_) master_.reset();
    }
    RedisConn* m = master(&why);
    if (m == nullptr) return LockResult::fail("no master: " + why);
    const auto start = std::chrono::steady_clock::now();
    const std::string token = os_random_hex(20);
    Reply r = m->command({"SET", key, token, "NX", "PX", std::to_string(ttl.count())});
    if (!r.ok()) {
      if (r.indeterminate()) tokens_[key] = token;  // it may be set: a release must still be able to clean up
      forget_master_after(r);
      return transport_result(r);
    }
    if (r.is_nil()) return LockResult::fail("held");
    if (!r.is_status("OK")) return LockResult::info("unexpected reply to SET");
    tokens_[key] = token;
    if (wait_replicas_ > 0) {
      LockResult w = wait_for_replicas(*m, key, token);
      if (w.outcome != OpType::kOk) return w;
    }
    LockResult res = LockResult::ok();
    if (fencing_) add_fencing_token(*m, key, res);
    if (res.outcome == OpType::kOk) res.validity_ms = ttl.count() - ms_since(start);
    return res;
  }

  LockResult release(const std::string& key) override {
    auto it = tokens_.find(key);
    if (it == tokens_.end()) return LockResult::fail("not held by this client");
    std::string why;
    RedisConn* m = master(&why);
    if (m == nullptr) return LockResult::fail("no master: " + why);
    Reply r = m->command({"EVAL", kCompareAndDeleteScript, "1", key, it->second});
    forget_master_after(r);
    LockResult res = one_or_zero_result(r, "EVAL");
    if (res.outcome != OpType::kInfo) tokens_.erase(key);
    return res;
  }

  LockResult extend(const std::string& key, std::chrono::milliseconds ttl) override {
    auto it = tokens_.find(key);
    if (it == tokens_.end()) return LockResult::fail("not held by this client");
    std::string why;
    RedisConn* m = master(&why);
    if (m == nullptr) return LockResult::fail("no master: " + why);
    const auto start = std::chrono::steady_clock::now();
    Reply r = m->command({"EVAL", kCompareAndPexpireScript, "1", key, it->second, std::to_string(ttl.count())});
    forget_master_after(r);
    LockResult res = one_or_zero_result(r, "EVAL");
    if (res.outcome == OpType::kOk) res.validity_ms = ttl.count() - ms_since(start);
    return res;
  }

 private:
  // The connection to the master the Sentinels name, asking them when there is none. nullptr (and why) when
  // no Sentinel answered with an address.
  RedisConn* master(std::string* why) {
    if (master_) return master_.get();
    auto ep = ask_sentinels(why);
    if (!ep) return nullptr;
    master_addr_ = *ep;
    master_ = std::make_unique<RedisConn>(client_view(*ep), connect_timeout_, op_timeout_);
    return master_.get();
  }

  // The master's address as the first Sentinel that answers names it; nullopt (and why) when none does.
  std::optional<Endpoint> ask_sentinels(std::string* why) {
    std::string errors;
    for (size_t k = 0; k < sentinels_.size(); ++k) {
      RedisConn& s = *sentinels_[(next_sentinel_ + k) % sentinels_.size()];
      Reply r = s.command({"SENTINEL", "get-master-addr-by-name", master_name_});
      const redisReply* raw = r.raw();
      if (r.ok() && raw && raw->type == REDIS_REPLY_ARRAY && raw->elements == 2 &&
          raw->element[0]->type == REDIS_REPLY_STRING && raw->element[1]->type == REDIS_REPLY_STRING) {
        next_sentinel_ = (next_sentinel_ + k) % sentinels_.size();
        return Endpoint{std::string(raw->element[0]->str, raw->element[0]->len),
                        std::atoi(std::string(raw->element[1]->str, raw->element[1]->len).c_str())};
      }
      errors += (errors.empty() ? "" : "; ") + s.endpoint().str() + ": " +
                (r.ok() ? std::string("no address for ") + master_name_ : r.error);
    }
    *why = errors;
    return std::nullopt;
  }

  // Where this client reaches the node whose own address is ep.
  Endpoint client_view(const Endpoint& ep) const {
    for (size_t i = 0; i < node_addresses_.size() && i < nodes_.size(); ++i) {
      if (node_addresses_[i] == ep) return nodes_[i];
    }
    return ep;
  }

  // After a transport error or READONLY (a demoted master), ask the Sentinels again next time.
  void forget_master_after(const Reply& r) {
    if (r.status != RedisStatus::kReply || (r.is_error() && r.error.rfind("READONLY", 0) == 0)) master_.reset();
  }

  LockResult wait_for_replicas(RedisConn& m, const std::string& key, const std::string& token) {
    // WAIT blocks up to its own timeout on the server: give the request that long plus the usual op timeout.
    m.set_op_timeout(op_timeout_ * 2);
    Reply w = m.command({"WAIT", std::to_string(wait_replicas_), std::to_string(op_timeout_.count())});
    m.set_op_timeout(op_timeout_);
    auto acked = w.integer();
    if (acked && *acked >= wait_replicas_) return LockResult::ok();
    forget_master_after(w);
    const std::string what =
        acked ? "WAIT: " + std::to_string(*acked) + " of " + std::to_string(wait_replicas_) + " replicas acknowledged"
              : "WAIT: " + (w.error.empty() ? std::string("unexpected reply") : w.error);
    // Not replicated enough: give the lock back. Only a definite answer makes this a clean failure.
    RedisConn* again = master_ ? master_.get() : nullptr;
    if (again != nullptr) {
      Reply d = again->command({"EVAL", kCompareAndDeleteScript, "1", key, token});
      if (d.ok() && d.integer()) {
        tokens_.erase(key);
        return LockResult::fail(what + "; released");
      }
    }
    return LockResult::info(what + "; release unknown");
  }

  std::vector<Endpoint> nodes_;
  std::vector<Endpoint> node_addresses_;
  std::chrono::milliseconds connect_timeout_;
  std::chrono::milliseconds op_timeout_;
  bool fencing_;
  std::string master_name_;
  int64_t wait_replicas_;
  bool follow_sentinel_;
  std::vector<std::unique_ptr<RedisConn>> sentinels_;
  size_t next_sentinel_ = 0;
  std::unique_ptr<RedisConn> master_;
  Endpoint master_addr_;  // the address Sentinel gave for master_
  std::map<std::string, std::string> tokens_;
};

}  // namespace

std::unique_ptr<LockClient> make_single_failover_lock(const LockOptions& o) {
  ignore_sigpipe();
  return std::make_unique<SingleFailoverLock>(o);
}

// This lock's line in the registry (locks/registry.cc): its name, what `lockcheck list` says of it, its factory.
LockAlgorithm single_failover_lock() {
  return {"single-failover",
          "V3.1 on the master Sentinel names (--topology replicated); --lock-opt wait_replicas=N adds WAIT N after SET",
          "replication is asynchronous: a promoted replica that lacks the lock grants it again (WAIT narrows the "
          "window, does not close it)",
          make_single_failover_lock,
          "master_name, wait_replicas",
          /*hands_out_tokens=*/true,
          "resp-sentinel"};
}

}  // namespace lockcheck
