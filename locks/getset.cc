// `getset` (V1.1 of the 'evolution of Redis locks' article): the value is the lock's expiry time, a Unix timestamp in ms
// from the client's wall clock, and Redis never expires the key itself. Acquire: SETNX key <now+ttl>; if the
// key exists, GET it, and when that expiry is in the past, GETSET key <now+ttl>: the client that gets back the
// old value it saw has stolen the expired lock. Release: DEL. Defects, all kept:
//  - correctness rests on synchronised client clocks (a client whose clock runs ahead steals live locks);
//  - GETSET overwrites the holder's value even for the client that then loses the race, moving the expiry;
//  - DEL deletes the lock even when another client has stolen it in the meantime (a holder past its expiry);
//  - under contention the value keeps being overwritten while nobody gets the lock.
// Client clock skew (the recipe's assumption broken on purpose): extra["clock_skew_max_ms"] = M gives each
// client a fixed offset drawn from [-M, M] with its seed (lock `getset-skewed`: M = 400 ms), added to every
// reading of its clock. A client whose clock runs ahead takes live locks for expired ones and steals them.
#include <map>

#include "core/random.h"
#include "locks/fencing.h"
#include "locks/lock_extra.h"
#include "locks/single_node.h"
#include "sys/process.h"

namespace lockcheck {

namespace {

// The recipe's clock: the client's wall clock, Unix ms.
int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::optional<int64_t> parse_ms(const std::string& s) {
  try {
    size_t used = 0;
    long long v = std::stoll(s, &used);
    if (used != s.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

class GetsetLock : public LockClient {
 public:
  explicit GetsetLock(const LockOptions& o)
      : conn_(o.nodes.at(0), o.connect_timeout, o.op_timeout), fencing_(o.fencing) {
    const int64_t skew_max = extra_int(o, "clock_skew_max_ms", 0, 0, 3600 * 1000);
    if (skew_max > 0) {
      std::mt19937_64 rng(derive_seed(o.seed, 77));
      skew_ms_ = uniform(rng, -skew_max, skew_max);
    }
  }

  LockResult acquire(const std::string& key, std::chrono::milliseconds ttl) override {
    const auto start = std::chrono::steady_clock::now();
    std::string expiry = std::to_string(now_ms() + ttl.count());
    Reply r = conn_.command({"SETNX", key, expiry});
    if (!r.ok()) return transport_result(r);
    auto set = r.integer();
    if (!set) return LockResult::info("unexpected reply to SETNX");
    if (*set == 0) {
      // Held: is it expired? A GET changes nothing, so a failed GET is a plain fail.
      Reply g = conn_.command({"GET", key});
      if (!g.ok()) return LockResult::fail("held; " + g.error);
      auto old = g.str();
      if (!old) return LockResult::fail("held (released meanwhile)");
      auto old_ms = parse_ms(*old);
      if (!old_ms) return LockResult::fail("held (value is not a timestamp)");
      if (*old_ms >= now_ms()) return LockResult::fail("held");
      expiry = std::to_string(now_ms() + ttl.count());
      Reply gs = conn_.command({"GETSET", key, expiry});
      if (!gs.ok()) return transport_result(gs);
      auto current = gs.str();
      // Lost the race: another client stole it first. Our GETSET has overwritten its expiry all the same.
      if (!current || *current != *old) return LockResult::fail("held (another client stole the expired lock first)");
    }
    held_[key] = expiry;
    LockResult res = LockResult::ok();
    if (fencing_) add_fencing_token(conn_, key, res);
    if (res.outcome == OpType::kOk) res.validity_ms = ttl.count() - ms_since(start);
    return res;
  }

  LockResult release(const std::string& key) override {
    if (!held_.count(key)) return LockResult::fail("not held by this client");
    Reply r = conn_.command({"DEL", key});  // the recipe's release: whoever holds it now
    LockResult res = one_or_zero_result(r, "DEL");
    if (res.outcome != OpType::kInfo) held_.erase(key);
    return res;
  }

  LockResult extend(const std::string&, std::chrono::milliseconds) override { return LockResult::fail("unsupported"); }

 private:
  int64_t now_ms() const { return wall_ms() + skew_ms_; }

  RedisConn conn_;
  bool fencing_;
  int64_t skew_ms_ = 0;                      // this client's clock error
  std::map<std::string, std::string> held_;  // key -> the expiry value we wrote
};

}  // namespace

std::unique_ptr<LockClient> make_getset_lock(const LockOptions& o) {
  ignore_sigpipe();
  return std::make_unique<GetsetLock>(o);
}

// This lock's line in the registry (locks/registry.cc): its name, what `lockcheck list` says of it, its factory.
LockAlgorithm getset_lock() {
  return {"getset",
          "V1.1: value = expiry timestamp (client wall clock), no Redis TTL; SETNX, else GET and GETSET to "
          "steal an expired lock; release with DEL",
          "needs synchronised client clocks; a losing GETSET still moves the holder's expiry; DEL deletes a lock "
          "another client has stolen",
          make_getset_lock};
}

// This lock's line in the registry (locks/registry.cc): its name, what `lockcheck list` says of it, its factory.
LockAlgorithm getset_skewed_lock() {
  return {"getset-skewed",
          "getset with client clocks off by up to +-400 ms (each client a fixed offset drawn from its seed)",
          "a client whose clock runs ahead steals live locks (the recipe assumes synchronised clocks)",
          [](const LockOptions& o) {
            LockOptions s = o;
            if (!s.extra.is_object()) s.extra = nlohmann::json::object();
            if (!s.extra.contains("clock_skew_max_ms")) s.extra["clock_skew_max_ms"] = 400;
            return make_getset_lock(s);
          }};
}

}  // namespace lockcheck
