// Helpers shared by the single-node recipes (setnx-expire, getset, set-nx-ex-del, set-nx-timestamp, single,
// single-failover): the mapping of one reply to ok / fail / info, in RedisConn's taxonomy.
#pragma once

#include <chrono>
#include <cstdint>

#include "locks/lock_client.h"
#include "sys/redis_conn.h"

namespace lockcheck {

// Whole milliseconds on the monotonic clock since start.
inline int64_t ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
}

// A transport outcome: info when the command may have run, fail when it certainly did not. REQUIRES:
// !r.ok() (a timeout, closed connection, refused connection or error reply).
inline LockResult transport_result(const Reply& r) {
  if (r.indeterminate()) return LockResult::info(r.error);
  return LockResult::fail(r.error);
}

// The reply of a release or extension that answers 1 (done) or 0 (nothing of ours there): a compare-and-delete
// or compare-and-pexpire script, or a plain DEL. 0 is fail "not held": the lock had expired or was taken.
inline LockResult one_or_zero_result(const Reply& r, const char* command) {
  if (!r.ok()) return transport_result(r);
  auto n = r.integer();
  if (!n) return LockResult::info(std::string("unexpected reply to ") + command);
  if (*n == 0) return LockResult::fail("not held (expired or taken)");
  return LockResult::ok();
}

}  // namespace lockcheck
