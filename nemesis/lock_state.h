// The live lock state of a run, for lock-state fault timing (--nemesis-timing lock-state, nemesis/timing.h) and
// for recording which state each fault met (detail.lock_state): read from the history as it is recorded
// (HistoryWriter::observe, as HolderTracker), and ONLY from what a lock library reports through it. Never from
// lockcheck's own key names, Redis reads or timing constants, so an external adapter's lock is timed the same way.
//
// What it reads, per client process:
//   acquire invoke            -> acquiring
//   acquire ok                -> held: since the ok; the validity ends validity_ms after the ok when the client
//                                reported one (Redlock's validity is what is left at the ok), else the run's TTL
//                                after the acquire's invoke (the key's TTL starts when the command is sent)
//   acquire fail              -> free
//   extend invoke             -> renewing (still held)
//   extend ok                 -> held, a new lease from the ok, with the new validity (reported, else the TTL
//                                after the extend's invoke)
//   extend fail               -> held, with the old validity (it lapses by itself)
//   release invoke            -> releasing
//   release ok / fail         -> free
//   a loss notice (f "lost")  -> free: the library said the lock is gone
//   any other info            -> free: the process is retired (core/op.h)
// A held process whose validity has ended is "expired": its lock is no longer live (it may still believe it holds).
//
// The run-wide state at an instant (coverage: which moment of the lock's life a fault met) is one of free,
// acquiring, held-early (a live holding before half its validity), held-late (a live holding past half its
// validity), renewing, releasing. When processes differ the first in this order wins:
//   renewing > releasing > held-early > held-late > acquiring > free
// (an expired holding counts as free). Moments (for timing rules that fire on an op) are kept as the newest
// event of each kind with a sequence number, so that a waiter never misses one that came between two looks.
//
// Time: each op is stamped with std::chrono::steady_clock when the view sees it (inside the writer's record(),
// the same instant as the op's time); validity ends are steady_clock instants. The test overloads take the instant.
// Thread-safety: every method may be called from any thread; on_op runs under the history writer's lock and is
// O(1) plus a notify.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/history.h"

namespace lockcheck {

using SteadyTime = std::chrono::steady_clock::time_point;

enum class ProcessLockState { kFree, kAcquiring, kHeld, kRenewing, kReleasing };
const char* to_string(ProcessLockState s);  // "free", "acquiring", "held", "renewing", "releasing"

enum class RunLockState { kFree, kAcquiring, kHeldEarly, kHeldLate, kRenewing, kReleasing };
// "free", "acquiring", "held-early", "held-late", "renewing", "releasing" (the detail.lock_state values).
const char* to_string(RunLockState s);

// One client process's lock, as its library reported it.
struct ProcessLock {
  Process process = 0;
  ProcessLockState state = ProcessLockState::kFree;
  std::string key;
  SteadyTime invoked{};        // the pending acquire's / extend's invoke
  SteadyTime since{};          // held: the acquire's ok (the grant), or the last ok extend's
  SteadyTime validity_end{};   // held: when its lock's validity ends (see the header comment)
  int64_t validity_ms = 0;     // held: the validity used (reported, else the TTL)
  bool validity_reported = false;
  uint64_t grant_seq = 0;      // held: the sequence number of its grant event

  bool holds() const {
    return state == ProcessLockState::kHeld || state == ProcessLockState::kRenewing ||
           state == ProcessLockState::kReleasing;
  }
  // Held with its validity not over at now.
  bool live(SteadyTime now) const { return holds() && now < validity_end; }
  // Live and before half its validity.
  bool early(SteadyTime now) const { return live(now) && now < since + (validity_end - since) / 2; }
};

// The moments a timing rule can fire on.
enum class LockEventKind { kAcquireInvoke, kGrant, kExtendInvoke, kRenewed, kReleaseInvoke, kReleased, kLost, kRetired };
constexpr size_t kLockEventKinds = 8;
const char* to_string(LockEventKind k);  // "acquire-invoke", "grant", ...

struct LockEvent {
  uint64_t seq = 0;  // 1, 2, ... over every event of the run
  LockEventKind kind = LockEventKind::kGrant;
  Process process = 0;
  std::string key;
  int64_t time_ns = 0;  // the op's time in the history
  SteadyTime seen{};
};

// The view at one instant.
struct LockSnapshot {
  SteadyTime now{};
  std::vector<ProcessLock> processes;  // every process not free, by process id
  uint64_t seq = 0;                    // events so far (the newest event's seq)
  uint64_t grants = 0;                 // ok acquires so far
  uint64_t extends = 0;                // extend invokes so far (the run renews)
  std::array<std::optional<LockEvent>, kLockEventKinds> last;  // the newest event of each kind

  RunLockState run_state() const;
  const std::optional<LockEvent>& newest(LockEventKind k) const { return last[static_cast<size_t>(k)]; }
  // The newest event of kind k after sequence number `after`, if any.
  std::optional<LockEvent> since(LockEventKind k, uint64_t after) const;
  // The live holding granted last (nullopt when none is live).
  std::optional<ProcessLock> newest_live() const;
};

class LockStateView {
 public:
  // ttl_ms: the run's TTL, the validity of a holding whose client reported none. REQUIRES: ttl_ms > 0.
  explicit LockStateView(int64_t ttl_ms);
  // A view that sees every op history records from now on (the writer keeps it alive; observers stay).
  static std::shared_ptr<LockStateView> attach(HistoryWriter& history, int64_t ttl_ms);

  // Feeds one recorded op, seen now (what attach's observer calls) or at `seen` (tests).
  void on_op(const Op& op);
  void on_op(const Op& op, SteadyTime seen);

  LockSnapshot snapshot() const;
  LockSnapshot snapshot(SteadyTime now) const;

  // Waits until pred holds of a snapshot, at most until deadline and not past *stop (looked at every 10 ms: it
  // is not tied to the condition variable). pred is evaluated under the view's lock (keep it short, do not call
  // the view) on every recorded op and every 10 ms. Returns the snapshot pred held of, or nullopt on deadline or
  // stop.
  std::optional<LockSnapshot> wait_until(const std::function<bool(const LockSnapshot&)>& pred, SteadyTime deadline,
                                         const std::atomic<bool>* stop) const;

 private:
  LockSnapshot snapshot_locked(SteadyTime now) const;  // REQUIRES: mu_ held
  void event(LockEventKind k, const Op& op, SteadyTime seen);  // REQUIRES: mu_ held

  const int64_t ttl_ms_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::map<Process, ProcessLock> procs_;  // not free
  uint64_t seq_ = 0, grants_ = 0, extends_ = 0;
  std::array<std::optional<LockEvent>, kLockEventKinds> last_;
};

}  // namespace lockcheck
