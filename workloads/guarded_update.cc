// Workloads `lock-set`, `fenced-set` and `counter`: what a mutual-exclusion violation does to the data the
// lock protects (Jepsen's lock-set; its etcd analysis lost 18% of acknowledged updates). Under the lock a
// process reads the resource, waits --work-ms (the slow work that lets a lease run out), and writes it back
// with its update; then releases. The update is acknowledged (ok) only if the write succeeded.
//
//   lock-set    the resource is a set stored as one value; each update adds one new unique element.
//   fenced-set  the same, but every read and write carries the lock's fencing token and the resource, in a
//               Lua script, rejects any whose token is below the highest it has seen (Kleppmann's fix). Reads
//               count too: a stale holder that read before a newer holder's read must not write after it,
//               or the newer holder's read-modify-write would overwrite the stale write's element.
//   counter     the resource is an integer; each update increments it.
//
// Reads of the whole resource are recorded now and then (f "read"), and a final read when the run ends.
#include <atomic>
#include <thread>

#include "core/random.h"
#include "workloads/resource.h"
#include "workloads/workload.h"

namespace lockcheck {

namespace {

enum class Kind { kSet, kFencedSet, kCounter };

// KEYS[1] resource, KEYS[2] highest token seen; ARGV[1] token. Returns the resource value ("" when unset).
const char* const kFencedRead =
    "local m = tonumber(redis.call('get', KEYS[2]) or '-1') "
    "local t = tonumber(ARGV[1]) "
    "if t < m then return redis.error_reply('STALE token ' .. ARGV[1] .. ' below ' .. m) end "
    "redis.call('set', KEYS[2], ARGV[1]) "
    "return redis.call('get', KEYS[1]) or ''";
// KEYS[1] resource, KEYS[2] highest token seen; ARGV[1] token, ARGV[2] new value.
const char* const kFencedWrite =
    "local m = tonumber(redis.call('get', KEYS[2]) or '-1') "
    "local t = tonumber(ARGV[1]) "
    "if t < m then return redis.error_reply('STALE token ' .. ARGV[1] .. ' below ' .. m) end "
    "redis.call('set', KEYS[2], ARGV[1]) "
    "redis.call('set', KEYS[1], ARGV[2]) "
    "return 1";

constexpr int kReadEvery = 10;
constexpr int64_t kReadWriteMs = 5;  // kept out of the lease for the update's read and write (local Redis)  // a
                                     // process reads the whole resource about once every kReadEvery loops

class GuardedUpdate : public Workload {
 public:
  explicit GuardedUpdate(Kind kind) : kind_(kind) {}
  std::vector<std::string> run_settings() const override {
    return {"work_ms", "work_uniform", "blind_holder", "lease_margin_ms"};
  }

  std::string name() const override {
    switch (kind_) {
      case Kind::kSet: return "lock-set";
      case Kind::kFencedSet: return "fenced-set";
      case Kind::kCounter: return "counter";
    }
    return "?";
  }

  bool needs_fencing() const override { return kind_ == Kind::kFencedSet; }

  std::vector<std::string> checkers() const override {
    if (kind_ == Kind::kFencedSet) return {"mutex", "lease", "fencing", "lost-updates", "stats"};
    return {"mutex", "lease", "lost-updates", "stats"};
  }

  void setup(WorkloadEnv& env) override {
    resource_ = std::make_unique<ResourceServer>(env.options, env.run_dir);
    resource_version_ = resource_->version();
  }
  nlohmann::json versions() const override { return {{"resource", resource_version_}}; }

  ProcessExit run_process(ProcessEnv& env) override {
    auto conn = resource_->connect();
    const auto ttl = std::chrono::milliseconds(env.options.ttl_ms);
    const auto work = std::chrono::milliseconds(env.options.work_ms);
    while (!env.stop.load()) {
      const std::string lock_key = "lock-" + std::to_string(uniform(env.rng, 0, env.options.keys - 1));
      const std::string res_key = "resource:" + lock_key;
      if (uniform(env.rng, 1, kReadEvery) == 1 && !read(env.process, env.history, env.counts, *conn, res_key)) {
        return ProcessExit::kRetired;
      }
      const auto invoked = std::chrono::steady_clock::now();
      LockResult a = record_lock_op(env, "acquire", lock_key, [&] { return env.client.acquire(lock_key, ttl); });
      if (a.outcome == OpType::kInfo) return ProcessExit::kRetired;
      if (a.outcome == OpType::kFail) {
        sleep_unless_stopped(env.stop, busy_backoff(env.rng));
        continue;
      }
      // A careful client: it checks its lease before it starts the update, and its work (the slow part) is cut
      // so that the write is sent inside the validity it was told, keeping a few ms for the read and the write.
      // --blind-holder (Jepsen's lock-set client): no check at all, the whole work, the write sent regardless.
      const Lease lease(a, invoked, ttl, env.options.lease_margin_ms);
      const auto this_work =
          env.options.work_uniform && work.count() > 0
              ? std::chrono::milliseconds(uniform(env.rng, 0, 2 * static_cast<int64_t>(work.count()) - 1))
              : work;
      const auto budget = env.options.blind_holder ? this_work
                                                   : lease.remaining() - std::chrono::milliseconds(kReadWriteMs);
      env.pause_point();  // client-pause: a holder stopped here past its lease reads and writes on regardless
      const HoldTimer timer(std::max(std::min(this_work, budget), std::chrono::milliseconds(0)) +
                            std::chrono::milliseconds(kReadWriteMs));
      if (budget >= std::chrono::milliseconds(0)) {
        // The process holds the lock (it believes): one update.
        if (update(env, *conn, res_key, a.token, std::min(this_work, budget)) == OpType::kInfo) {
          return ProcessExit::kRetired;
        }
      }
      LockResult r = record_lock_op(
          env, "release", lock_key, [&] { return env.client.release(lock_key); }, timer.stalled(lease));
      if (r.outcome == OpType::kInfo) return ProcessExit::kRetired;
      sleep_unless_stopped(env.stop, after_release_pause(env.rng));
    }
    return ProcessExit::kStopped;
  }

