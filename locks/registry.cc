#include "locks/lock_client.h"

// A new algorithm is one file in locks/ defining its factory, plus its declaration and its line here.

namespace lockcheck {

std::unique_ptr<LockClient> make_setnx_expire_lock(const LockOptions& o);
std::unique_ptr<LockClient> make_getset_lock(const LockOptions& o);
std::unique_ptr<LockClient> make_set_nx_ex_del_lock(const LockOptions& o);
std::unique_ptr<LockClient> make_set_nx_timestamp_lock(const LockOptions& o);
std::unique_ptr<LockClient> make_single_lock(const LockOptions& o);
std::unique_ptr<LockClient> make_single_failover_lock(const LockOptions& o);
std::unique_ptr<LockClient> make_cluster_lock(const LockOptions& o);
std::unique_ptr<LockClient> make_redlock(const LockOptions& o);
std::unique_ptr<LockClient> make_redlock_sequential(const LockOptions& o);
std::unique_ptr<LockClient> make_external_lock(const LockOptions& o);

const std::vector<LockAlgorithm>& lock_algorithms() {
  static const std::vector<LockAlgorithm> registry = {
      {"setnx-expire", "V1.0: SETNX key 1, then EXPIRE as a second command; release with DEL",
       "not atomic: a client that dies between the two commands leaves a lock that never expires; DEL deletes "
       "whoever holds it",
       make_setnx_expire_lock},
      {"getset", "V1.1: value = expiry timestamp (client wall clock), no Redis TTL; SETNX, else GET and GETSET to "
       "steal an expired lock; release with DEL",
       "needs synchronised client clocks; a losing GETSET still moves the holder's expiry; DEL deletes a lock "
       "another client has stolen",
       make_getset_lock},
      {"getset-skewed",
       "getset with client clocks off by up to +-400 ms (each client a fixed offset drawn from its seed)",
       "a client whose clock runs ahead steals live locks (the recipe assumes synchronised clocks)",
       [](const LockOptions& o) {
         LockOptions s = o;
         if (!s.extra.is_object()) s.extra = nlohmann::json::object();
         if (!s.extra.contains("clock_skew_max_ms")) s.extra["clock_skew_max_ms"] = 400;
         return make_getset_lock(s);
       }},
      {"set-nx-ex-del", "V2.0: SET key 1 NX PX ttl in one command; release with plain DEL",
       "a holder that outlives its TTL deletes the next holder's lock with DEL",
       make_set_nx_ex_del_lock},
      {"set-nx-timestamp", "V3.0: SET key <Unix seconds> NX PX ttl; release by compare-and-delete",
       "the value is not unique: clients locking within the same second share it, so a late holder deletes the "
       "next holder's lock",
       make_set_nx_timestamp_lock},
      {"single", "V3.1: SET key token NX PX ttl on one node, random 20-byte token, compare-and-delete release",
       "one node is a single point of failure; a holder paused past the TTL keeps working after the lock expired",
       make_single_lock},
      {"single-extend-setnx", "single whose extend re-creates an expired lock with SET NX (redsync's "
       "WithSetNXOnExtend; lock option extend_mode=setnx)",
       "an extend after the lock expired and another client held it succeeds: the client believes it held the "
       "lock throughout (resurrected lock)",
       [](const LockOptions& o) {
         LockOptions s = o;
         if (!s.extra.is_object()) s.extra = nlohmann::json::object();
         s.extra["extend_mode"] = "setnx";
         return make_single_lock(s);
       }},
      {"single-failover", "V3.1 on the master Sentinel names (--topology replicated); --wait N adds WAIT N after SET",
       "replication is asynchronous: a promoted replica that lacks the lock grants it again (WAIT narrows the "
       "window, does not close it)",
       make_single_failover_lock, "master_name, wait_replicas"},
      {"cluster", "V3.1 on a Redis Cluster (--topology cluster): the key's slot master, MOVED/ASK followed",
       "replication is asynchronous: a master cut off from the cluster grants locks its promoted replica never "
       "receives",
       make_cluster_lock},
      {"redlock", "Redlock: SET NX PX on N independent masters in parallel, quorum N/2+1, validity = TTL - "
       "elapsed - drift, retries after a random delay",
       "assumes bounded clock drift and pauses: a clock jump or an amnesic restart on one node of a quorum, or a "
       "pause past the validity, breaks mutual exclusion",
       make_redlock, "retry_count, retry_delay_ms, retry_jitter_ms, drift_factor, drift_ms, quorum"},
      {"redlock-sequential", "Redlock with the nodes contacted one after another (redis-rb, redlock-py, "
       "redis-plus-plus, Redisson's RedLock)",
       "as redlock; and every slow or dead node before the quorum eats into the validity (N x the latency)",
       make_redlock_sequential, "retry_count, retry_delay_ms, retry_jitter_ms, drift_factor, drift_ms, quorum"},
      {"external", "a lock client in any language: a subprocess per client speaking JSON lines on stdin/stdout "
       "(--client-cmd)",
       "whatever the client gets wrong; a crash, a malformed answer or a missed deadline is recorded as info",
       make_external_lock, "client_timeout_ms, client_startup_ms, client_stderr_path",
       /*hands_out_tokens=*/false},
      // Shipped adapters of real libraries (clients/, locks/adapters.cc): external clients whose --client-cmd
      // lockcheck makes from the adapter registry and --lock-opt.
      {"redsync", "library: go-redsync/redsync v4 (Go, Redlock over go-redis v9), adapter clients/redsync",
       "Redlock's: amnesia on a fast restart, clock jumps, pauses past the validity; WithSetNXOnExtend re-creates "
       "an expired lock on extend",
       make_external_lock, "", /*hands_out_tokens=*/false},
      {"redislock", "library: bsm/redislock (Go, one node over go-redis v9), adapter clients/redislock",
       "one node is a single point of failure; no validity of its own: a paused holder outlives its lease",
       make_external_lock, "", /*hands_out_tokens=*/false},
      {"redis-py", "library: redis.lock.Lock of redis-py (Python, one node, Debian python3-redis), adapter "
       "clients/redis-py",
       "one node is a single point of failure; no validity of its own: a paused holder outlives its lease",
       make_external_lock, "", /*hands_out_tokens=*/false},
  };
  return registry;
}

const LockAlgorithm* find_lock_algorithm(const std::string& name) {
  for (const auto& a : lock_algorithms()) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

}  // namespace lockcheck
