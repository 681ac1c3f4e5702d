#include "workloads/workload.h"

// A new workload is one file in workloads/ that defines its factory and its entry, plus its line here.

namespace lockcheck {

const Registry<WorkloadInfo>& workload_registry() {
  static const Registry<WorkloadInfo> registry = {
      LOCKCHECK_ENTRY(WorkloadInfo, lock_workload),       LOCKCHECK_ENTRY(WorkloadInfo, lock_set_workload),
      LOCKCHECK_ENTRY(WorkloadInfo, fenced_set_workload), LOCKCHECK_ENTRY(WorkloadInfo, counter_workload),
      LOCKCHECK_ENTRY(WorkloadInfo, renew_workload),
  };
  return registry;
}

}  // namespace lockcheck
