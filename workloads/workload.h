// What client processes do, and which checkers judge it. The runner calls run_process on one thread per
// live process; it returns when the run must stop or when the process must be retired (its last op ended
// info: its state is unknown, so as in Jepsen a fresh process id takes its place with a fresh client).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/client_pauses.h"
#include "core/cluster.h"
#include "core/config.h"
#include "core/history.h"
#include "core/registry.h"
#include "locks/lock_client.h"

namespace lockcheck {

// What a workload is told of the run: its own options, not the whole RunConfig (made once at the edge).
struct WorkloadOptions {
  int keys = 1;                               // lock keys lock-0 .. lock-(keys-1)
  int64_t ttl_ms = 1000;                      // the lock's TTL
  int64_t hold_ms_max = 800;                  // the longest hold (the run's -1 already made 80% of the TTL)
  int64_t work_ms = 333;                      // set workloads: between the read and the write under the lock
  int64_t op_timeout_ms = 500;                // per request, also on the resource's connections
  int64_t hold_ms_min = 0;                    // the shortest hold
  bool work_uniform = false;                  // set workloads: the work is uniform in [0, 2 x work_ms)
  bool blind_holder = false;                  // set workloads: the holder never checks its validity
  int64_t lease_margin_ms = -1;               // Lease's margin (-1: 10% of the lease, at least 20 ms)
  static WorkloadOptions from(const RunConfig& c) {
    return {c.keys,        c.ttl_ms,       c.effective_hold_ms_max(), c.effective_work_ms(),
            c.op_timeout_ms, c.hold_ms_min, c.work_uniform,          c.blind_holder,
            c.lease_margin_ms};
  }
};

// What the clients themselves did, counted where they hand an op to the history and apart from the history
// writer's own counts: results.json's "client_ops", which a soak compares with the ops read back from
// history.jsonl (every op a client made must be in the history). Thread-safe.
struct ClientOpCounts {
  std::atomic<int64_t> invoke{0}, ok{0}, fail{0}, info{0};
  void count(OpType t) {
    switch (t) {
      case OpType::kInvoke: ++invoke; break;
      case OpType::kOk: ++ok; break;
      case OpType::kFail: ++fail; break;
      case OpType::kInfo: ++info; break;
    }
  }
  // Counts op (when counts is set), then records it.
  static Op record(ClientOpCounts* counts, HistoryWriter& history, const Op& op) {
    if (counts) counts->count(op.type);
    return history.record(op);
  }
};

// Given to a workload when a run starts.
struct WorkloadEnv {
  WorkloadOptions options;
  Cluster& cluster;
  HistoryWriter& history;
  std::string run_dir;
  ClientOpCounts* counts = nullptr;  // the run's client counters (null: not counted)
};

// Given to run_process for one client process.
struct ProcessEnv {
  Process process;
  LockClient& client;
  HistoryWriter& history;
  std::mt19937_64 rng;            // seeded from the run seed and the process id
  const std::atomic<bool>& stop;  // set when the time limit is reached or the run is interrupted
  WorkloadOptions options;
  ClientPauses* pauses = nullptr;  // the client-pause nemesis's hook; null: pause_point() does nothing
  ClientOpCounts* counts = nullptr;  // the run's client counters (null: not counted)

  // Records an op of this process in the history, counted in counts. Every client op goes through here.
  Op record(const Op& op) { return ClientOpCounts::record(counts, history, op); }

