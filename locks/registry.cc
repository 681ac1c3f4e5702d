#include "locks/adapters.h"
#include "locks/lock_client.h"

// A new algorithm is one file in locks/ that defines its factory and its entry, plus its line here.
// A new shipped library adapter is one entry in locks/adapters.cc (it becomes a lock of its own here).

namespace lockcheck {

std::unique_ptr<LockClient> make_external_lock(const LockOptions& o);  // locks/external.cc

namespace {

// A shipped library adapter is an `external` lock whose client command lockcheck makes itself.
LockAlgorithm adapter_lock(const LockAdapter& a) {
  return {a.name,
          a.description,
          a.known_defects,
          make_external_lock,
          "",
          /*hands_out_tokens=*/false,
          a.protocol,
          /*external=*/true};
}

}  // namespace

const Registry<LockAlgorithm>& lock_registry() {
  static const Registry<LockAlgorithm> registry = [] {
    Registry<LockAlgorithm> r = {
        LOCKCHECK_ENTRY(LockAlgorithm, setnx_expire_lock),
        LOCKCHECK_ENTRY(LockAlgorithm, getset_lock),
        LOCKCHECK_ENTRY(LockAlgorithm, getset_skewed_lock),
        LOCKCHECK_ENTRY(LockAlgorithm, set_nx_ex_del_lock),
        LOCKCHECK_ENTRY(LockAlgorithm, set_nx_timestamp_lock),
        LOCKCHECK_ENTRY(LockAlgorithm, single_lock),
        LOCKCHECK_ENTRY(LockAlgorithm, single_extend_setnx_lock),
        LOCKCHECK_ENTRY(LockAlgorithm, single_failover_lock),
        LOCKCHECK_ENTRY(LockAlgorithm, cluster_lock),
        LOCKCHECK_ENTRY(LockAlgorithm, redlock_lock),
        LOCKCHECK_ENTRY(LockAlgorithm, redlock_sequential_lock),
        LOCKCHECK_ENTRY(LockAlgorithm, external_lock),
    };
    for (const auto& a : lock_adapters()) r.add(adapter_lock(a));
    return r;
  }();
  return registry;
}

const LockAlgorithm* find_lock_algorithm(const std::string& name) { return lock_registry().find(name); }

}  // namespace lockcheck
