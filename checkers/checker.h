// A checker is a pure, deterministic function of a history: history in, verdict out. It never talks to
// Redis, never reads the clock for its verdict (only to enforce its search budget), and an exception inside
// a checker makes its verdict unknown, never valid (see run_checker).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/op.h"
#include "core/registry.h"

namespace lockcheck {

enum class Validity { kValid, kInvalid, kUnknown };

const char* to_string(Validity v);  // "valid", "invalid", "unknown"
std::optional<Validity> validity_from_string(const std::string& s);
// invalid beats unknown beats valid.
Validity merge(Validity a, Validity b);

struct CheckOptions {
  // Search budget for checkers that search (mutex); past it the verdict is unknown.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  // The run's lock TTL and per-request op timeout (--ttl-ms, --op-timeout-ms), for checkers that judge time
  // bounds (liveness). 0: not given; such a checker then derives what it can from the history and says so.
  int64_t ttl_ms = 0;
  int64_t op_timeout_ms = 0;
  // pair_index(h) of the history being checked, when the caller has it (check_history computes it once for
  // every checker); null: a checker that needs it computes it. Not owned.
  const std::vector<int64_t>* pairs = nullptr;
};

// opts.pairs when it is given for a history of h's size, else pair_index(h) computed into *scratch.
const std::vector<int64_t>& pairs_of(const History& h, const CheckOptions& opts, std::vector<int64_t>* scratch);

// What a checker found. Every anomaly is a JSON object with at least
//   "kind":        short name, e.g. "double-grant", "stale-holder", "lost-update", "token-regression", "expired-grant"
//                  ("severity": "note" marks an anomaly that is listed for the reader but is not a violation)
//   "description": one sentence a reviewer reads ("processes 3 and 7 both held lock-0 for 412 ms from t=12.3 s")
//   "ops":         array of history indices involved (the report shows the operations around them)
// and, where it applies, "key", "processes" (array), "from_ns"/"to_ns" (the time window the report outlines in
// red on the lock timeline), and "at_ns": when the violation happened, where that is later than from_ns (a
// window that begins with an earlier operation it involves: the second acquire that got a duplicate token, the
// acquire or write whose token went back).
struct CheckResult {
  std::string checker;
  Validity valid = Validity::kValid;
  std::string summary;  // one line
  nlohmann::json anomalies = nlohmann::json::array();
  nlohmann::json stats = nlohmann::json::object();
};

// When an anomaly happened (ns since the run started): its "at_ns", else its "from_ns", else (given the history)
// the latest of its ops' times; nullopt when it says none of these. Used for the time to the first anomaly in
// seed searches, matrices, scorecards and `reproduce`.
std::optional<int64_t> anomaly_time_ns(const nlohmann::json& anomaly, const History* h);

// Every violation a results.json records: fn(checker, anomaly) for each anomaly object that is not a note, of
// each checker whose verdict is invalid, in file order (`checker` is that checker's object: name, summary, ...).
// Parts of the wrong JSON type are skipped. The one walk behind the time to the first anomaly (seed searches,
// scorecards, matrices) and `reproduce`'s anomaly kinds.
void for_each_violation(const nlohmann::json& results,
                        const std::function<void(const nlohmann::json& checker, const nlohmann::json& anomaly)>& fn);

void to_json(nlohmann::json& j, const CheckResult& r);
void from_json(const nlohmann::json& j, CheckResult& r);

class Checker {
 public:
  virtual ~Checker() = default;
  virtual std::string name() const = 0;
  // REQUIRES: h is a well-formed history (indices dense, as read_history guarantees).
  virtual CheckResult check(const History& h, const CheckOptions& opts) const = 0;
};

// How many anomalies of one kind a checker lists; the summary says how many there were in all.
constexpr size_t kMaxAnomalies = 1000;

// Runs c on h; an exception becomes an unknown verdict with the message in summary.
CheckResult run_checker(const Checker& c, const History& h, const CheckOptions& opts);

struct CheckerInfo {
  const char* name;
  const char* description;  // one line, for `lockcheck list`
  std::unique_ptr<Checker> (*make)();
};
// The registry (checkers/registry.cc): one line per checker.
const Registry<CheckerInfo>& checker_registry();
// nullptr when unknown.
std::unique_ptr<Checker> make_checker(const std::string& name);

}  // namespace lockcheck
