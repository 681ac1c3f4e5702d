// `redlock` and `redlock-sequential`: the Redlock algorithm (antirez, the Redis docs' "distlock"; seed 000)
// on N independent masters, quorum N/2+1. One implementation with two fan-out strategies (locks/node_fanout.h):
// `redlock` sends to every node at once (redsync, node-redlock, pottery); `redlock-sequential` contacts the
// nodes one after another (both Ruby clients, redis-plus-plus, redlock-py, Redisson's RedLock).
//
// Acquire, one attempt:
//   1. start = the monotonic clock (never the wall clock: a stepped client clock must not stretch validity);
//   2. SET key token NX PX ttl on every node, token = 20 random bytes, each request bounded by op_timeout
//      (a per-node timeout much smaller than the TTL);
//   3. elapsed = now - start; drift = ttl * drift_factor + drift_ms (0.01 and 2 ms: the reference Ruby
//      client's numbers, copied by most clients); validity = ttl - elapsed - drift;
//   4. success iff a quorum said OK and validity > 0; the result reports validity_ms;
//   5. otherwise release on every node (compare-and-delete, also on the nodes that refused) and, after a random
//      delay in [retry_delay_ms, retry_delay_ms + retry_jitter_ms] from the seeded RNG, try again, up to
//      retry_count more times.
// Release: compare-and-delete on every node, whatever the acquire saw. Extend: compare-and-pexpire on every
// node, re-acquired only with a quorum within the new validity (ttl - elapsed - drift).
//
// Outcome taxonomy (what the history records). Per node, each round's reply counts as
//   yes      the node did it (SET: +OK; scripts: 1);
//   no       it certainly did not: NX refused (nil), script answered 0, an error reply, or the request was
//            never sent (connection refused, no connection within connect_timeout);
//   unknown  it may have: a timeout or a connection closed after the request was written.
// acquire
//   ok    an attempt had yes >= quorum and validity > 0.
//   An attempt that failed releases on every node; afterwards our token may still sit on the nodes whose SET
//   was unknown (a late SET can overtake the release, which runs on a new connection) and on the nodes whose
//   SET said yes but whose release did not answer. If those are fewer than a quorum, the attempt failed
//   cleanly: no quorum holds our token now or later. Otherwise it is indeterminate: a quorum may hold the token
//   until it expires, although this client will not act on it (e.g. a quorum that came back too late, or
//   three of five nodes paused).
//   info  no attempt succeeded and at least one was indeterminate;
//   fail  every attempt failed cleanly ("held", nodes down). A definite majority of NX refusals or refused
//         connections is therefore a fail, and so is a quorum won too late but undone by the release.
// release
//   ok    yes >= quorum (our token deleted on a quorum);
//   fail  yes + unknown < quorum: on enough nodes the key had expired or belonged to another client, so this
//         client no longer held the lock when it released ("not held on a quorum");
//   info  otherwise.
// extend  as release, and ok also needs validity > 0 (a quorum extended too late is info).
// With --fencing an ok acquire also takes a token on a quorum (locks/fencing.h: INCR, then raise every
// counter to the max); if either round lacks a quorum, the lock is released and the acquire is info.
//
// Options (LockOptions.extra): retry_count (3), retry_delay_ms (200), retry_jitter_ms (50), drift_factor
// (0.01), drift_ms (2), quorum (0: N/2+1).
#include <algorithm>
#include <map>
#include <random>
#include <thread>

#include "core/random.h"
#include "locks/fencing.h"
#include "locks/lock_extra.h"
#include "locks/node_fanout.h"
#include "locks/quorum.h"

namespace lockcheck {

namespace {

struct RedlockOptions {
  int retry_count = 3;
  int64_t retry_delay_ms = 200;
  int64_t retry_jitter_ms = 50;
  double drift_factor = 0.01;
  int64_t drift_ms = 2;
  int quorum = 0;  // 0: a majority

