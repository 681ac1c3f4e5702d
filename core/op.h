// The operation model of a history, as in Jepsen: every client call is recorded twice, once when it is
// invoked and once when it completes as ok (it happened), fail (it certainly did not happen) or info (unknown:
// a timeout, a closed connection; it may have happened at any time after its invoke, or never).
// The nemesis records its faults as ops too, with process kNemesis.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/atom.h"
#include "core/optional_int.h"

namespace lockcheck {

enum class OpType { kInvoke, kOk, kFail, kInfo };

// "invoke", "ok", "fail", "info".
const char* to_string(OpType t);
// The type named s (one of the names above); std::nullopt for anything else.
std::optional<OpType> op_type_from_string(std::string_view s);

// Process ids of clients are >= 0; the nemesis is kNemesis (written as "nemesis" in JSON).
using Process = int;
constexpr Process kNemesis = -1;

// The one name of a process wherever a person reads it (console, report, run log, fault targets, the external
// client's clients/pN.stderr): "p3"; the nemesis is "nemesis". (history.jsonl keeps the number: "process":3.)
// A client *slot* ("c0" .. "c(concurrency-1)", core/party.h) is another thing: the network party a process runs
// as; process p runs in slot p % concurrency, and a slot's next process takes over after a retirement.
std::string process_name(Process p);

struct Op {
  int64_t index = -1;   // position in the history, assigned by the writer, 0-based, dense
  int64_t time_ns = 0;  // harness monotonic clock, ns since the run started
  Process process = 0;
  OpType type = OpType::kInvoke;
  Atom f;                   // "acquire", "release", "extend", "read", "add", ...; nemesis: "partition", ...
  Atom key;                 // the lock key (or resource key); empty when not applicable
  nlohmann::json value;     // payload: null, an element, a set, a nemesis description ...
  OptionalInt token;        // fencing token handed out by an acquire (or carried by a write)
  OptionalInt validity_ms;  // validity the lock client reported for a successful acquire/extend
  Atom error;               // why an op failed or is indeterminate; empty otherwise

  bool is_invoke() const { return type == OpType::kInvoke; }
  bool is_ok() const { return type == OpType::kOk; }
  bool is_fail() const { return type == OpType::kFail; }
  bool is_info() const { return type == OpType::kInfo; }
  bool is_client() const { return process >= 0; }
  // A loss notice (see kLostF): a single op, neither an invoke nor the completion of one.
  bool is_notice() const;
};

// A million-op history is two million of these: they are kept small (f, key and error interned, the optional
// numbers in 8 bytes each).
static_assert(sizeof(Op) <= 80, "an Op is 80 bytes");

using History = std::vector<Op>;

// The f of a loss notice: a client process's lock library told its caller that the lock on `key` is gone (an
// external client's "lost" event, locks/README-external.md), at the op's time, in its own words in
// value.detail. Written as ONE op of type info: {"process":3,"type":"info","f":"lost","key":"lock-0",
// "value":{"detail":"..."}}. It opens and closes nothing (pair_index leaves it unpaired; it may come while the
// process has an op open), says nothing about whether an op happened, and only the loss-notice checker reads it.
constexpr const char* kLostF = "lost";
const Atom& lost_f();  // kLostF interned
inline bool Op::is_notice() const { return type == OpType::kInfo && process >= 0 && f == lost_f(); }

// One line of history.jsonl, e.g.
// {"index":13,"time":1835100456,"process":3,"type":"ok","f":"acquire","key":"lock-0","value":null,"token":41}
// Absent optional fields are omitted; "error" only when non-empty.
void to_json(nlohmann::json& j, const Op& op);
// The same as one line of text, fields in the order above (no newline).
std::string to_jsonl(const Op& op);
// Throws std::invalid_argument naming the offending field when the object is not a valid op.
void from_json(const nlohmann::json& j, Op& op);

// For each op, the index (in the history vector) of its pair: the completion of an invoke, or the invoke of a
// completion; -1 for an invoke that never completed (a crashed client) or an unpaired completion.
// Pairs are matched per process in order, as in Jepsen. Nemesis ops are paired the same way.
std::vector<int64_t> pair_index(const History& h);

// A pass over the ops that looks at each op's pair (h[pairs[i]]) reads a line of memory some way ahead of (or
// behind) the one it streams through, which the hardware does not fetch early: a stall of a memory latency per
// op on a history larger than the caches. Such a pass calls this for each i: it asks for the pair of the op
// kPairAhead positions on, so that it is in the cache by the time the pass gets there (16 was too short on this
// project's machines; 64 took a tenth off lease and liveness).
constexpr size_t kPairAhead = 64;
inline void prefetch_pair(const History& h, const std::vector<int64_t>& pairs, size_t i) {
  if (i + kPairAhead < pairs.size()) {
    const int64_t p = pairs[i + kPairAhead];
    if (p >= 0) __builtin_prefetch(&h[static_cast<size_t>(p)]);
  }
}

}  // namespace lockcheck
