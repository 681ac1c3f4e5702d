#include "workloads/workload.h"

// A new workload is one file in workloads/ defining its factory, plus its declaration and its line here.

namespace lockcheck {

std::unique_ptr<Workload> make_lock_workload();
std::unique_ptr<Workload> make_lock_set_workload();
std::unique_ptr<Workload> make_fenced_set_workload();
std::unique_ptr<Workload> make_counter_workload();
std::unique_ptr<Workload> make_renew_workload();

const std::vector<WorkloadInfo>& workload_registry() {
  static const std::vector<WorkloadInfo> registry = {
      {"lock", "acquire a random key, hold it below the TTL, release; judged by mutex, lease and stats",
       make_lock_workload},
      {"lock-set", "under the lock: read a set from a resource Redis, work, write it back with one new element",
       make_lock_set_workload},
      {"fenced-set", "lock-set whose resource rejects reads and writes with a fencing token below the highest seen",
       make_fenced_set_workload},
      {"counter", "under the lock: GET a counter from a resource Redis, work, SET it to one more",
       make_counter_workload},
      {"renew", "hold a lock for 1-1.5 TTLs by extending it before its validity runs out (a watchdog); stop at a "
       "failed extend; judged by mutex, lease, renewal, liveness and stats",
       make_renew_workload},
  };
  return registry;
}

}  // namespace lockcheck