  static RedlockOptions from(const LockOptions& o) {
    RedlockOptions r;
    const int64_t n = static_cast<int64_t>(o.nodes.size());
    r.retry_count = static_cast<int>(extra_int(o, "retry_count", r.retry_count, 0, 1000));
    r.retry_delay_ms = extra_int(o, "retry_delay_ms", r.retry_delay_ms, 0, 60000);
    r.retry_jitter_ms = extra_int(o, "retry_jitter_ms", r.retry_jitter_ms, 0, 60000);
    r.drift_factor = extra_value<double>(o, "drift_factor", r.drift_factor);
    if (!(r.drift_factor >= 0 && r.drift_factor < 1)) {
      throw std::invalid_argument("lock option \"drift_factor\": must be in [0, 1)");
    }
    r.drift_ms = extra_int(o, "drift_ms", r.drift_ms, 0, 60000);
    r.quorum = static_cast<int>(extra_int(o, "quorum", 0, 0, n));
    if (r.quorum == 0) r.quorum = majority(static_cast<int>(n));
    return r;
  }
};

// Counts one round's replies, keeping the first reason of each kind for the error text.
struct Tally {
  QuorumCount count;
  std::vector<bool> yes;  // per node
  std::vector<bool> unknown;
  std::string first_no, first_unknown;
  int held = 0;  // "no" because another client holds the key (NX refused, script 0)

  // A node's reply: yes_if decides what counts as done.
  template <typename YesIf>
  static Tally of(const std::vector<NodeReply>& replies, YesIf yes_if) {
    Tally t;
    t.yes.assign(replies.size(), false);
    t.unknown.assign(replies.size(), false);
    for (size_t i = 0; i < replies.size(); ++i) {
      const NodeReply& r = replies[i];
      if (r.indeterminate()) {
        ++t.count.unknown;
        t.unknown[i] = true;
        if (t.first_unknown.empty()) t.first_unknown = r.text;
      } else if (r.definitely_failed()) {
        ++t.count.no;
        if (t.first_no.empty()) t.first_no = r.text;
      } else if (yes_if(r)) {
        ++t.count.yes;
        t.yes[i] = true;
      } else if (r.is_nil() || (r.is_integer() && r.integer == 0)) {
        ++t.count.no;
        ++t.held;
      } else {
        ++t.count.unknown;  // a reply we do not understand: do not count it either way
        t.unknown[i] = true;
        if (t.first_unknown.empty()) t.first_unknown = "unexpected reply";
      }
    }
    return t;
  }

  std::string describe(int quorum, size_t n) const {
    std::string s =
        std::to_string(count.yes) + " of " + std::to_string(n) + " nodes (quorum " + std::to_string(quorum) + ")";
    if (held > 0) s += ", " + std::to_string(held) + " held by another client";
    const int down = count.no - held;
    if (down > 0) s += ", " + std::to_string(down) + " refused (" + first_no + ")";
    if (count.unknown > 0) s += ", " + std::to_string(count.unknown) + " unknown (" + first_unknown + ")";
    return s;
  }
};

bool is_ok_status(const NodeReply& r) { return r.is_status("OK"); }
bool is_one(const NodeReply& r) { return r.is_integer() && r.integer == 1; }
bool is_integer_reply(const NodeReply& r) { return r.is_integer(); }

class Redlock : public LockClient {
 public:
  Redlock(const LockOptions& o, FanoutStrategy strategy)
      : opts_(RedlockOptions::from(o)),
        fencing_(o.fencing),
        fanout_(o.nodes, o.connect_timeout, o.op_timeout, strategy),
        rng_(o.seed) {}