  void finish(WorkloadEnv& env) noexcept override {
    if (!resource_) return;
    try {
      // The final read, by a fresh process, after every client has stopped.
      const Process reader = env.history.next_free_process();
      auto conn = resource_->connect();
      for (int k = 0; k < env.options.keys; ++k) read(reader, env.history, env.counts, *conn, "resource:lock-" + std::to_string(k));
    } catch (const std::exception&) {
      // No final read: the lost-updates checker says it could not decide.
    }
    resource_.reset();
  }

 private:
  // Records a read of the whole resource. False when it ended info (the process must retire).
  bool read(Process process, HistoryWriter& history, ClientOpCounts* counts, RedisConn& conn,
            const std::string& res_key) {
    Op op;
    op.process = process;
    op.f = "read";
    op.key = res_key;
    ClientOpCounts::record(counts, history, op);
    Reply r = conn.command({"GET", res_key});
    if (r.indeterminate() || r.definitely_failed()) {
      op.type = r.indeterminate() ? OpType::kInfo : OpType::kFail;
      op.error = r.error;
      ClientOpCounts::record(counts, history, op);
      return op.type != OpType::kInfo;
    }
    const std::string v = r.str().value_or("");
    op.type = OpType::kOk;
    if (kind_ == Kind::kCounter) {
      op.value = v.empty() ? 0 : std::stoll(v);
    } else {
      op.value = parse_set(v);
    }
    ClientOpCounts::record(counts, history, op);
    return true;
  }

  // Read, work, write: one update recorded as f "add" (sets) or "increment" (counter). Returns its outcome.
  OpType update(ProcessEnv& env, RedisConn& conn, const std::string& res_key, std::optional<int64_t> token,
                std::chrono::milliseconds work) {
    Op op;
    op.process = env.process;
    op.f = kind_ == Kind::kCounter ? "increment" : "add";
    op.key = res_key;
    const int64_t element = next_element_.fetch_add(1);
    if (kind_ != Kind::kCounter) op.value = element;
    op.token = token;
    env.record(op);
    auto complete = [&](OpType t, std::string error) {
      op.type = t;
      op.error = std::move(error);
      env.record(op);
      return t;
    };
    if (kind_ == Kind::kFencedSet && !token) return complete(OpType::kFail, "the lock gave no fencing token");
    const std::string max_key = res_key + ":max-token";
    Reply got = kind_ == Kind::kFencedSet
                    ? conn.command({"EVAL", kFencedRead, "2", res_key, max_key, std::to_string(*token)})
                    : conn.command({"GET", res_key});
    if (got.indeterminate()) return complete(OpType::kInfo, got.error);
    if (got.definitely_failed()) return complete(OpType::kFail, got.error);
    const std::string current = got.str().value_or("");
    std::this_thread::sleep_for(work);
    std::string next;
    if (kind_ == Kind::kCounter) {
      const int64_t v = (current.empty() ? 0 : std::stoll(current)) + 1;
      next = std::to_string(v);
      op.value = v;
    } else {
      auto set = parse_set(current);
      set.push_back(element);
      next = format_set(set);
    }
    Reply put = kind_ == Kind::kFencedSet
                    ? conn.command({"EVAL", kFencedWrite, "2", res_key, max_key, std::to_string(*token), next})
                    : conn.command({"SET", res_key, next});
    if (put.indeterminate()) return complete(OpType::kInfo, put.error);
    if (put.definitely_failed()) return complete(OpType::kFail, put.error);
    return complete(OpType::kOk, "");
  }

  Kind kind_;
  std::unique_ptr<ResourceServer> resource_;
  std::string resource_version_;
  std::atomic<int64_t> next_element_{0};
};

}  // namespace

std::unique_ptr<Workload> make_lock_set_workload() { return std::make_unique<GuardedUpdate>(Kind::kSet); }
std::unique_ptr<Workload> make_fenced_set_workload() { return std::make_unique<GuardedUpdate>(Kind::kFencedSet); }
std::unique_ptr<Workload> make_counter_workload() { return std::make_unique<GuardedUpdate>(Kind::kCounter); }

// This workload's line in the registry (workloads/registry.cc): its name, what `lockcheck list` says of it, its
// factory.
WorkloadInfo lock_set_workload() {
  return {"lock-set", "under the lock: read a set from a resource Redis, work, write it back with one new element",
          make_lock_set_workload};
}

// This workload's line in the registry (workloads/registry.cc): its name, what `lockcheck list` says of it, its
// factory.
WorkloadInfo fenced_set_workload() {
  return {"fenced-set", "lock-set whose resource rejects reads and writes with a fencing token below the highest seen",
          make_fenced_set_workload};
}

// This workload's line in the registry (workloads/registry.cc): its name, what `lockcheck list` says of it, its
// factory.
WorkloadInfo counter_workload() {
  return {"counter", "under the lock: GET a counter from a resource Redis, work, SET it to one more",
          make_counter_workload};
}

}  // namespace lockcheck
