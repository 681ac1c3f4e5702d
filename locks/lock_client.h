// A lock algorithm under test. One LockClient per client process; a process calls it from one thread only.
// Every call returns within a bounded time (the per-request timeouts in LockOptions), never hangs, and says
// whether it happened (ok), certainly did not happen (fail: e.g. a reply error, a refused connection, NX not
// set) or may have happened (info: a timeout or a connection closed after the request was sent).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cluster.h"
#include "core/op.h"
#include "core/registry.h"

namespace lockcheck {

struct LockResult {
  OpType outcome = OpType::kFail;      // kOk, kFail or kInfo
  std::string error;                   // why, for fail and info
  std::optional<int64_t> validity_ms;  // acquire/extend ok: how long the client may assume it holds it
  std::optional<int64_t> token;        // acquire ok with fencing: the fencing token
  // Protocol 2 of external clients (locks/README-external.md); empty when the client did not say.
  std::vector<std::string> keys;  // acquire/extend ok: the Redis keys the op wrote, named as the library names them
  std::string reason;             // fail/info: held, not_held, timeout, unreachable or error
  // Protocol 2's mono_ns: how long the answer took from the client's measuring its validity to the harness's
  // reading it (validity_ms is already shortened by it); empty when the client did not stamp its answer.
  std::optional<int64_t> answer_lag_ms;

  static LockResult ok() { return {OpType::kOk, "", std::nullopt, std::nullopt, {}, "", std::nullopt}; }
  static LockResult fail(std::string why) {
    return {OpType::kFail, std::move(why), std::nullopt, std::nullopt, {}, "", std::nullopt};
  }
  static LockResult info(std::string why) {
    return {OpType::kInfo, std::move(why), std::nullopt, std::nullopt, {}, "", std::nullopt};
  }
};

// The typed reasons of a failed op (protocol 2's "reason"): the only values a client may send.
bool is_known_reason(const std::string& reason);
// "held, not_held, timeout, unreachable, error": for messages.
const char* known_reasons();

struct LockOptions {
  std::vector<Endpoint> nodes;  // the lock nodes as this client reaches them
  // The same nodes' own addresses, in the same order: what Sentinel reports. A Sentinel-aware client maps a
  // reported address to nodes[i] (the fault proxy's link for this client). Empty: the same as nodes.
  std::vector<Endpoint> node_addresses;
  std::vector<Endpoint> sentinels;  // replicated topology only
  std::chrono::milliseconds connect_timeout{200};
  std::chrono::milliseconds op_timeout{500};        // per request (per node for Redlock)
  bool fencing = false;                             // hand out fencing tokens with each acquire
  uint64_t seed = 0;                                // for retry jitter and the like
  nlohmann::json extra = nlohmann::json::object();  // algorithm-specific options, e.g. redlock retries
  // Called when the client's library tells its caller that the lock on key is gone (an external client's
  // "lost" event), at the moment the client learns of it, from any thread of the client (not the caller's);
  // detail is the library's words. The runner records it in the history as a loss notice. Null: nobody listens.
  std::function<void(const std::string& key, const std::string& detail)> on_lost;
};

class LockClient {
 public:
  virtual ~LockClient() = default;
  // Tries once (or, for algorithms with retries, as the algorithm prescribes) to take key for ttl.
  virtual LockResult acquire(const std::string& key, std::chrono::milliseconds ttl) = 0;
  // Releases key if this client holds it (by the algorithm's own rule).
  virtual LockResult release(const std::string& key) = 0;
  // Extends the hold on key to ttl from now. Algorithms that cannot extend return fail("unsupported").
  virtual LockResult extend(const std::string& key, std::chrono::milliseconds ttl) = 0;
  // The OS process that runs this client's lock library, when it is not lockcheck itself (an external client's
  // subprocess): client faults act on it (client-pause stops it with SIGSTOP, client-crash kills it).
  virtual std::optional<int> os_pid() const { return std::nullopt; }

  // Crash points (the client-crash nemesis, core/client_crashes.h). The workload installs a hook; a client
  // whose recipe has several steps asks it at a named point inside an op (e.g. "mid-acquire" between SETNX and
  // EXPIRE) and, when it answers true, dies there: it abandons the op (and its connection) without another
  // command and returns info. No hook: never crashes.
  using CrashHook = std::function<bool(const char* point)>;
  void set_crash_hook(CrashHook hook) { crash_hook_ = std::move(hook); }

 protected:
  bool crash_point(const char* point) const { return crash_hook_ && crash_hook_(point); }

 private:
  CrashHook crash_hook_;
};

struct LockAlgorithm {
  const char* name;
  const char* description;    // one line: what it is
  const char* known_defects;  // one line: what it is known to get wrong
  std::function<std::unique_ptr<LockClient>(const LockOptions&)> make;
  const char* option_keys = "";  // the LockOptions.extra keys it reads (--lock-opt), comma separated
  // True when the harness can make it hand out fencing tokens (LockOptions.fencing); false when that is up to
  // a client outside the harness (external), which a fencing workload then needs --fencing to vouch for.
  bool hands_out_tokens = true;
  // The protocol it speaks to the nodes: a server kind serves it or not (ServerSpec::protocols). "resp": Redis
  // nodes each on its own; "resp-sentinel": a master found through Sentinel; "resp-cluster": a Redis Cluster;
  // "etcd-v3", "zk"; "*": any (a client outside the harness says nothing of what it speaks).
  const char* protocol = "resp";
  // A subprocess client (external and the shipped library adapters) rather than a client in this process.
  bool external = false;
  // Why it cannot hand out fencing tokens at all ("": it can, or its client decides): the plan refuses --fencing and
  // the workloads that need tokens with this reason, before anything starts.
  const char* no_fencing = "";
};

// The registry (locks/registry.cc): one line per algorithm, then one lock per shipped library adapter.
const Registry<LockAlgorithm>& lock_registry();
const LockAlgorithm* find_lock_algorithm(const std::string& name);  // nullptr when unknown

}  // namespace lockcheck
