// Fault timing coverage: which lock state each fault met (results.json's "coverage", docs/results.md).
// With --nemesis-timing the nemesis records in every start op's value.detail
//   "timing": "random" | "lock-state", optionally "timing_fallback": "<why>", and
//   "lock_state": "free" | "acquiring" | "held-early" | "held-late" | "renewing" | "releasing"
// (the lock state the fault met). A missing or unrecognised field counts as "unknown", so older runs still read.
// Pure: no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/op.h"

namespace lockcheck {

// The lock states a fault can meet, in the order of a lock's life; "unknown" is not one of them.
const std::vector<std::string>& lock_states();

struct FaultCoverage {
  // fault name (value.fault) -> lock state (one of lock_states(), or "unknown") -> faults that met it
  std::map<std::string, std::map<std::string, int64_t>> grid;
  std::map<std::string, int64_t> timing;  // "random", "lock-state" or "unknown" -> faults
  int64_t fallbacks = 0;                  // faults whose detail has a timing_fallback
  int64_t faults = 0;

  // Per fault with at least one known lock state: the states of lock_states() it never met, in that order.
  // A fault whose every start is "unknown" (a run from before the field) is left out: nothing was measured.
  std::map<std::string, std::vector<std::string>> never_met() const;
  // Adds another run's (a matrix entry or a whole matrix sums its runs).
  void add(const FaultCoverage& o);
};

// The faults of h (checkers/first_anomaly.h fault_starts).
FaultCoverage fault_coverage(const History& h);
FaultCoverage fault_coverage(const History& h, const std::vector<int64_t>& pairs);

// {"faults": n, "grid": {fault: {state: count}}, "never_met": {fault: [states]}, "timing": {value: count},
//  "fallbacks": n}
nlohmann::json to_json(const FaultCoverage& c);
// The same read back leniently (a missing or mistyped part counts as empty); never_met is recomputed.
FaultCoverage coverage_from_json(const nlohmann::json& j);

}  // namespace lockcheck
