#include "checkers/checker.h"

namespace lockcheck {

const Registry<CheckerInfo>& checker_registry() {
  static const Registry<CheckerInfo> registry = {
      LOCKCHECK_ENTRY(CheckerInfo, mutex_checker),    LOCKCHECK_ENTRY(CheckerInfo, lease_checker),
      LOCKCHECK_ENTRY(CheckerInfo, fencing_checker),  LOCKCHECK_ENTRY(CheckerInfo, lost_updates_checker),
      LOCKCHECK_ENTRY(CheckerInfo, liveness_checker), LOCKCHECK_ENTRY(CheckerInfo, renewal_checker),
      LOCKCHECK_ENTRY(CheckerInfo, stats_checker),    LOCKCHECK_ENTRY(CheckerInfo, faults_checker),
      LOCKCHECK_ENTRY(CheckerInfo, loss_notice_checker),
  };
  return registry;
}

}  // namespace lockcheck
