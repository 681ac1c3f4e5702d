#include "checkers/checker.h"

namespace lockcheck {

const std::vector<CheckerInfo>& checker_registry() {
  static const std::vector<CheckerInfo> registry = {
  };
  return registry;
}

}  // namespace lockcheck
