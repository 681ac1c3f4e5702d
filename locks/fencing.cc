#include "locks/fencing.h"
#include "core/assert.h"

namespace lockcheck {

const char* const kRaiseCounterScript =
    "local c = tonumber(redis.call('get', KEYS[1]) or '0') "
    "if c < tonumber(ARGV[1]) then redis.call('set', KEYS[1], ARGV[1]) return tonumber(ARGV[1]) end "
    "return c";

std::string fence_key(const std::string& lock_key) { return lock_key + ":fence"; }

void add_fencing_token(RedisConn& conn, const std::string& key, LockResult& res) {
  LOCKCHECK_ASSERT(res.outcome == OpType::kOk, "a fencing token for an acquire that did not succeed");
  Reply r = conn.command({"INCR", fence_key(key)});
  auto n = r.integer();
  if (!n) {
    const std::string why = r.error.empty() ? "unexpected reply to INCR" : r.error;
    res = LockResult::info("acquired, but no fencing token: " + why);
    return;
  }
  res.token = *n;
}

}  // namespace lockcheck
