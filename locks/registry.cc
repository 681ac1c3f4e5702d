#include "locks/lock_client.h"

// A new algorithm is one file in locks/ defining its factory, plus its declaration and its line here.

namespace lockcheck {

std::unique_ptr<LockClient> make_single_lock(const LockOptions& o);

const std::vector<LockAlgorithm>& lock_algorithms() {
  static const std::vector<LockAlgorithm> registry = {
      {"single", "V3.1: SET key token NX PX ttl on one node, random 20-byte token, compare-and-delete release",
       "one node is a single point of failure; a holder paused past the TTL keeps working after the lock expired",
       make_single_lock},
  };
  return registry;
}

const LockAlgorithm* find_lock_algorithm(const std::string& name) {
  for (const auto& a : lock_algorithms()) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

}  // namespace lockcheck
