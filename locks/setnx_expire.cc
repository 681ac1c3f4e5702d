// `setnx-expire` (V1.0 of the 'evolution of Redis locks' article): SETNX key 1, then EXPIRE key ttl as a second command;
// release with DEL. Faithful to the recipe, defects included:
//  - the two commands are not atomic: a client that dies (or a node that fails) between them leaves a lock
//    with no expiry, which nobody can ever take again (liveness);
//  - DEL releases whatever is there: a holder that outlived its TTL deletes the next holder's lock (safety);
//  - the client ignores EXPIRE's outcome, as the recipe does: it holds the lock once SETNX said so.
// EXPIRE is sent as PEXPIRE (its millisecond form) so that the run's --ttl-ms is honoured exactly.
//
// Crash point "mid-acquire" (client-crash nemesis): between SETNX and EXPIRE.
// Test hook: extra["test_die_after_setnx"] = true makes acquire stop after SETNX, as a client that crashed
// between the two commands (the acquire is reported info: the client is gone).
#include <set>

#include "locks/fencing.h"
#include "locks/lock_extra.h"
#include "locks/single_node.h"
#include "sys/process.h"

namespace lockcheck {

namespace {

class SetnxExpireLock : public LockClient {
 public:
  explicit SetnxExpireLock(const LockOptions& o)
      : conn_(o.nodes.at(0), o.connect_timeout, o.op_timeout),
        fencing_(o.fencing),
        die_after_setnx_(extra_value<bool>(o, "test_die_after_setnx", false)) {}

  LockResult acquire(const std::string& key, std::chrono::milliseconds ttl) override {
    const auto start = std::chrono::steady_clock::now();
    Reply r = conn_.command({"SETNX", key, "1"});
    if (!r.ok()) return transport_result(r);
    auto set = r.integer();
    if (!set) return LockResult::info("unexpected reply to SETNX");
    if (*set == 0) return LockResult::fail("held");
    held_.insert(key);
    if (die_after_setnx_) return LockResult::info("test hook: the client died between SETNX and EXPIRE");
    if (crash_point("mid-acquire")) return LockResult::info("client crashed between SETNX and EXPIRE");
    // Whatever EXPIRE does, the recipe's client goes on as the holder.
    conn_.command({"PEXPIRE", key, std::to_string(ttl.count())});
    LockResult res = LockResult::ok();
    if (fencing_) add_fencing_token(conn_, key, res);
    if (res.outcome == OpType::kOk) res.validity_ms = ttl.count() - ms_since(start);
    return res;
  }

  LockResult release(const std::string& key) override {
    if (!held_.count(key)) return LockResult::fail("not held by this client");
    Reply r = conn_.command({"DEL", key});
    LockResult res = one_or_zero_result(r, "DEL");
    if (res.outcome != OpType::kInfo) held_.erase(key);
    return res;
  }

  LockResult extend(const std::string&, std::chrono::milliseconds) override { return LockResult::fail("unsupported"); }

 private:
  RedisConn conn_;
  bool fencing_;
  bool die_after_setnx_;
  std::set<std::string> held_;
};

}  // namespace

std::unique_ptr<LockClient> make_setnx_expire_lock(const LockOptions& o) {
  ignore_sigpipe();
  return std::make_unique<SetnxExpireLock>(o);
}

// This lock's line in the registry (locks/registry.cc): its name, what `lockcheck list` says of it, its factory.
LockAlgorithm setnx_expire_lock() {
  return {"setnx-expire", "V1.0: SETNX key 1, then EXPIRE as a second command; release with DEL",
          "not atomic: a client that dies between the two commands leaves a lock that never expires; DEL deletes "
          "whoever holds it",
          make_setnx_expire_lock};
}

}  // namespace lockcheck
