// The live lock holders of a run, for holder targeting (--nemesis-targeting holder): read from the history as
// it is recorded (HistoryWriter::observe), so a fault can be aimed at the client that holds a lock now and at
// the nodes that hold its key.
//
// A process holds key k (in its own belief, the strict view of the mutex checker) from the completion of its
// ok acquire of k until it invokes a release of k, or until it ends an op as info (it is then retired). Its
// holding is over (wait_until_released) when that release has completed, whatever its outcome, or the process
// retired.
// Thread-safety: every method may be called from any thread; on_op runs under the history writer's lock and
// is O(holders), plus the action on_release registered for a holding whose release it records.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/history.h"

namespace lockcheck {

struct Holding {
  std::string key;
  Process process = 0;
  int64_t since_ns = 0;                        // time of the ok acquire in the history
  std::chrono::steady_clock::time_point seen;  // when the tracker saw it (the same instant, harness clock)
  uint64_t serial = 0;                         // 1, 2, ...: acquires in the order they were seen
  // The Redis keys the client reported for its last ok acquire or extend of this holding (an external client's
  // protocol-2 "keys", in the completion's value); empty when it reported none.
  std::vector<std::string> keys;
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

  // Runs fn once, in the thread that records the op ending holding h (its release's completion, ok, fail or
  // info, or an info that retires its process), inside that record: under the history writer's lock. Until fn
  // returns no other op is recorded, and since every client records its invoke before it sends the command,
  // no client sends a new command either: a fault fn applies lands between h's release and the next client's
  // command (only a command already sent can slip in). wait_until_released(h) returns true only after fn has
  // returned. Replaces an earlier action for h; false (fn not kept) when h is already over. fn must not call
  // into the tracker or record an op, and should be quick (it holds up every client); what it throws is
  // swallowed.
  bool on_release(const Holding& h, std::function<void()> fn);
  // Drops h's action if it has not started; waits (at most 30 s) for it if it is running. True when it ran. An
  // action may capture by reference only what outlives the run.
  bool cancel_on_release(const Holding& h);

 private:
  bool in_force(uint64_t serial) const;  // REQUIRES: mu_ held

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<Holding> holdings_;
  std::vector<Holding> releasing_;                     // release invoked, not completed yet
  std::map<uint64_t, std::function<void()>> actions_;  // on_release, by serial, not started
  std::set<uint64_t> running_, ran_;                   // actions started and not returned; returned
  uint64_t serial_ = 0;
};

// Which data nodes have any of keys now (ability kKeyHolders: Cluster::key_holders(), asked of each running node
// with a short timeout; a paused or cut node counts as not holding it). Node indices in order; none for a cluster
// without the ability (the plan refuses holder targeting of node faults there).
std::vector<size_t> nodes_holding_any(const Cluster& cluster, const std::vector<std::string>& keys,
                                      std::chrono::milliseconds timeout = std::chrono::milliseconds(100));

// Where a holder's lock lives, and how that was found out: by the keys its client reported (protocol 2), else by
// the request's key (lockcheck's own locks name their key on the server after it).
struct HolderNodes {
  std::vector<size_t> nodes;      // node indices, in order; empty: none found
  std::string how;                // "keys reported by the client" or "the request's key"
  std::vector<std::string> keys;  // the Redis keys looked for
  // Why nothing was found (empty when nodes is not): says which keys were looked for and how.
  std::string why_none() const;
  // {"how": ..., "keys": [...], "found": ["n1", ...]}, for a fault's detail ("holder_nodes").
  nlohmann::json to_json(const Cluster& cluster) const;
};
HolderNodes find_holder_nodes(const Cluster& cluster, const Holding& h,
                              std::chrono::milliseconds timeout = std::chrono::milliseconds(100));

// Marks plan detail as not aimed at the holder: "aimed": false and "not_aimed_because": why. The driver keeps
// it (a plan an aim left unmarked counts as aimed).
void mark_not_aimed(nlohmann::json& detail, const std::string& why);

// "c" + p % concurrency: the client slot of process p (its network party).
std::string slot_of(Process p, int concurrency);

}  // namespace lockcheck
