#include "checkers/checker.h"
#include "checkers/mutex.h"

namespace lockcheck {

const std::vector<CheckerInfo>& checker_registry() {
  static const std::vector<CheckerInfo> registry = {
      {"mutex", "linearizability of acquire/release/extend against an owner-aware mutex, per key (WGL search)",
       make_mutex_checker},
  };
  return registry;
}

}  // namespace lockcheck
