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
      {"single-failover", "V3.1 on the master Sentinel names (--topology replicated); --wait N adds WAIT N after SET",
       "replication is asynchronous: a promoted replica that lacks the lock grants it again (WAIT narrows the "
       "window, does not close it)",
       make_single_failover_lock},
      {"cluster", "V3.1 on a Redis Cluster (--topology cluster): the key's slot master, MOVED/ASK followed",
       "replication is asynchronous: a master cut off from the cluster grants locks its promoted replica never "
       "receives",
       make_cluster_lock},
      {"redlock", "Redlock: SET NX PX on N independent masters in parallel, quorum N/2+1, validity = TTL - "
       "elapsed - drift, retries after a random delay",
       "assumes bounded clock drift and pauses: a clock jump or an amnesic restart on one node of a quorum, or a "
       "pause past the validity, breaks mutual exclusion",
       make_redlock},
      {"redlock-sequential", "Redlock with the nodes contacted one after another (redis-rb, redlock-py, "
       "redis-plus-plus, Redisson's RedLock)",
       "as redlock; and every slow or dead node before the quorum eats into the validity (N x the latency)",
       make_redlock_sequential},
      {"external", "a lock client in any language: a subprocess per client speaking JSON lines on stdin/stdout "
       "(--client-cmd)",
       "whatever the client gets wrong; a crash, a malformed answer or a missed deadline is recorded as info",
       make_external_lock},
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
