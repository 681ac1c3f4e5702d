// The nemesis schedule of a run, generated from the seed as data before the run starts: same config and seed,
// same schedule (written into the run folder as schedule.json).
//
// Generation. Each nemesis of --nemesis k (in the order given) draws from its own stream,
// std::mt19937_64(derive_seed(seed, kNemesisStream + k)), so adding a nemesis to the list does not change the
// faults of the others. Its timeline: the first fault starts at interval/2 + a random phase in [0, interval);
// each fault's stop follows after the plan's duration (the interval; kill: --restart-delay-ms; see each
// nemesis); the next fault starts one interval after that stop. Entries at or past the time limit are dropped:
// the driver heals whatever is still in force when the run ends. Timelines of different nemeses overlap, so
// faults combine (a partition during a clock jump). The merged list is sorted by time, ties in list order.
// With --nemesis-timing lock-state each nemesis's timeline is then slid earlier by its phase (the same faults,
// as many, the same spacing; its first window opens when the workload starts): the planned time is where a
// fault's window opens, and the fault waits in it for its moment (nemesis/timing.h).
//
// schedule.json:
//   {"seed": 42, "targeting": "random", "timing": "random", "interval_s": 5, "time_limit_s": 30,
//    "nemesis": ["partition", "clock"],
//    "plan": [{"step": 0, "at_ms": 3120, "nemesis": "partition", "phase": "start", "f": "partition",
//              "targets": ["c1","n4","n5"], "detail": {"mode": "client-cut", "links": [["c1","n4"],...]}},
//             {"step": 1, "at_ms": 8120, "nemesis": "partition", "phase": "stop", "f": "heal", "start_step": 0}, ...],
//    "executed": [{"step": 0, "at_ms": 3121, "phase": "start", "f": "partition", "targets": [...],
//                  "outcome": "ok", "timing": "random", "lock_state": "held-early"}, ...]}
// "plan" depends only on the config and the seed. "executed" (added when the run ends) is what the driver did
// and when: with --nemesis-targeting holder the targets are chosen from the live history just before each
// fault, so they are recorded there (and in the history's nemesis ops); the plan's targets are the random
// fallback used when nothing is held.
//
// Timing ("timing": --nemesis-timing, nemesis/timing.h). With "random" each start is applied at its planned
// at_ms; with "lock-state" at_ms opens a window (at most one interval) in which the driver waits for the moment
// its nemesis's rule names, so the actual offset is later; each stop follows its start's actual offset by the
// planned duration, and the next start is never moved earlier. Every "executed" start entry records, beside the
// actual at_ms, "timing" ("random" | "lock-state"), "lock_state" (the run-wide lock state the fault met:
// free, acquiring, held-early, held-late, renewing, releasing) and, when lock-state timing fell back to a time,
// "timing_fallback" (why, in words); the start op's detail in the history holds the same three.
// A replay (`run --schedule`, rerun, reproduce) of a lock-state file applies each fault at the offset it fired
// at (schedule_from_json below), as random timing: the same faults at the same offsets.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "nemesis/nemesis.h"

namespace lockcheck {

// First derive_seed stream of the nemeses (clients use small streams: process ids and 1000 + process id).
constexpr uint64_t kNemesisStream = uint64_t{1} << 40;

enum class Phase { kStart, kStop };
const char* to_string(Phase p);  // "start", "stop"

struct ScheduleEntry {
  int64_t step = 0;          // index in the plan
  int64_t at_ms = 0;         // offset from the start of the workload
  size_t nemesis = 0;        // index in the run's nemesis list
  std::string nemesis_name;  // as given to --nemesis (may be "name:mode")
  Phase phase = Phase::kStart;
  FaultPlan fault;          // start: f, targets, detail, duration; stop: f only (stop_f of its start)
  int64_t start_step = -1;  // stop: the step of its start
};

struct Schedule {
  uint64_t seed = 0;
  std::string targeting = "random";
  std::string timing = "random";  // --nemesis-timing: random, lock-state (nemesis/timing.h)
  // Set by schedule_from_json for a lock-state run's file: plan holds the offsets its faults fired at, replayed
  // at those offsets without holder targeting's wait for a fresh acquire (the original waited in its window).
  bool fired_offsets = false;
  double interval_s = 0;
  double time_limit_s = 0;
  std::vector<std::string> nemesis;
  std::vector<ScheduleEntry> plan;
};

// Plans the schedule of cfg's nemeses, one Nemesis object per name in cfg.nemesis (same order).
// REQUIRES: nemeses.size() == cfg.nemesis.size(), none null.
Schedule make_schedule(const RunConfig& cfg, const PlanContext& ctx,
                       const std::vector<std::unique_ptr<Nemesis>>& nemeses);

// {"step", "at_ms", "nemesis", "phase", "f", "targets", "detail", "duration_ms", "stop_f"} (start) /
// {..., "start_step"} (stop).
nlohmann::json to_json(const ScheduleEntry& e);
// The schedule.json object without "executed".
nlohmann::json to_json(const Schedule& s);

// Replay (`lockcheck run --schedule FILE`, `lockcheck reproduce`): a stored schedule.json read back. Only
// "plan" is replayed ("executed" is ignored, but see lock-state timing below); entries are put in time order and renumbered 0..n-1 (a stop's
// start_step follows its start), so a schedule with faults removed by hand still reads. A start whose stop_f is
// not in the file (written before stop_f was, and its stop past the time limit) gets it from its nemesis at
// replay (NemesisDriver). Throws ConfigError naming `source` and the step or field on a malformed file.
// A file whose "timing" is "lock-state" replays the faults at the offsets they actually fired: each start of
// "plan" that has an "executed" start entry takes that entry's at_ms, its stop follows by its duration_ms, and a
// start that never fired (the run ended first) is dropped with its stop; the result has timing "random" and
// fired_offsets set (the driver then applies each at its offset, as random timing, and holder targeting aims
// without waiting for a fresh acquire). A file without "executed" (a run that never finished) keeps its plan.
Schedule schedule_from_json(const nlohmann::json& j, const std::string& source);
// Reads and parses a schedule.json file (ConfigError naming the file when it cannot be read).
Schedule read_schedule_file(const std::string& path);

// Why a fault's detail cannot be applied by n (a field of the wrong type), or "" when it can.
std::string fault_detail_error(const Nemesis& n, const nlohmann::json& detail);
// Checks that every nemesis the schedule names is in the run's nemesis list, and that every fault's detail has
// the types its nemesis reads (DetailField): ConfigError naming `flag`, the step and the field.
void check_schedule_nemeses(const Schedule& s, const std::vector<std::string>& run_nemesis, const std::string& flag);

// The faults of a schedule: the indices of its start entries, in time order.
std::vector<size_t> schedule_faults(const Schedule& s);
// s without the fault whose start entry is plan[start_index] (its stop goes too); renumbered.
Schedule without_fault(const Schedule& s, size_t start_index);
// s keeping only the entries before limit_ms (a fault started before it and stopped after is healed by the
// driver when the run ends); time_limit_s set to limit_ms; renumbered.
Schedule cut_schedule(const Schedule& s, int64_t limit_ms);
// s with every entry by_ms earlier (negative: later), their spacing kept: the faults slide together.
// REQUIRES: by_ms <= the earliest entry's at_ms (nothing moves before the start).
Schedule slid_schedule(const Schedule& s, int64_t by_ms);

}  // namespace lockcheck
