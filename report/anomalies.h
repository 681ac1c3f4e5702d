// The anomalies of a results.json, read leniently: every field may be missing or of the wrong type, in which
// case it is left empty. Only the report reads them this way; checkers write them (checkers/checker.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/op.h"

namespace lockcheck {
namespace report {

struct Anomaly {
  size_t number = 0;    // 0-based, in the order of checkers then anomalies: the id used across the report
  std::string checker;  // the checker that reported it
  std::string kind;     // "double-grant", ...
  std::string description;
  std::vector<int64_t> ops;  // history indices
  std::string key;
  std::vector<Process> processes;
  std::optional<int64_t> from_ns, to_ns;  // both present, from <= to, or both absent (always absent for a note)
  bool note = false;  // "severity": "note": listed for the reader, not a violation (never outlined in red)
};

// All anomalies of results["checkers"][*]["anomalies"]. Processes may be integers or strings "3" / "p3".
std::vector<Anomaly> anomalies_of(const nlohmann::json& results);

// The sentence a reader sees: the description, or "kind (checker)" when there is none; a note says it is one.
std::string sentence_of(const Anomaly& a);

}  // namespace report
}  // namespace lockcheck
