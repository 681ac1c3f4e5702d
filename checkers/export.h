// History exporters for other checkers.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/op.h"

namespace lockcheck {

// Jepsen's EDN op form (for Knossos / Elle), one op map per line, in history order, e.g.
//   {:type :invoke, :f :acquire, :process 3, :time 1834000123, :index 12, :key "lock-0", :value nil}
// then, when present, :token 41, :validity-ms 5000, :error "timeout". The nemesis process is :nemesis. f is a
// keyword when it is a valid EDN keyword name, else a string. value (JSON) becomes EDN: null -> nil, arrays ->
// vectors, objects -> maps with keyword keys (string keys when not valid keyword names), strings quoted.
std::string export_edn(const History& h);

// Porcupine's operation form: an array with one object per client operation (nemesis ops are left out), in
// order of invocation:
//   {"client_id":3,"input":{"f":"acquire","key":"lock-0"},"call":<invoke time ns>,
//    "output":{"type":"ok","token":41},"return":<completion time ns>}
// input carries value and token when the invoke has them; output carries type and, when present, value, token,
// validity_ms, error. info and never-completed ops get type "info" and a return time after the last event of
// the history (Porcupine's convention for indeterminate ops). Completions with no invoke are left out.
nlohmann::json export_porcupine(const History& h);

}  // namespace lockcheck
