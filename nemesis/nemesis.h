// Fault injection, as in Jepsen's nemesis protocol: setup, invoke (apply a fault or heal), teardown (undo
// every fault still in force; must run at the end of every run, also on error, SIGINT and SIGTERM).
// Every fault and heal is recorded in the history as an op of process kNemesis (invoke, then ok or info)
// whose value says what was done to which node, in this shape (the report and the checkers rely on it):
//   {"fault": "partition", "phase": "start", "targets": ["n1","n2"], "detail": {...}}
//   {"fault": "partition", "phase": "stop",  "targets": ["n1","n2"]}
// fault: partition, delay, pause, kill, clock, client-pause, failover, ...; phase "start" applies a fault,
// "stop" heals it (a fault period for the report runs from a start's completion to the next stop of the same
// fault); targets: node names ("n1"), client slots ("c2") or client processes ("p3"). The op's f names the action
// itself ("partition", "heal", "pause", "resume", "kill", "restart", "clock-bump", "clock-reset", ...).
// detail always holds "step", the index of the fault in the run's schedule (schedule.json) when the driver
// applied it; a start's detail also holds "timing" ("random" or "lock-state"), "lock_state" (the run-wide lock
// state the fault met when it was applied: free, acquiring, held-early, held-late, renewing, releasing;
// nemesis/lock_state.h) and, when lock-state timing fell back to a planned time, "timing_fallback" (why, in
// words); with lock-state also "timing_rule" (the rule's name, nemesis/timing.h) and, when the rule matched,
// "timing_moment" (what it fired on, e.g. "an acquire's ok (p3, lock-0)"). The faults: nemesis/partition.cc, delay.cc, pause.cc, kill.cc, clock.cc, client_pause.cc, failover.cc;
// the schedule: nemesis/schedule.h; the thread that applies it: nemesis/driver.h.
#pragma once

#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/config.h"
#include "core/history.h"
#include "core/registry.h"
#include "nemesis/timing.h"

namespace lockcheck {

class ClientPauses;
class HolderTracker;
class LinkFaults;

// What a nemesis is told of the run when it applies faults: its own options, not the whole RunConfig.
struct NemesisOptions {
  int concurrency = 5;    // client slots c0 .. c(concurrency-1)
  int64_t ttl_ms = 1000;  // the lock's TTL (pauses and clock jumps are sized from it)
  int64_t interval_ms = 5000;    // between a fault and its heal
  int64_t restart_delay_ms = 0;  // how long a killed node stays down
  int64_t drift_ppm = 0;         // clock:drift's rate (0: drawn per fault)
  int64_t delay_ms = 0;          // delay's latency (0: drawn per fault)
  int64_t pause_ms = -1;         // client-pause's length (-1: 2 x TTL)
  int64_t hold_ms_max = 800;     // the workload's longest hold (a holder's release is awaited)
  int64_t op_timeout_ms = 500;   // the clients' per-request timeout
  static NemesisOptions from(const RunConfig& c);
};

struct NemesisEnv {
  NemesisOptions options;
  Cluster& cluster;
  HistoryWriter& history;
  // Optional collaborators (all owned by the caller, outliving the env; the run's NemesisDriver sets them all):
  ClientPauses* client_pauses = nullptr;        // where client-pause arms its pauses; null: client-pause answers info
  HolderTracker* holders = nullptr;             // the live lock holders (holder targeting); null: aim keeps the plan
  LinkFaults* links = nullptr;                  // network faults shared by every nemesis; null: each keeps its own
  const std::atomic<bool>* stopping = nullptr;  // set when the run ends: long waits inside invoke return early
};

// What the schedule generator knows of a run when it plans faults: names only, no live state.
struct PlanContext {
  std::vector<std::string> nodes;      // data nodes "n1", "n2", ...
  std::vector<std::string> sentinels;  // "s1", ... (the members beside the nodes: Redis' Sentinels), else empty
  std::vector<std::string> slots;      // client slots "c0", "c1", ...
  int64_t ttl_ms = 1000;
  int64_t interval_ms = 5000;
  int64_t restart_delay_ms = 0;
  int64_t drift_ppm = 0;    // clock:drift's rate (0: drawn per fault)
  int64_t delay_ms = 0;     // delay's latency (0: drawn per fault)
  int64_t pause_ms = -1;    // client-pause's length (-1: 2 x TTL)
  static PlanContext from(const NemesisOptions& o, const std::vector<std::string>& node_names,
                          const std::vector<std::string>& sentinel_names);
  static PlanContext from(const RunConfig& c, const std::vector<std::string>& node_names,
                          const std::vector<std::string>& sentinel_names) {
    return from(NemesisOptions::from(c), node_names, sentinel_names);
  }
};

// One planned fault: the start op's f, targets and detail, how long until its stop, and the stop op's f.
struct FaultPlan {
  std::string f;                                     // e.g. "partition", "kill", "clock-bump"
  nlohmann::json targets = nlohmann::json::array();  // node names, client slots ("c2") or processes ("p7")
  nlohmann::json detail = nlohmann::json::object();  // everything invoke needs to apply it (mode, links ...)
  int64_t duration_ms = 0;                           // from the start to the stop op
  std::string stop_f;                                // e.g. "heal", "restart", "clock-reset"
};

// A field of a fault's detail that its nemesis reads when it applies (or aims) the fault, and the JSON type it
// must have. A schedule.json replayed with --schedule (rerun, reproduce; a user may edit one) is checked against
// them before the run starts (check_schedule_nemeses): a wrong type is exit 2 naming the step and the field, not a
// fault that fails, or applies another value, in the middle of the run. The fields any fault may carry (mode,
// step, aimed, not_aimed_because, aimed_at) are checked for every nemesis; fields only recorded (what a fault did)
// need no entry.
enum class DetailType {
  kInteger,      // an integer in int64 range
  kNonNegative,  // an integer >= 0 (a duration in ms)
  kString,
  kBool,
  kLinks,        // an array of [from, to] pairs of names
  kStrings,      // an array of names
};
struct DetailField {
  const char* name;
  DetailType type;
};

class Nemesis {
 public:
  virtual ~Nemesis() = default;
  virtual std::string name() const = 0;
  virtual void setup(NemesisEnv& env) { (void)env; }
  // Applies op (an invoke of process kNemesis whose value has this nemesis's "fault" name; phase "start"
  // applies value.detail to value.targets, phase "stop" undoes every fault of this nemesis still in force);
  // returns its completion (ok, or info when it may have been applied only in part), whose value says what was
  // done. Throws only for a malformed op; the driver records an exception as info.
  virtual Op invoke(NemesisEnv& env, const Op& op) = 0;
  // Undoes every fault still in force. Never throws.
  virtual void teardown(NemesisEnv& env) noexcept = 0;

