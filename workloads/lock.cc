// Workload `lock`: each process loops: acquire a random key, hold it for a random time (--hold-ms-min to --hold-ms-max,
// and never past the validity the client reported: a careful client), release it, pause briefly. The history of
// acquires and releases is judged by the mutex checker (the use view: a holder uses the lock from its ok acquire
// until it starts to release it, whatever the release's outcome; checkers/mutex.h) and the lease checker (the
// claimed view: only within the validity the client reported).
#include <algorithm>

#include "core/random.h"
#include "workloads/workload.h"

namespace lockcheck {

namespace {

class LockWorkload : public Workload {
 public:
  std::string name() const override { return "lock"; }
  std::vector<std::string> run_settings() const override { return {"hold_ms_max", "hold_ms_min", "lease_margin_ms"}; }

  ProcessExit run_process(ProcessEnv& env) override {
    const auto ttl = std::chrono::milliseconds(env.options.ttl_ms);
    const int64_t hold_max = env.options.hold_ms_max;
    const int64_t hold_min = std::min(env.options.hold_ms_min, hold_max);
    while (!env.stop.load()) {
      const std::string key = "lock-" + std::to_string(uniform(env.rng, 0, env.options.keys - 1));
      const auto invoked = std::chrono::steady_clock::now();
      LockResult a = record_lock_op(env, "acquire", key, [&] { return env.client.acquire(key, ttl); });
      if (a.outcome == OpType::kInfo) return ProcessExit::kRetired;
      if (a.outcome == OpType::kFail) {
        // Busy: back off a little, with jitter, so that a held lock is not hammered, then try again.
        sleep_unless_stopped(env.stop, busy_backoff(env.rng));
        continue;
      }
      // A careful client: the hold it means to make is cut to end inside the validity it was told.
      const Lease lease(a, invoked, ttl, env.options.lease_margin_ms);
      const auto hold = lease.fit(std::chrono::milliseconds(uniform(env.rng, hold_min, hold_max)));
      env.pause_point();  // client-pause: a holder stopped here for longer than its lease still thinks it holds
      // Hold: the process believes it holds the lock and uses the resource. Cut short at the end of the run.
      const HoldTimer timer(hold);
      sleep_unless_stopped(env.stop, hold);
      LockResult r = record_lock_op(
          env, "release", key, [&] { return env.client.release(key); }, timer.stalled(lease));
      if (r.outcome == OpType::kInfo) return ProcessExit::kRetired;
      sleep_unless_stopped(env.stop, after_release_pause(env.rng));
    }
    return ProcessExit::kStopped;
  }

  std::vector<std::string> checkers() const override { return {"mutex", "lease", "liveness", "stats"}; }
};

}  // namespace

std::unique_ptr<Workload> make_lock_workload() { return std::make_unique<LockWorkload>(); }

// This workload's line in the registry (workloads/registry.cc): its name, what `lockcheck list` says of it, its
// factory.
WorkloadInfo lock_workload() {
  return {"lock", "acquire a random key, hold it below the TTL, release; judged by mutex, lease and stats",
          make_lock_workload};
}

}  // namespace lockcheck
