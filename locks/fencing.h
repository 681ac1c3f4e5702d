// Fencing tokens (Kleppmann 2016): with --fencing every successful acquire also takes the next value of a
// counter kept beside the lock, so that a resource can reject writes carrying an older token than one it has
// seen. The counter of lock key K is the Redis key "K:fence" on the lock's node(s).
//
// Single node: INCR K:fence after the lock is taken. Tokens then increase in the order in which holders got
// the lock, as long as the node keeps the counter (a restart without persistence resets it: that is a defect
// the fencing checker should find, not hide).
// Redlock (quorum): the counters on the nodes drift apart, so "max of INCR over a majority" alone is not
// monotonic (counters x=1, y=10, z=1: A increments {x, y} and gets 11; B increments {x, z} and gets 3). The
// token is therefore taken in two rounds: INCR on every node and the max m of a majority of replies, then
// raise every counter to at least m (kRaiseCounterScript) and wait for a majority. Any later majority INCR
// meets a node raised to >= m and returns > m.
#pragma once

#include <string>

#include "locks/lock_client.h"
#include "sys/redis_conn.h"

namespace lockcheck {

// "K:fence".
std::string fence_key(const std::string& lock_key);

// Sets KEYS[1] to ARGV[1] when its value is lower (or absent); returns the value it holds afterwards.
extern const char* const kRaiseCounterScript;

// For an ok acquire on a single node: INCR fence_key(key) on conn and record the value in res.token. When the
// INCR's outcome is not a number (timeout, closed, error, not sent), res becomes info: the client holds the
// lock but has no token to use it with, so it gives up; the lock then expires by its TTL.
// REQUIRES: res.outcome == kOk.
void add_fencing_token(RedisConn& conn, const std::string& key, LockResult& res);

}  // namespace lockcheck