  // Draws one fault from rng (the schedule generator; random targeting). Pure: same rng state, same plan.
  virtual FaultPlan plan(const PlanContext& ctx, std::mt19937_64& rng) const = 0;
  // Holder targeting: re-aims plan at what the live run has in a held lock (the holder's client, the nodes
  // that hold its key), just before the fault is applied. Bounded: short Redis reads, or a wait for the
  // holder's release where the fault's timing depends on it (failover on Redis Cluster, at most a hold plus
  // two op timeouts); the default keeps the plan.
  virtual void aim(NemesisEnv& env, FaultPlan& plan) const { (void)env, (void)plan; }
  // Lock-state timing (--nemesis-timing lock-state, nemesis/timing.h): the moment of a lock's life at which the
  // fault plan (as drawn: its mode is in plan.detail) matters. Declarative and pure; the driver waits for it. The
  // default, kRandom, keeps the planned time (the results say so).
  virtual TimingRule timing_rule(const FaultPlan& plan) const {
    (void)plan;
    return {};
  }
  // The detail fields invoke and aim read, beyond the common ones (see DetailField).
  virtual std::vector<DetailField> detail_fields() const { return {}; }
  // The run settings (config.json keys) its faults read beyond the interval and targeting, as this nemesis is
  // selected (its mode): the report shows a setting only when a nemesis of the run reads it (harness/plan.h).
  virtual std::vector<std::string> run_settings() const { return {}; }
  // The abilities of the cluster it needs (core/cluster.h), with its mode as selected (select_mode; none: every
  // mode it draws from) and the run's targeting (holder: aimed at the nodes that hold the current lock). The plan
  // refuses a run whose server and backend lack one, before anything starts (harness/plan.h); nothing below the
  // nemesis floor names a fault.
  virtual std::vector<Ability> needs(bool holder_targeting) const = 0;
  // Restricts plan() to one of this nemesis's modes ("partition:client-split"). False for an unknown mode.
  virtual bool select_mode(const std::string& mode) {
    (void)mode;
    return false;
  }
};

struct NemesisInfo {
  const char* name;
  const char* description;
  std::unique_ptr<Nemesis> (*make)();
};
// The registry (nemesis/registry.cc): one line per nemesis. "none" is not in it: it means an empty list.
const Registry<NemesisInfo>& nemesis_registry();
// name is a registry name or "name:mode" (a nemesis restricted to one mode). nullptr when unknown.
std::unique_ptr<Nemesis> make_nemesis(const std::string& name);

}  // namespace lockcheck
