#include "cluster/redis_config.h"

namespace lockcheck {

std::vector<std::string> node_args(Persistence p) {
  std::vector<std::string> a = {"--save", "", "--repl-diskless-sync-delay", "0"};
  switch (p) {
    case Persistence::kNone: a.insert(a.end(), {"--appendonly", "no"}); break;
    case Persistence::kAofEverysec: a.insert(a.end(), {"--appendonly", "yes", "--appendfsync", "everysec"}); break;
    case Persistence::kAofAlways: a.insert(a.end(), {"--appendonly", "yes", "--appendfsync", "always"}); break;
  }
  return a;
}

std::string node_conf(Persistence p) {
  const std::vector<std::string> a = node_args(p);
  std::string c;
  for (size_t i = 0; i + 1 < a.size(); i += 2)
    c += a[i].substr(2) + " " + (a[i + 1].empty() ? std::string("\"\"") : a[i + 1]) + "\n";
  return c;
}

std::string sentinel_monitor_conf(const Endpoint& master, int quorum, const SentinelTimings& t, int parallel_syncs) {
  const std::string m = kSentinelMasterName;
  return "sentinel monitor " + m + " " + master.host + " " + std::to_string(master.port) + " " +
         std::to_string(quorum) + "\n" + "sentinel down-after-milliseconds " + m + " " +
         std::to_string(t.down_after_ms) + "\n" + "sentinel failover-timeout " + m + " " +
         std::to_string(t.failover_timeout_ms) + "\n" + "sentinel parallel-syncs " + m + " " +
         std::to_string(parallel_syncs) + "\n";
}

}  // namespace lockcheck