  LockResult acquire(const std::string& key, std::chrono::milliseconds ttl) override {
    bool indeterminate = false;
    std::string why;
    for (int attempt = 0; attempt <= opts_.retry_count; ++attempt) {
      if (attempt > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(
            uniform(rng_, opts_.retry_delay_ms, opts_.retry_delay_ms + opts_.retry_jitter_ms)));
      }
      LockResult a = try_acquire(key, ttl);
      if (a.outcome == OpType::kOk) return a;
      if (a.outcome == OpType::kInfo) indeterminate = true;
      why = a.error;
    }
    const std::string tries =
        opts_.retry_count > 0 ? " (after " + std::to_string(opts_.retry_count + 1) + " attempts)" : "";
    return indeterminate ? LockResult::info(why + tries) : LockResult::fail(why + tries);
  }

  LockResult release(const std::string& key) override {
    auto it = tokens_.find(key);
    if (it == tokens_.end()) return LockResult::fail("not held by this client");
    Tally t = Tally::of(fanout_.run_all({"EVAL", kCompareAndDeleteScript, "1", key, it->second}), is_one);
    switch (judge(t.count, opts_.quorum)) {
      case QuorumVerdict::kReached: tokens_.erase(it); return LockResult::ok();
      case QuorumVerdict::kUnreachable:
        tokens_.erase(it);
        return LockResult::fail("not held on a quorum (expired or taken): deleted on " + describe(t));
      case QuorumVerdict::kUnknown: break;
    }
    return LockResult::info("release unknown: deleted on " + describe(t));
  }

  LockResult extend(const std::string& key, std::chrono::milliseconds ttl) override {
    auto it = tokens_.find(key);
    if (it == tokens_.end()) return LockResult::fail("not held by this client");
    const auto start = std::chrono::steady_clock::now();
    Tally t = Tally::of(
        fanout_.run_all({"EVAL", kCompareAndPexpireScript, "1", key, it->second, std::to_string(ttl.count())}), is_one);
    const int64_t validity = validity_ms(ttl, start);
    switch (judge(t.count, opts_.quorum)) {
      case QuorumVerdict::kReached:
        if (validity > 0) {
          LockResult res = LockResult::ok();
          res.validity_ms = validity;
          return res;
        }
        return LockResult::info("extended on a quorum, but too late (validity " + std::to_string(validity) + " ms)");
      case QuorumVerdict::kUnreachable:
        return LockResult::fail("not held on a quorum (expired or taken): extended on " + describe(t));
      case QuorumVerdict::kUnknown: break;
    }
    return LockResult::info("extension unknown: extended on " + describe(t));
  }

 private:
  std::string describe(const Tally& t) const { return t.describe(opts_.quorum, fanout_.size()); }

  int64_t validity_ms(std::chrono::milliseconds ttl, std::chrono::steady_clock::time_point start) const {
    const int64_t elapsed =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    const int64_t drift = static_cast<int64_t>(static_cast<double>(ttl.count()) * opts_.drift_factor) + opts_.drift_ms;
    return ttl.count() - elapsed - drift;
  }

  LockResult try_acquire(const std::string& key, std::chrono::milliseconds ttl) {
    const std::string token = os_random_hex(20);
    const auto start = std::chrono::steady_clock::now();
    Tally set = Tally::of(fanout_.run_all({"SET", key, token, "NX", "PX", std::to_string(ttl.count())}), is_ok_status);
    const QuorumVerdict verdict = judge(set.count, opts_.quorum);
    if (verdict == QuorumVerdict::kReached) {
      int64_t validity = validity_ms(ttl, start);
      if (validity > 0) {
        tokens_[key] = token;
        LockResult res = LockResult::ok();
        if (fencing_) {
          std::string why;
          auto fence = take_fencing_token(key, &why);
          if (!fence) {
            unlock_all(key, token);
            tokens_.erase(key);
            return LockResult::info("acquired, but no fencing token: " + why);
          }
          res.token = *fence;
          validity = validity_ms(ttl, start);
          if (validity <= 0) {
            unlock_all(key, token);
            tokens_.erase(key);
            return LockResult::info("acquired, but the fencing token came too late");
          }
        }
        res.validity_ms = validity;
        return res;
      }
    }
    // Failed: release everywhere, then judge whether a quorum can still hold our token.
    std::vector<NodeReply> released = unlock_all(key, token);
    int may_hold = 0;
    for (size_t i = 0; i < released.size(); ++i) {
      const bool release_answered = released[i].status == RedisStatus::kReply && released[i].is_integer();
      if (set.unknown[i] || (set.yes[i] && !release_answered)) ++may_hold;
    }
    std::string why;
    if (verdict == QuorumVerdict::kReached) {
      why = "quorum too late: validity " + std::to_string(validity_ms(ttl, start)) + " ms; SET accepted by " +
            describe(set);
    } else {
      why = (set.held >= opts_.quorum ? "held: SET accepted by " : "no quorum: SET accepted by ") + describe(set);
    }
    if (may_hold >= opts_.quorum) return LockResult::info(why);
    return LockResult::fail(why);
  }

