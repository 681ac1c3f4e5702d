// Client crashes: a client process dies at a chosen point of its lock ops without releasing, as in the lock
// literature's "a client that dies between SETNX and EXPIRE" (the lock never expires) or "a holder that crashed
// after acquiring" (the lock is held until its TTL).
//
// The client-crash nemesis arms a crash for one or more client slots at one of the points below; the first
// process of those slots to reach that point crashes there (one arm, one crash):
//   "mid-acquire"   inside a successful acquire, after the lock was taken and before the client saw it: a lock
//                   whose recipe has several steps asks at its own point between them (setnx-expire: between
//                   SETNX and EXPIRE, so the key never expires); the others crash right after the acquire took
//                   effect, before the client read the reply;
//   "after-acquire" right after an ok acquire, before the lock is used or released;
//   "mid-release"   at a release, before its command reaches the node: the lock is never released.
// A crashed op is recorded info ("client crashed ..."), so the workload retires the process and a fresh one
// takes its slot. A built-in client abandons its connection (the LockClient is destroyed with the retired
// process); an external client (LockClient::os_pid()) is killed with SIGKILL at the crash point.
// The hook the workloads use is workloads/workload.cc (record_lock_op). Thread-safe: one mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/op.h"

namespace lockcheck {

// The crash points, in the order above.
const std::vector<std::string>& crash_points();

struct FiredCrash {
  int64_t arm_id = 0;
  Process process = 0;
  int slot = 0;
  std::string point;
  std::chrono::steady_clock::time_point at;
};

class ClientCrashes {
 public:
  // concurrency: the number of client slots; process p runs in slot p % concurrency. REQUIRES: >= 1.
  explicit ClientCrashes(int concurrency);
  ClientCrashes(const ClientCrashes&) = delete;
  ClientCrashes& operator=(const ClientCrashes&) = delete;

  // Arms one crash at `point` for the first process of `slots` to reach it. Returns its id. Throws
  // std::invalid_argument for an unknown point or a slot outside [0, concurrency).
  int64_t arm(const std::vector<int>& slots, const std::string& point);
  // Widens an arm that has not fired to every slot (so that it fires at the next process to get there).
  // False when it has fired or was disarmed.
  bool widen(int64_t id);
  // Disarms every arm that has not fired.
  void disarm_all() noexcept;
  // True while arm `id` has not fired and is armed.
  bool pending(int64_t id) const;

  // Called by process p at crash point `point`: true (and the arm is used up) when p must crash here.
  bool crash_point(Process p, const std::string& point);

  // The crashes so far (in order), with arm ids > after_id.
  std::vector<FiredCrash> fired(int64_t after_id = 0) const;

 private:
  struct Arm {
    int64_t id;
    std::vector<int> slots;
    std::string point;
  };
  const int concurrency_;
  mutable std::mutex mu_;
  int64_t next_id_ = 1;
  std::vector<Arm> arms_;
  std::vector<FiredCrash> fired_;
};

}  // namespace lockcheck
