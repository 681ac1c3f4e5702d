#include "checkers/checker.h"
#include "checkers/mutex.h"

namespace lockcheck {

// Defined in the checker's own file (checkers/<name>.cc).
std::unique_ptr<Checker> make_lease_checker();
std::unique_ptr<Checker> make_fencing_checker();
std::unique_ptr<Checker> make_lost_updates_checker();
std::unique_ptr<Checker> make_stats_checker();
std::unique_ptr<Checker> make_liveness_checker();
std::unique_ptr<Checker> make_renewal_checker();
std::unique_ptr<Checker> make_faults_checker();

const std::vector<CheckerInfo>& checker_registry() {
  static const std::vector<CheckerInfo> registry = {
      {"mutex", "linearizability of acquire/release/extend against an owner-aware mutex, per key (WGL search)",
       make_mutex_checker},
      {"lease", "no two processes' lease windows (acquire ok .. ok + validity_ms, extends, release) overlap",
       make_lease_checker},
      {"fencing", "tokens increase in real-time order per key; no write with a stale token is accepted",
       make_fencing_checker},
      {"lost-updates", "acknowledged adds / increments are in the final read; stale reads; unexpected elements",
       make_lost_updates_checker},
      {"liveness", "outside faults, a key processes keep trying to acquire is granted within 2 x TTL + op timeout "
       "(stuck lock, livelock)",
       make_liveness_checker},
      {"renewal", "an ok extend after another process acquired the key since the extender's last lease is a "
       "resurrected lock",
       make_renewal_checker},
      {"stats", "op counts, latency percentiles and throughput per second (valid once any op completed)",
       make_stats_checker},
      {"faults", "the planned faults took effect (client-pause armed vs fired); judged whenever a nemesis runs",
       make_faults_checker},
  };
  return registry;
}

}  // namespace lockcheck
