// `set-nx-ex-del` (V2.0 of the 'evolution of Redis locks' article): SET key 1 NX PX ttl, one atomic command; release with
// a plain DEL. Fixes V1.0's missing expiry, keeps its other defect: a holder that outlived its TTL (a pause,
// a slow job) deletes the lock of the next holder, and a third client then gets it while the second still
// works. The recipe writes EX seconds; PX is the same command in milliseconds (honours --ttl-ms exactly).
#include <set>

#include "locks/fencing.h"
#include "locks/single_node.h"
#include "sys/process.h"

namespace lockcheck {

namespace {

class SetNxExDelLock : public LockClient {
 public:
  explicit SetNxExDelLock(const LockOptions& o)
      : conn_(o.nodes.at(0), o.connect_timeout, o.op_timeout), fencing_(o.fencing) {}

  LockResult acquire(const std::string& key, std::chrono::milliseconds ttl) override {
    const auto start = std::chrono::steady_clock::now();
    Reply r = conn_.command({"SET", key, "1", "NX", "PX", std::to_string(ttl.count())});
    if (!r.ok()) return transport_result(r);
    if (r.is_nil()) return LockResult::fail("held");
    if (!r.is_status("OK")) return LockResult::info("unexpected reply to SET");
    held_.insert(key);
    LockResult res = LockResult::ok();
    if (fencing_) add_fencing_token(conn_, key, res);
    if (res.outcome == OpType::kOk) res.validity_ms = ttl.count() - ms_since(start);
    return res;
  }

  LockResult release(const std::string& key) override {
    if (!held_.count(key)) return LockResult::fail("not held by this client");
    Reply r = conn_.command({"DEL", key});  // whoever holds it now
    LockResult res = one_or_zero_result(r, "DEL");
    if (res.outcome != OpType::kInfo) held_.erase(key);
    return res;
  }

  LockResult extend(const std::string&, std::chrono::milliseconds) override { return LockResult::fail("unsupported"); }

 private:
  RedisConn conn_;
  bool fencing_;
  std::set<std::string> held_;
};

}  // namespace

std::unique_ptr<LockClient> make_set_nx_ex_del_lock(const LockOptions& o) {
  ignore_sigpipe();
  return std::make_unique<SetNxExDelLock>(o);
}

// This lock's line in the registry (locks/registry.cc): its name, what `lockcheck list` says of it, its factory.
LockAlgorithm set_nx_ex_del_lock() {
  return {"set-nx-ex-del", "V2.0: SET key 1 NX PX ttl in one command; release with plain DEL",
          "a holder that outlives its TTL deletes the next holder's lock with DEL", make_set_nx_ex_del_lock};
}

}  // namespace lockcheck
