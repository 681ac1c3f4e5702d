// `single` (V3.1 of the 'evolution of Redis locks' article): one Redis node; SET key token NX PX ttl with a random unique token,
// release by the compare-and-delete script so a client never deletes a lock it no longer holds. Known limits:
// a single point of failure (a restart without persistence forgets the lock), and no protection once the TTL
// expires under a holder that is still working (pause, slow write): that needs fencing (--fencing adds an
// INCR of "<key>:fence" after each acquire, see locks/fencing.h).
//
// Extend: compare-and-pexpire (fails once the key expired or another client took it). Lock option
// extra["extend_mode"] = "setnx" (lock `single-extend-setnx`) re-creates an expired lock with SET NX instead,
// as redsync's WithSetNXOnExtend does: the extend then succeeds after another client held the lock and let it
// go in between, and the client believes it held the lock throughout (a resurrected lock).
#include <chrono>
#include <map>

#include "core/random.h"
#include "locks/fencing.h"
#include "locks/lock_client.h"
#include "locks/lock_extra.h"
#include "sys/process.h"
#include "sys/redis_conn.h"

namespace lockcheck {

namespace {

// KEYS[1] key; ARGV[1] token, ARGV[2] ttl ms. Ours: PEXPIRE; gone: SET NX PX again (1); someone else's: 0.
const char* const kPexpireOrSetnxScript =
    "local v = redis.call('get', KEYS[1]) "
    "if v == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end "
    "if v == false then redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') return 1 end "
    "return 0";

bool extend_with_setnx(const LockOptions& o) {
  const std::string mode = extra_value<std::string>(o, "extend_mode", "pexpire");
  if (mode != "pexpire" && mode != "setnx") {
    throw std::invalid_argument("lock option \"extend_mode\": '" + mode + "' is not one of pexpire, setnx");
  }
  return mode == "setnx";
}

class SingleLock : public LockClient {
 public:
  explicit SingleLock(const LockOptions& o)
      : conn_(o.nodes.at(0), o.connect_timeout, o.op_timeout),
        fencing_(o.fencing),
        extend_setnx_(extend_with_setnx(o)) {}

  LockResult acquire(const std::string& key, std::chrono::milliseconds ttl) override {
    const auto start = std::chrono::steady_clock::now();
    std::string token = os_random_hex(20);
    Reply r = conn_.command({"SET", key, token, "NX", "PX", std::to_string(ttl.count())});
    if (r.indeterminate()) {
      tokens_[key] = token;  // it may have been set: a later release must still be able to clean it up
      return LockResult::info(r.error);
    }
    if (r.definitely_failed()) return LockResult::fail(r.error);
    if (r.is_nil()) return LockResult::fail("held");
    if (!r.is_status("OK")) return LockResult::info("unexpected reply to SET");
    tokens_[key] = token;
    LockResult res = LockResult::ok();
    if (fencing_) add_fencing_token(conn_, key, res);
    if (res.outcome != OpType::kOk) return res;
    auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    res.validity_ms = (ttl - elapsed).count();
    return res;
  }

  LockResult release(const std::string& key) override {
    auto it = tokens_.find(key);
    if (it == tokens_.end()) return LockResult::fail("not held by this client");
    Reply r = conn_.command({"EVAL", kCompareAndDeleteScript, "1", key, it->second});
    return finish_compare(r, key, /*forget=*/true);
  }

  LockResult extend(const std::string& key, std::chrono::milliseconds ttl) override {
    auto it = tokens_.find(key);
    if (it == tokens_.end()) return LockResult::fail("not held by this client");
    const auto start = std::chrono::steady_clock::now();
    Reply r = conn_.command({"EVAL", extend_setnx_ ? kPexpireOrSetnxScript : kCompareAndPexpireScript, "1", key,
                             it->second, std::to_string(ttl.count())});
    LockResult res = finish_compare(r, key, /*forget=*/false);
    if (res.outcome == OpType::kOk) {
      auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
      res.validity_ms = (ttl - elapsed).count();
    }
    return res;
  }

 private:
  LockResult finish_compare(const Reply& r, const std::string& key, bool forget) {
    if (r.indeterminate()) return LockResult::info(r.error);
    if (r.definitely_failed()) return LockResult::fail(r.error);
    auto n = r.integer();
    if (!n) return LockResult::info("unexpected reply to EVAL");
    if (forget) tokens_.erase(key);
    if (*n == 0) return LockResult::fail("not held (expired or taken)");
    return LockResult::ok();
  }

  RedisConn conn_;
  bool fencing_;
  bool extend_setnx_;
  std::map<std::string, std::string> tokens_;
};

}  // namespace

std::unique_ptr<LockClient> make_single_lock(const LockOptions& o) {
  ignore_sigpipe();
  return std::make_unique<SingleLock>(o);
}

// This lock's line in the registry (locks/registry.cc): its name, what `lockcheck list` says of it, its factory.
LockAlgorithm single_lock() {
  return {"single", "V3.1: SET key token NX PX ttl on one node, random 20-byte token, compare-and-delete release",
          "one node is a single point of failure; a holder paused past the TTL keeps working after the lock expired",
          make_single_lock};
}

// This lock's line in the registry (locks/registry.cc): its name, what `lockcheck list` says of it, its factory.
LockAlgorithm single_extend_setnx_lock() {
  return {"single-extend-setnx",
          "single whose extend re-creates an expired lock with SET NX (redsync's "
          "WithSetNXOnExtend; lock option extend_mode=setnx)",
          "an extend after the lock expired and another client held it succeeds: the client believes it held the "
          "lock throughout (resurrected lock)",
          [](const LockOptions& o) {
            LockOptions s = o;
            if (!s.extra.is_object()) s.extra = nlohmann::json::object();
            s.extra["extend_mode"] = "setnx";
            return make_single_lock(s);
          }};
}

}  // namespace lockcheck
