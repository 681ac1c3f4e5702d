#include "cluster/redis_config.h"

namespace lockcheck {

std::string persistence_conf(Persistence p) {
  switch (p) {
    case Persistence::kNone: return "save \"\"\nappendonly no\n";
    case Persistence::kAofEverysec: return "save \"\"\nappendonly yes\nappendfsync everysec\n";
    case Persistence::kAofAlways: return "save \"\"\nappendonly yes\nappendfsync always\n";
  }
  return "save \"\"\nappendonly no\n";
}

std::vector<std::string> persistence_args(Persistence p) {
  switch (p) {
    case Persistence::kNone: return {"--save", "", "--appendonly", "no"};
    case Persistence::kAofEverysec: return {"--save", "", "--appendonly", "yes", "--appendfsync", "everysec"};
    case Persistence::kAofAlways: return {"--save", "", "--appendonly", "yes", "--appendfsync", "always"};
  }
  return {"--save", "", "--appendonly", "no"};
}

std::string sentinel_monitor_conf(const Endpoint& master, int quorum, const SentinelTimings& t) {
  const std::string m = kSentinelMasterName;
  return "sentinel monitor " + m + " " + master.host + " " + std::to_string(master.port) + " " +
         std::to_string(quorum) + "\n" + "sentinel down-after-milliseconds " + m + " " +
         std::to_string(t.down_after_ms) + "\n" + "sentinel failover-timeout " + m + " " +
         std::to_string(t.failover_timeout_ms) + "\n" + "sentinel parallel-syncs " + m + " 1\n";
}

}  // namespace lockcheck
