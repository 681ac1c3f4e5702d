#include "cluster/replicated_ready.h"

#include <hiredis/hiredis.h>

#include <map>
#include <thread>

#include "sys/redis_conn.h"

namespace lockcheck {

namespace {

using std::chrono::milliseconds;

// Sentinel replies to SENTINEL MASTER as a flat array of field, value, field, value ...
std::map<std::string, std::string> field_map(const redisReply* r) {
  std::map<std::string, std::string> m;
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY) return m;
  for (size_t i = 0; i + 1 < r->elements; i += 2) {
    const redisReply* k = r->element[i];
    const redisReply* v = r->element[i + 1];
    if (k->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING) {
      m[std::string(k->str, k->len)] = std::string(v->str, v->len);
    }
  }
  return m;
}

}  // namespace

std::string replicated_pending(const std::vector<ReadyParty>& replicas, const std::vector<ReadyParty>& sentinels) {
  for (const auto& r : replicas) {
    RedisConn c(r.admin, milliseconds(200), milliseconds(500));
    const auto text = c.command({"INFO", "replication"}).str();
    if (!text || text->find("master_link_status:up") == std::string::npos) {
      return r.name + "'s replication link to its master";
    }
  }
  if (sentinels.empty()) return "";
  const std::string want_replicas = std::to_string(replicas.size());
  const std::string want_others = std::to_string(sentinels.size() - 1);
  for (const auto& s : sentinels) {
    RedisConn c(s.admin, milliseconds(200), milliseconds(500));
    Reply r = c.command({"SENTINEL", "MASTER", kSentinelMasterName});
    auto f = field_map(r.raw());
    if (f["num-slaves"] != want_replicas || f["num-other-sentinels"] != want_others) {
      return s.name + " to see " + want_replicas + " replicas and " + want_others + " other Sentinels (sees " +
             (f.count("num-slaves") ? f["num-slaves"] : "?") + " and " +
             (f.count("num-other-sentinels") ? f["num-other-sentinels"] : "?") + ")";
    }
  }
  return "";
}

void wait_replicated_ready(const std::vector<ReadyParty>& replicas, const std::vector<ReadyParty>& sentinels,
                           milliseconds timeout, const std::string& what, const std::string& hint,
                           const std::function<bool()>& stopping) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string pending;
  while (true) {
    pending = replicated_pending(replicas, sentinels);
    if (pending.empty()) return;
    if (stopping && stopping()) throw ClusterError(what + ": stopping (while waiting for " + pending + ")");
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  throw ClusterError(what + ": not ready within " + std::to_string(timeout.count()) + " ms: waiting for " + pending +
                     (hint.empty() ? "" : "; " + hint));
}

}  // namespace lockcheck
