// Workload `renew`: holders keep a lock longer than its TTL by extending it before its validity runs out, as a
// watchdog does (Redisson's lock watchdog, redsync's Extend). Each process loops: acquire a random key; hold it
// for a random 1 to 1.5 TTLs (so at least one extend is needed), using the resource only while the validity it
// was last told lasts and extending (f "extend", for the TTL) when a third of the TTL remains, never within a tenth
// of the TTL of the planned release nor within a tenth of the TTL of its previous extend; the moment an extend
// fails it stops using the lock and does not release it (it is lost); at the end of the hold it releases; then
// it thinks for up to one TTL. A failed acquire is retried after a polling delay of 1/20 to 1/4 TTL. The client-pause nemesis's pause point is at the watchdog's first extend: the holder (watchdog included)
// stops in the middle of its hold and extends the moment it resumes, as a paused JVM's watchdog does.
// Judged by mutex, lease, renewal (an ok extend after another process acquired the lock in between: a
// resurrected lock), liveness and stats.
#include <algorithm>

#include "core/random.h"
#include "workloads/workload.h"

namespace lockcheck {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class RenewWorkload : public Workload {
 public:
  std::string name() const override { return "renew"; }

  ProcessExit run_process(ProcessEnv& env) override {
    const int64_t ttl = env.options.ttl_ms;
    while (!env.stop.load()) {
      const std::string key = "lock-" + std::to_string(uniform(env.rng, 0, env.options.keys - 1));
      LockResult a = record_lock_op(env, "acquire", key, [&] { return env.client.acquire(key, milliseconds(ttl)); });
      if (a.outcome == OpType::kInfo) return ProcessExit::kRetired;
      if (a.outcome == OpType::kFail) {
        const int64_t lo = std::max<int64_t>(1, ttl / 20), hi = std::max<int64_t>(1, ttl / 4);
        sleep_unless_stopped(env.stop, milliseconds(uniform(env.rng, lo, hi)));
        continue;
      }
      switch (hold(env, key, a)) {
        case Held::kRetired: return ProcessExit::kRetired;
        case Held::kLost: break;  // stopped using it at once; nothing to release
        case Held::kDone: {
          LockResult r = record_lock_op(env, "release", key, [&] { return env.client.release(key); });
          if (r.outcome == OpType::kInfo) return ProcessExit::kRetired;
          break;
        }
      }
      sleep_unless_stopped(env.stop, milliseconds(uniform(env.rng, 0, ttl)));
    }
    return ProcessExit::kStopped;
  }

  std::vector<std::string> checkers() const override { return {"mutex", "lease", "renewal", "liveness", "stats"}; }

 private:
  enum class Held { kDone, kLost, kRetired };

  // Holds key from the ok acquire a for 1 to 1.5 TTLs, extending before the validity runs out.
  // No bursts of extends: waits are rounded up to whole ms (a wait truncated to 0 ms extended again and again in
  // the last millisecond of a hold), an extend is never sent within kNearRelease of the planned release (the hold
  // ends there instead: releasing a few ms early is inside the validity), and two extends are at least
  // kMinGap apart (an extend that reported a short validity does not start a loop: the hold ends instead).
  Held hold(ProcessEnv& env, const std::string& key, const LockResult& a) {
    const int64_t ttl = env.options.ttl_ms;
    const milliseconds renew_before(ttl / 3), near_release(std::max<int64_t>(1, ttl / 10)),
        min_gap(std::max<int64_t>(1, ttl / 10));
    const auto start = Clock::now();
    const auto hold_end = start + milliseconds(uniform(env.rng, ttl, ttl * 3 / 2));
    // Without a reported validity the client assumes the TTL from the acquire's completion.
    auto valid_until = start + milliseconds(a.validity_ms.value_or(ttl));
    auto earliest_extend = start;
    bool first = true;
    const auto wait_until = [&](Clock::time_point t) {
      const auto now = Clock::now();
      return t <= now || sleep_unless_stopped(env.stop, std::chrono::ceil<milliseconds>(t - now));
    };
    while (!env.stop.load()) {
      // Use the resource until a third of the TTL is left, or the hold ends, whichever is first.
      const auto renew_at = std::max(valid_until - renew_before, earliest_extend);
      if (renew_at >= hold_end - near_release || renew_at >= valid_until) {
        // No extend is due before the planned release (or none could come in time): hold to the end of the hold or
        // of the lease, whichever is first, then release.
        wait_until(std::min(hold_end, valid_until - std::min(renew_before, milliseconds(20))));
        return Held::kDone;
      }
      if (!wait_until(renew_at)) return Held::kDone;
      if (Clock::now() >= hold_end - near_release) return Held::kDone;
      if (first) env.pause_point();  // a GC pause of the holder and its watchdog, mid-hold
      first = false;
      const auto invoked = Clock::now();
      LockResult e = record_lock_op(env, "extend", key, [&] { return env.client.extend(key, milliseconds(ttl)); });
      if (e.outcome == OpType::kInfo) return Held::kRetired;
      if (e.outcome == OpType::kFail) return Held::kLost;
      // The validity counts from the extend's completion; without one, the TTL from its invoke.
      const auto done = Clock::now();
      valid_until = e.validity_ms ? done + milliseconds(*e.validity_ms) : invoked + milliseconds(ttl);
      earliest_extend = done + min_gap;
    }
    return Held::kDone;
  }
};

}  // namespace

std::unique_ptr<Workload> make_renew_workload() { return std::make_unique<RenewWorkload>(); }

// This workload's line in the registry (workloads/registry.cc): its name, what `lockcheck list` says of it, its
// factory.
WorkloadInfo renew_workload() {
  return {"renew",
          "hold a lock for 1-1.5 TTLs by extending it before its validity runs out (a watchdog); stop at a "
          "failed extend; judged by mutex, lease, renewal, liveness and stats",
          make_renew_workload};
}

}  // namespace lockcheck