  std::vector<NodeReply> unlock_all(const std::string& key, const std::string& token) {
    return fanout_.run_all({"EVAL", kCompareAndDeleteScript, "1", key, token});
  }

  // See locks/fencing.h: INCR on every node, the max over a quorum of replies, then raise every counter to it.
  std::optional<int64_t> take_fencing_token(const std::string& key, std::string* why) {
    const std::string counter = fence_key(key);
    std::vector<NodeReply> incr = fanout_.run_all({"INCR", counter});
    Tally t = Tally::of(incr, is_integer_reply);
    if (t.count.yes < opts_.quorum) {
      *why = "INCR answered by " + describe(t);
      return std::nullopt;
    }
    int64_t max = 0;
    for (const auto& r : incr) {
      if (r.is_integer()) max = std::max<int64_t>(max, r.integer);
    }
    Tally raised =
        Tally::of(fanout_.run_all({"EVAL", kRaiseCounterScript, "1", counter, std::to_string(max)}), is_integer_reply);
    if (raised.count.yes < opts_.quorum) {
      *why = "counter raised on " + describe(raised);
      return std::nullopt;
    }
    return max;
  }

  RedlockOptions opts_;
  bool fencing_;
  NodeFanout fanout_;
  std::mt19937_64 rng_;
  std::map<std::string, std::string> tokens_;  // key -> our token
};

}  // namespace

std::unique_ptr<LockClient> make_redlock(const LockOptions& o) {
  return std::make_unique<Redlock>(o, FanoutStrategy::kParallel);
}

std::unique_ptr<LockClient> make_redlock_sequential(const LockOptions& o) {
  return std::make_unique<Redlock>(o, FanoutStrategy::kSequential);
}

// This lock's line in the registry (locks/registry.cc): its name, what `lockcheck list` says of it, its factory.
LockAlgorithm redlock_lock() {
  return {"redlock",
          "Redlock: SET NX PX on N independent masters in parallel, quorum N/2+1, validity = TTL - "
          "elapsed - drift, retries after a random delay",
          "assumes bounded clock drift and pauses: a clock jump or an amnesic restart on one node of a quorum, or a "
          "pause past the validity, breaks mutual exclusion",
          make_redlock, "retry_count, retry_delay_ms, retry_jitter_ms, drift_factor, drift_ms, quorum"};
}

// This lock's line in the registry (locks/registry.cc): its name, what `lockcheck list` says of it, its factory.
LockAlgorithm redlock_sequential_lock() {
  return {"redlock-sequential",
          "Redlock with the nodes contacted one after another (redis-rb, redlock-py, "
          "redis-plus-plus, Redisson's RedLock)",
          "as redlock; and every slow or dead node before the quorum eats into the validity (N x the latency)",
          make_redlock_sequential, "retry_count, retry_delay_ms, retry_jitter_ms, drift_factor, drift_ms, quorum"};
}

}  // namespace lockcheck
