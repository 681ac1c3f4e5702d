// What the report draws, extracted from a history: lock holds (with their lease windows), fault periods,
// acquire latencies and lost updates. Pure functions of a History; no I/O. Times are the history's
// (ns since the run started).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/op.h"

namespace lockcheck {
namespace report {

enum class HoldKind {
  kHeld,           // an ok acquire: the process held the key
  kIndeterminate,  // an info acquire: it may have held the key (drawn hatched)
};

// One period in which a process held (or may have held) a lock key.
struct Hold {
  Process process = 0;
  Atom key;
  HoldKind kind = HoldKind::kHeld;
  int64_t invoke_ns = 0;  // the acquire's invoke
  int64_t from_ns = 0;    // the acquire's completion (kIndeterminate: its invoke)
  int64_t to_ns = 0;      // the process's next release invoke on the key, or the end (see open)
  bool open = false;      // true when no release followed: to_ns is the end of the history (or of the TTL)
  // The acquire's ok + its validity_ms, moved by ok extends (their ok + validity_ms), as the lease checker counts
  // it; absent when the client reported no validity.
  std::optional<int64_t> lease_end_ns;
  std::optional<int64_t> token;
  int64_t acquire_index = -1;  // history index of the acquire's completion
  // When the process's lock library told it the lock was lost (its first loss notice for the key at or after this
  // acquire and before its next acquire of the key: core/op.h kLostF, as the loss-notice checker matches them);
  // absent when none came (or the client does not report losses).
  std::optional<int64_t> loss_notice_ns;
};

struct HoldOptions {
  // How long an indeterminate acquire is drawn from its invoke; absent: to the end of the history.
  std::optional<int64_t> ttl_ms;
};

// Every hold in the history, ordered by from_ns. Ops of f acquire/release/extend of client processes are used;
// anything else is ignored.
std::vector<Hold> lock_holds(const History& h, const HoldOptions& opts = {});
// The same with pair_index(h) and history_end_ns(h) given (a report computes them once).
std::vector<Hold> lock_holds(const History& h, const HoldOptions& opts, const std::vector<int64_t>& pairs,
                             int64_t end_ns);

// A period during which a fault was in force: from a nemesis start op's completion (ok or info) to the
// completion of the next stop of the same fault, or the end of the history (healed == false).
struct FaultBand {
  std::string fault;                 // "partition", "pause", ...
  std::vector<std::string> targets;  // "n1", "p3", ...
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  bool healed = true;
  std::string detail;  // compact JSON of the start's "detail", may be empty
  int64_t start_index = -1;
  std::string words;   // what the label adds for a reader, e.g. a drifting clock's rate: "runs 5% fast"
  // A client fault (client-pause, client-crash) is armed for client slots ("c0".."c4") and taken by one process:
  // the stop's detail names it ("paused" / "crashed": process, slot, ...). Then targets are those processes
  // (process_name: "p7"), words say what happened to each, and each has a mark: its pause (from its ok acquire,
  // the pause point, for as long as the pause lasted) or its crash (the crashed op's completion).
  struct ClientMark {
    Process process = 0;
    int slot = -1;       // its client slot (c<slot>), -1 when not recorded
    int64_t from_ns = 0;
    int64_t to_ns = 0;
    std::string words;   // "p7 (slot c2) paused 2.00 s", "p7 (slot c2) crashed after-acquire"
  };
  std::vector<ClientMark> clients;
};

// Fault bands ordered by from_ns. Nemesis values that are not objects with "fault" and "phase" are ignored.
std::vector<FaultBand> fault_bands(const History& h);
std::vector<FaultBand> fault_bands(const History& h, const std::vector<int64_t>& pairs, int64_t end_ns);

struct LatencyPoint {
  int64_t invoke_ns = 0;
  int64_t latency_ns = 0;
  OpType outcome = OpType::kOk;  // kOk, kFail or kInfo
};

// One point per completed acquire of a client process, in history order.
std::vector<LatencyPoint> acquire_latencies(const History& h);
std::vector<LatencyPoint> acquire_latencies(const History& h, const std::vector<int64_t>& pairs);

// Lost updates of the set workloads: ok adds whose element is missing from the final read of their key (the last
// ok read of that key whose value is an array of integers; the workloads keep one set per lock key, e.g.
// "resource:lock-0"). Adds that completed after that final read was invoked are concurrent with it, and adds on
// a key without a final read cannot be judged: neither is counted.
struct LostUpdates {
  bool has_final_read = false;              // at least one key has a final read
  std::vector<int64_t> final_read_indices;  // history indices of the final reads, ascending
  int64_t acknowledged = 0;                 // judged ok adds
  int64_t unjudged = 0;                     // ok adds not judged (concurrent with the final read, or no final read)
  std::vector<int64_t> lost_completion_ns;  // completion times of the lost adds, ascending
  std::vector<int64_t> lost_elements;       // in the same order
};
LostUpdates lost_updates(const History& h);
LostUpdates lost_updates(const History& h, const std::vector<int64_t>& pairs);

// True when the history has any add op (a set workload).
bool has_set_ops(const History& h);

// The time of the last op (0 for an empty history).
int64_t history_end_ns(const History& h);

}  // namespace report
}  // namespace lockcheck
