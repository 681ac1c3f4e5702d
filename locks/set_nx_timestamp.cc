// `set-nx-timestamp` (V3.0 of the 'evolution of Redis locks' article): SET key <Unix timestamp> NX PX ttl; release by the
// compare-and-delete script, so a client deletes the lock only when it still holds its own value. The defect
// the article names: the value is not unique. Two clients that lock within the same second (a Unix timestamp
// is whole seconds, read from the client's wall clock) carry the same value, so a holder that outlived its TTL
// deletes the next holder's lock as V2.0 did; skewed client clocks make collisions likelier still.
#include <map>

#include "locks/fencing.h"
#include "locks/single_node.h"
#include "sys/process.h"

namespace lockcheck {

namespace {

class SetNxTimestampLock : public LockClient {
 public:
  explicit SetNxTimestampLock(const LockOptions& o)
      : conn_(o.nodes.at(0), o.connect_timeout, o.op_timeout), fencing_(o.fencing) {}

  LockResult acquire(const std::string& key, std::chrono::milliseconds ttl) override {
    const auto start = std::chrono::steady_clock::now();
    // The recipe's value: the client's wall clock in Unix seconds (not unique: that is the defect).
    const std::string value = std::to_string(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
    Reply r = conn_.command({"SET", key, value, "NX", "PX", std::to_string(ttl.count())});
    if (!r.ok()) {
      if (r.indeterminate()) values_[key] = value;  // it may be set: a release must still be able to clean up
      return transport_result(r);
    }
    if (r.is_nil()) return LockResult::fail("held");
    if (!r.is_status("OK")) return LockResult::info("unexpected reply to SET");
    values_[key] = value;
    LockResult res = LockResult::ok();
    if (fencing_) add_fencing_token(conn_, key, res);
    if (res.outcome == OpType::kOk) res.validity_ms = ttl.count() - ms_since(start);
    return res;
  }

  LockResult release(const std::string& key) override {
    auto it = values_.find(key);
    if (it == values_.end()) return LockResult::fail("not held by this client");
    Reply r = conn_.command({"EVAL", kCompareAndDeleteScript, "1", key, it->second});
    LockResult res = one_or_zero_result(r, "EVAL");
    if (res.outcome != OpType::kInfo) values_.erase(key);
    return res;
  }

  LockResult extend(const std::string&, std::chrono::milliseconds) override { return LockResult::fail("unsupported"); }

 private:
  RedisConn conn_;
  bool fencing_;
  std::map<std::string, std::string> values_;
};

}  // namespace

std::unique_ptr<LockClient> make_set_nx_timestamp_lock(const LockOptions& o) {
  ignore_sigpipe();
  return std::make_unique<SetNxTimestampLock>(o);
}

// This lock's line in the registry (locks/registry.cc): its name, what `lockcheck list` says of it, its factory.
LockAlgorithm set_nx_timestamp_lock() {
  return {"set-nx-timestamp", "V3.0: SET key <Unix seconds> NX PX ttl; release by compare-and-delete",
          "the value is not unique: clients locking within the same second share it, so a late holder deletes the "
          "next holder's lock",
          make_set_nx_timestamp_lock};
}

}  // namespace lockcheck
