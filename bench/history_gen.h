// Synthetic lock histories for tests and benchmarks: a discrete-event simulation of N client processes using a
// correct blocking mutex per key (FIFO waiters, acquire timeout), with optional info ops (the process is
// retired and a fresh process id takes its place, as in Jepsen), optional injected double grants, optional
// nemesis ops, and optional crashed clients at the end. Deterministic: the same options give the same history.
//
// Op conventions (those of the lock workload): f = acquire | release | extend, key = "lock-<k>", acquire ok
// carries token (increasing per key) and validity_ms; extend ok carries validity_ms.
// - An info acquire never takes effect (it would leave the lock held forever by a retired process).
// - An info release takes effect (the lock is freed) but the client is not told.
// - An injected violation grants a waiting acquire while the lock is held, and only when the holder's release
//   is invoked after the violating acquire returns, so every injected violation is a real overlap of holds.
#pragma once

#include <cstdint>

#include "core/op.h"

namespace lockcheck {

struct LockHistoryOptions {
  int64_t ops = 100000;                 // client operations to invoke (each an invoke plus usually a completion)
  int processes = 10;                   // concurrent client processes
  int keys = 1;                         // lock keys lock-0 .. lock-(keys-1); each acquire picks one at random
  double info_fraction = 0.0;           // probability that an acquire or release completes as info
  double violation_fraction = 0.0;      // probability that an acquire arriving at a held lock is granted anyway
  double extend_fraction = 0.2;         // probability that a holder extends once before releasing
  int64_t hold_us_max = 2000;           // hold time, uniform in [0, hold_us_max]
  int64_t latency_us_max = 400;         // request and reply latency, each uniform in [1, latency_us_max]
  int64_t think_us_max = 500;           // pause between a process's ops, uniform in [0, think_us_max]
  int64_t acquire_timeout_us = 200000;  // an acquire still waiting after this long fails
  int64_t validity_ms = 10000;          // reported by ok acquires and extends
  int64_t nemesis_interval_us = 0;      // > 0: a nemesis op pair (partition / heal, info) at this interval
  bool crash_at_end = true;             // stop mid-flight: ops in flight at the end never complete
  bool retire_after_info = true;        // false: a process keeps its id after an info op (breaks the workload's
                                        // convention; the mutex checker must search those processes unpruned)
  uint64_t seed = 1;
};

struct LockHistoryInfo {
  int64_t ops = 0;     // client operations invoked
  int64_t events = 0;  // history entries (client and nemesis)
  int64_t ok = 0, fail = 0, info = 0, crashed = 0;
  int64_t injected_violations = 0;
  int64_t processes_used = 0;  // distinct client process ids
};

// REQUIRES: ops >= 0, processes >= 1, keys >= 1.
History generate_lock_history(const LockHistoryOptions& options, LockHistoryInfo* info = nullptr);

}  // namespace lockcheck
