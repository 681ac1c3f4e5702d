// Client pauses: Kleppmann's "GC pause" of a lock holder. A client process stops for longer than the TTL
// right after its acquire succeeded, then carries on as if it still held the lock.
//
// Thread clients cannot be stopped from outside at an arbitrary instruction, so the pause happens at a
// *pause point*: workloads call ProcessEnv::pause_point() right after an ok acquire, before they use the lock
// (lock: before the hold; lock-set, fenced-set, counter: before the read of the resource). The client-pause
// nemesis arms a pause for one or more client slots; the first process of those slots to reach its pause
// point takes it (one arm, one pause) and blocks there for the armed length. An external client
// (--lock external) is a subprocess that only runs the lock ops, driven by the same worker thread, so pausing
// that thread pauses the holder's use of the lock in the same way.
// An arm aimed at a random slot widens to every slot if that slot has not reached a pause point within
// widen_after (it may be starved of the lock), so a planned pause takes effect.
// An external client (LockClient::os_pid() set) is also stopped with SIGSTOP for the pause and resumed with
// SIGCONT at its end (also when the run stops or release_all ends it early), so the library's own threads and
// timers (a lease-renewing watchdog) stop too, as in a real GC pause.
//
// Bounds: a pause lasts at most its armed length and ends early when the run stops (the stop flag given to
// pause_point) or release_all() is called. Thread-safe: one mutex; pause_point waits on a condition variable.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "core/client_crashes.h"
#include "core/op.h"

namespace lockcheck {

// A pause that was taken.
struct FiredPause {
  int64_t arm_id = 0;
  Process process = 0;
  int slot = 0;
  std::chrono::milliseconds armed_for{0};
  std::chrono::steady_clock::time_point started;
  std::optional<std::chrono::milliseconds> lasted;  // set once the pause has ended
  std::optional<int> os_pid;                        // the client's OS process, stopped for the pause
};

class ClientPauses {
 public:
  // concurrency: the number of client slots; process p runs in slot p % concurrency. REQUIRES: >= 1.
  explicit ClientPauses(int concurrency);
  ClientPauses(const ClientPauses&) = delete;
  ClientPauses& operator=(const ClientPauses&) = delete;

  int concurrency() const { return concurrency_; }
  // The client-crash nemesis's arms live here too: this object is the run's one client-side fault hook,
  // shared by the nemesis driver and the workers.
  ClientCrashes& crashes() { return crashes_; }

  // Arms one pause of length `pause` for the first process of `slots` to reach a pause point. Returns its id.
  // With widen_after, an arm that has not fired by then is taken by the first process of any slot to reach its
  // pause point (a random target that does not get the lock must not make the fault vanish).
  // REQUIRES: every slot in [0, concurrency), pause > 0.
  int64_t arm(const std::vector<int>& slots, std::chrono::milliseconds pause,
              std::optional<std::chrono::milliseconds> widen_after = std::nullopt);
  // Disarms every arm that has not fired. Pauses in progress run to their end.
  void disarm_all();
  // Ends every pause in progress now and disarms every arm. Never throws.
  void release_all() noexcept;

  // The pauses taken so far (in the order they started), with arm ids > after_id.
  std::vector<FiredPause> fired(int64_t after_id = 0) const;
  // Waits until the arm `id` fired, at most `timeout`. True when it fired.
  bool wait_fired(int64_t id, std::chrono::milliseconds timeout) const;
  // True while an arm that has not fired exists.
  bool armed() const;

  // Called by client process p at its pause point. Takes an armed pause for p's slot if there is one and
  // blocks for it (returns early when stop is set or on release_all). Returns how long it paused (0: none).
  // os_pid: the client's own OS process (LockClient::os_pid()), stopped (SIGSTOP) for the pause.
  std::chrono::milliseconds pause_point(Process p, const std::atomic<bool>& stop,
                                        std::optional<int> os_pid = std::nullopt);

 private:
  struct Arm {
    int64_t id;
    std::vector<int> slots;
    std::chrono::milliseconds pause;
    std::optional<std::chrono::steady_clock::time_point> any_slot_from;
  };

  const int concurrency_;
  ClientCrashes crashes_{concurrency_};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  int64_t next_id_ = 1;
  uint64_t release_epoch_ = 0;  // bumped by release_all: pauses started before it end
  std::vector<Arm> arms_;       // not fired yet
  std::vector<FiredPause> fired_;
};

}  // namespace lockcheck
