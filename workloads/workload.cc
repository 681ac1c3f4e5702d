#include "workloads/workload.h"

#include <signal.h>

#include <algorithm>
#include <thread>

#include "core/random.h"

namespace lockcheck {

namespace {

// The client-crash nemesis's crash points around an op (core/client_crashes.h). True when the process
// crashes at `point`: an external client's subprocess is killed there with SIGKILL; a built-in client just
// stops (its connection is abandoned with the retired process's client).
bool crash_here(ProcessEnv& env, const char* point) {
  if (!env.pauses || !env.pauses->crashes().crash_point(env.process, point)) return false;
  if (auto pid = env.client.os_pid(); pid && *pid > 0) ::kill(*pid, SIGKILL);
  return true;
}

}  // namespace

LockResult record_lock_op(ProcessEnv& env, const std::string& f, const std::string& key,
                          const std::function<LockResult()>& call, nlohmann::json invoke_value) {
  Op op;
  op.process = env.process;
  op.type = OpType::kInvoke;
  op.f = f;
  op.key = key;
  op.value = std::move(invoke_value);
  env.record(op);
  if (env.pauses) {
    // Lock recipes with several steps ask at their own points inside the op (e.g. between SETNX and EXPIRE).
    ClientPauses* pauses = env.pauses;
    const Process p = env.process;
    env.client.set_crash_hook([pauses, p](const char* point) { return pauses->crashes().crash_point(p, point); });
  }
  LockResult r;
  if (f == "release" && crash_here(env, "mid-release")) {
    r = LockResult::info("client crashed (client-crash nemesis) before its release reached the lock");
  } else {
    r = call();
  }
  if (f == "acquire" && r.outcome == OpType::kOk) {
    // A recipe without a point of its own inside the acquire crashes once it took effect, before the reply.
    if (crash_here(env, "mid-acquire")) {
      r = LockResult::info("client crashed (client-crash nemesis) while its acquire took effect");
    } else if (crash_here(env, "after-acquire")) {
      r = LockResult::info("client crashed (client-crash nemesis) right after its acquire succeeded");
    }
  }
  op.type = r.outcome;
  op.token = r.token;
  op.validity_ms = r.validity_ms;
  op.error = r.error;
  // Protocol 2 of external clients: what the client said beyond the outcome goes into the completion's value
  // (which otherwise repeats the invoke's, null for most ops): {"keys":[...]} on ok, {"reason":"not_held"} on
  // fail or info.
  if (op.value.is_null() || op.value.is_object()) {
    if (!r.keys.empty() && r.outcome == OpType::kOk) op.value["keys"] = r.keys;
    // How late the answer reached the harness after the client measured its validity (>= 1 ms; validity_ms is
    // already shortened by it): a reader of the history sees why a lease is shorter than the library said.
    if (r.answer_lag_ms && *r.answer_lag_ms >= 1 && r.outcome == OpType::kOk) op.value["answer_lag_ms"] = *r.answer_lag_ms;
    if (!r.reason.empty() && r.outcome != OpType::kOk) op.value["reason"] = r.reason;
  }
  env.record(op);
  return r;
}

Lease::Lease(const LockResult& r, std::chrono::steady_clock::time_point invoked, std::chrono::milliseconds ttl,
             int64_t margin_ms) {
  const auto now = std::chrono::steady_clock::now();
  const auto lease_end = r.validity_ms ? now + std::chrono::milliseconds(*r.validity_ms) : invoked + ttl;
  const auto length = std::chrono::duration_cast<std::chrono::milliseconds>(lease_end - now);
  // The release must leave before the lease ends: 10% of it, at least 20 ms (thread scheduling on a loaded
  // machine, and the request itself).
  const auto margin = margin_ms >= 0 ? std::chrono::milliseconds(margin_ms)
                                     : std::max<std::chrono::milliseconds>(std::chrono::milliseconds(20), length / 10);
  use_until_ = lease_end - margin;
}

std::chrono::milliseconds Lease::remaining() const {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(use_until_ - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::milliseconds(0));
}

nlohmann::json HoldTimer::stalled(const Lease& lease) const {
  const auto late =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - planned_end_);
  if (late <= std::chrono::milliseconds(20) || lease.remaining() > std::chrono::milliseconds(0)) return nullptr;
  return {{"stalled_ms", late.count()}};
}

std::chrono::milliseconds busy_backoff(std::mt19937_64& rng) { return std::chrono::milliseconds(uniform(rng, 2, 20)); }

std::chrono::milliseconds after_release_pause(std::mt19937_64& rng) {
  return std::chrono::milliseconds(uniform(rng, 10, 40));
}

bool sleep_unless_stopped(const std::atomic<bool>& stop, std::chrono::milliseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (!stop.load()) {
    auto now = std::chrono::steady_clock::now();
    if (now >= until) return true;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(until - now, std::chrono::milliseconds(20)));
  }
  return false;
}

std::unique_ptr<Workload> make_workload(const std::string& name) {
  for (const auto& w : workload_registry()) {
    if (name == w.name) return w.make();
  }
  return nullptr;
}

}  // namespace lockcheck
