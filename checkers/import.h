// Readers for the histories other tools write, the formats `lockcheck export` writes (checkers/export.h), so
// that users of Jepsen/Knossos or Porcupine can run this project's checkers on their lock histories:
// `lockcheck check --format edn|porcupine FILE`.
#pragma once

#include <string>

#include "core/history.h"

namespace lockcheck {

// Jepsen's EDN ops: a sequence of op maps (one per line, as export_edn writes, or inside one top-level vector),
// e.g. {:type :ok, :f :acquire, :process 3, :time 1834000123, :index 12, :key "lock-0", :value nil, :token 41}.
// Keywords become strings, nil null, vectors, lists and sets arrays, maps objects. :process is an integer or
// :nemesis; :time (ns) and :index are optional (default: the op's position). :validity-ms, :token, :error as in
// history.jsonl. The result obeys validate_history. Throws HistoryError("NAME:LINE: reason").
History import_edn(const std::string& text, const std::string& name);

// Porcupine operations (a JSON array of {"client_id", "input", "call", "output", "return"}, as export_porcupine
// writes): each becomes an invoke at call and a completion at return, with f and key from input, and type,
// token, validity_ms, value and error from output (type defaults to ok). Entries are ordered by time, returns
// before calls at equal times. An info op (Porcupine: indeterminate, returning after the end) is completed as
// info just before its client's next call, or at its return time when the client has none. Throws HistoryError.
History import_porcupine(const std::string& text, const std::string& name);

}  // namespace lockcheck
