// The live lock holders of a run, for holder targeting (--nemesis-targeting holder): read from the history as
// it is recorded (HistoryWriter::observe), so a fault can be aimed at the client that holds a lock now and at
// the nodes that hold its key.
//
// A process holds key k (in its own belief, the strict view of the mutex checker) from the completion of its
// ok acquire of k until it invokes a release of k, or until it ends an op as info (it is then retired). Its
// holding is over (wait_until_released) when that release has completed, whatever its outcome, or the process
// retired.
// Thread-safety: every method may be called from any thread; on_op runs under the history writer's lock and
// is O(holders).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/history.h"

namespace lockcheck {

struct Holding {
  std::string key;
  Process process = 0;
  int64_t since_ns = 0;                          // time of the ok acquire in the history
  std::chrono::steady_clock::time_point seen;    // when the tracker saw it (the same instant, harness clock)
  uint64_t serial = 0;                           // 1, 2, ...: acquires in the order they were seen
};

class HolderTracker {
 public:
  HolderTracker() = default;
  // A tracker that sees every op history records from now on. The writer keeps the observer (and so the
  // tracker) alive for as long as it lives: observers cannot be removed.
  static std::shared_ptr<HolderTracker> attach(HistoryWriter& history);

  // Feeds one recorded op (what attach's observer calls).
  void on_op(const Op& op);

  // Every current holding, oldest first.
  std::vector<Holding> current() const;
  // The number of ok acquires seen so far (the serial of the newest).
  uint64_t acquires_seen() const;
  // Waits, at most timeout (and not past *stop), for an ok acquire with serial > after_serial that still
  // holds; returns it, or the newest current holding when none came (nullopt when nothing is held).
  std::optional<Holding> wait_for_fresh(uint64_t after_serial, std::chrono::milliseconds timeout,
                                        const std::atomic<bool>* stop) const;
  // Waits, at most timeout (and not past *stop), until holding h is over: its release completed (ok, fail or
  // info) or its process retired. True when it is over, false on timeout or stop. A holding the tracker never
  // saw counts as over.
  bool wait_until_released(const Holding& h, std::chrono::milliseconds timeout, const std::atomic<bool>* stop) const;

 private:
  bool in_force(uint64_t serial) const;  // REQUIRES: mu_ held

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<Holding> holdings_;
  std::vector<Holding> releasing_;  // release invoked, not completed yet
  uint64_t serial_ = 0;
};

// Which data nodes have `key` now: asks each running node directly (its own endpoint, not through the fault
// proxy) with a short timeout; a paused or cut node counts as not holding it. Bounded by about
// nodes * timeout. Returns node indices in order.
std::vector<size_t> nodes_holding(const Cluster& cluster, const std::string& key,
                                  std::chrono::milliseconds timeout = std::chrono::milliseconds(100));

// "c" + p % concurrency: the client slot of process p (its network party).
std::string slot_of(Process p, int concurrency);

}  // namespace lockcheck
