#include "workloads/workload.h"

// A new workload is one file in workloads/ defining its factory, plus its declaration and its line here.

namespace lockcheck {

std::unique_ptr<Workload> make_lock_workload();

const std::vector<WorkloadInfo>& workload_registry() {
  static const std::vector<WorkloadInfo> registry = {
      {"lock", "acquire a random key, hold it below the TTL, release; judged by mutex, lease and stats",
       make_lock_workload},
  };
  return registry;
}

}  // namespace lockcheck
