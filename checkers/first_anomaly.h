// The time to the first anomaly and the fault that came before it: results.json's "first_anomaly"
// (docs/results.md). Pure functions of a results.json and its history; no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/op.h"

namespace lockcheck {

// One fault the nemesis applied: a nemesis start op whose completion is ok or info (a fail did not happen), as
// nemesis/nemesis.h records it. The detail is the completion's "detail" over its invoke's (the driver copies
// only "step" to the completion; a nemesis may add fields on either).
struct FaultStart {
  std::optional<int64_t> step;        // detail.step: the fault's index in schedule.json
  std::string fault;                  // value.fault: "partition", "client-pause", ...
  std::string f;                      // the op's f: "partition", "pause", ...
  std::vector<std::string> targets;   // value.targets; for a client fault, the processes its stop names as hit
  std::vector<std::string> armed;     // a client fault's value.targets (the slots armed) when its stop named hits
  int64_t start_ns = 0;               // the start's completion
  std::optional<int64_t> healed_ns;   // the completion of the stop that healed it; absent: never healed
  nlohmann::json detail = nlohmann::json::object();
  int64_t index = -1;                 // history index of the start's completion
};

// Every fault of h, in history order. A stop heals the start whose step is its detail.start_step; a stop
// without start_step heals every open start of the same fault (as the report's fault bands do).
std::vector<FaultStart> fault_starts(const History& h);
std::vector<FaultStart> fault_starts(const History& h, const std::vector<int64_t>& pairs);

// results.json's "first_anomaly": null when the run found no violation; else
//   {"at_s": 12.345 (null when no violation says when), "at_ns": ..., "checker": "mutex", "kind": "double-grant",
//    "description": "...", "summary": "<the checker's summary>",
//    "fault_before": null | {"step": 3, "fault": "client-pause", "f": "pause", "targets": ["p2"],
//                            "armed": ["c0", "c1"] (null unless a client fault's stop named the processes hit),
//                            "start_s": 10.2, "in_force": true, "healed_s": null, "healed_before_s": null,
//                            "timing": "lock-state", "lock_state": "held-late"}}
// The first anomaly is the earliest violation (for_each_violation; time by anomaly_time_ns with h; ties: file
// order); with no timed violation, the first in file order; with no violation listed but an invalid checker,
// that checker (kind null). fault_before is the latest fault whose start completed at or before at_ns (ties: the
// later in history); in_force when it was not healed by at_ns; timing and lock_state only when its detail has
// them (as strings).
nlohmann::json first_anomaly(const nlohmann::json& results, const History& h);
nlohmann::json first_anomaly(const nlohmann::json& results, const History& h, const std::vector<int64_t>& pairs);

}  // namespace lockcheck