  // The pause point of Kleppmann's "GC pause": call it right after an ok acquire, before the lock is used.
  // Blocks while the client-pause nemesis has a pause armed for this process's slot (bounded by the pause's
  // length; returns early when the run stops).
  // Returns how long it paused (0: no pause).
  std::chrono::milliseconds pause_point() {
    if (!pauses) return std::chrono::milliseconds(0);
    return pauses->pause_point(process, stop, client.os_pid());
  }
};

// Why run_process returned.
enum class ProcessExit { kStopped, kRetired };

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;
  // Called once before any process starts (e.g. start a resource server). Throws on failure.
  virtual void setup(WorkloadEnv& env) { (void)env; }
  // Loops until env.stop or until an op ended info.
  virtual ProcessExit run_process(ProcessEnv& env) = 0;
  // Called once after every process has returned (e.g. final reads). Must not throw.
  virtual void finish(WorkloadEnv& env) noexcept { (void)env; }
  // True when the workload needs fencing tokens from the lock, whatever --fencing says.
  virtual bool needs_fencing() const { return false; }
  // The run settings (config.json keys) that only some workloads read and this one does (hold_ms_max, work_ms,
  // ...): the report shows such a setting only in a run whose workload reads it (harness/plan.h).
  virtual std::vector<std::string> run_settings() const { return {}; }
  // The names of the checkers that judge this workload's history.
  virtual std::vector<std::string> checkers() const = 0;
  // What the workload ran beside the nodes, by name (its resource store: {"resource": "redis 7.0.15"}), for
  // results.json's versions. Valid after setup.
  virtual nlohmann::json versions() const { return nlohmann::json::object(); }
};

// Records the invoke of (f, key) for env.process, runs call, and records its completion (ok with the
// token and validity it reported, fail, or info). Returns the LockResult.
// invoke_value: the invoke's value (null by default), e.g. {"stalled_ms": N} on a release the harness itself made
// late (see HoldTimer).
LockResult record_lock_op(ProcessEnv& env, const std::string& f, const std::string& key,
                          const std::function<LockResult()>& call, nlohmann::json invoke_value = nullptr);

// What a careful client knows after an ok acquire (or extend): until when it may use the lock. A client that
// got validity_ms stays inside it: the lease ends validity_ms after the acquire returned (validity is what
// remains at the end of the acquire). A client that got none assumes ttl - the acquire's own duration.
// Use ends `margin` before the lease does, so that the release (or the write) is sent while the lease holds:
// margin_ms (--lease-margin-ms), or by default 10% of the lease and at least 20 ms (thread scheduling on a
// loaded machine, and the request itself). A small margin makes the holder use nearly all the validity its
// library promised, which is what a drift margin is measured against.
class Lease {
 public:
  Lease(const LockResult& r, std::chrono::steady_clock::time_point invoked, std::chrono::milliseconds ttl,
        int64_t margin_ms = -1);
  // How long from now the holder may still use the lock (never negative).
  std::chrono::milliseconds remaining() const;
  // d cut so that it ends before the lease does.
  std::chrono::milliseconds fit(std::chrono::milliseconds d) const { return std::min(d, remaining()); }

 private:
  std::chrono::steady_clock::time_point use_until_;
};

// A holder's planned use, for telling the harness's own stalls from the faults under test. On a loaded machine
// the holder's thread can wake hundreds of ms after its planned release: then it outlives its lease through no
// fault of the lock. `stalled()` says so, as the value of the release's invoke ({"stalled_ms": N}), and the mutex
// checker reports such a case as harness-stall (unknown), never as an anomaly of the lock.
class HoldTimer {
 public:
  explicit HoldTimer(std::chrono::milliseconds hold) : planned_end_(std::chrono::steady_clock::now() + hold) {}
  // {"stalled_ms": N} when the thread woke more than 20 ms after the planned end and the lease had run out by
  // then; null otherwise.
  nlohmann::json stalled(const Lease& lease) const;

 private:
  std::chrono::steady_clock::time_point planned_end_;
};

// The randomised pauses of a fair client: after a failed acquire (the lock is busy) and after a release (a
// holder does not grab the lock again at once, so the waiters get their turn).
std::chrono::milliseconds busy_backoff(std::mt19937_64& rng);
std::chrono::milliseconds after_release_pause(std::mt19937_64& rng);

// Sleeps for d, in short steps, returning early (false) when env.stop is set. True when it slept it all.
bool sleep_unless_stopped(const std::atomic<bool>& stop, std::chrono::milliseconds d);

struct WorkloadInfo {
  const char* name;
  const char* description;
  std::unique_ptr<Workload> (*make)();
};
// The registry (workloads/registry.cc): one line per workload.
const Registry<WorkloadInfo>& workload_registry();
std::unique_ptr<Workload> make_workload(const std::string& name);  // nullptr when unknown

}  // namespace lockcheck
