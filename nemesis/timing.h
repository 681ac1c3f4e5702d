// Fault timing (--nemesis-timing random|lock-state). Random timing applies each fault at its planned time
// (nemesis/schedule.h). Lock-state timing lets each planned start open a window at its planned time; the driver
// (nemesis/driver.h) waits in it for the moment its nemesis's rule names (Nemesis::timing_rule: one declarative
// value per fault, in that nemesis's own file), read from the live lock state (nemesis/lock_state.h), and
// applies the fault then. Which fault, which targets and how long it lasts stay the seeded plan's; only the
// instant moves, and never earlier than planned.
//
// The window of a start at at_ms (timing_window): from at_ms to at most one nemesis interval later, closing
// early enough that the fault's planned duration still ends by the next planned start of the same nemesis, and
// before the time limit. Fallbacks (recorded in the start's detail.timing_fallback, in words):
//   - the nemesis has no rule: applied at its planned time;
//   - blind: no acquire ok in the history so far (an adapter that reports nothing): applied at its planned time;
//     a window that opens in the run's first interval (lock-state plans the first fault of each nemesis at the
//     workload's start, nemesis/schedule.h) waits for the first grant instead, and is blind only if none came
//     by its end;
//   - the window passed without the moment: applied at the window's end.
// A fault is never applied after the run stopped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "nemesis/lock_state.h"

namespace lockcheck {

// The moment of a lock's life a rule waits for.
enum class TimingTrigger {
  kRandom,           // no rule: the planned time (as random timing)
  kHeldEarly,        // a live holding in the first half of its validity (now, or the next one in the window)
  kHeld,             // a live holding
  kAtGrant,          // an acquire's ok after the window opened: at once
  kAtAcquireInvoke,  // an acquire's invoke after the window opened (an acquire in flight)
  kAtExtendInvoke,   // an extend's invoke after the window opened (a renewal in flight)
};
// "random", "held-early", "held", "at-grant", "at-acquire-invoke", "at-extend-invoke".
const char* to_string(TimingTrigger t);

// When a fault matters (Nemesis::timing_rule).
struct TimingRule {
  TimingTrigger trigger = TimingTrigger::kRandom;
  // With kAtGrant: once the run has renewed (an extend invoked so far: the workload renews), an extend's invoke
  // instead, so the fault meets a renewal in flight (the extend/renewal race).
  bool renewal_first = false;
  // Why this moment, in one line (the lock literature), for the docs and the run log.
  std::string why;
};

// The rule's name as recorded (detail.timing_rule): its trigger, "at-grant-or-extend-invoke" with renewal_first.
std::string rule_name(const TimingRule& r);

// What a rule fired on: the process (and key) whose lock state matched, and the moment in words.
struct TimingMatch {
  Process process = 0;
  std::string key;
  std::string moment;  // e.g. "an acquire's ok (p3, lock-0)"
};

// Whether rule r matches snapshot s in a window opened when the view had seen opened_seq events. kRandom
// matches at once (nothing to wait for).
std::optional<TimingMatch> rule_matches(const TimingRule& r, const LockSnapshot& s, uint64_t opened_seq);

// The window of one planned start, in ms from the start of the run.
struct TimingWindow {
  int64_t open_ms = 0;
  int64_t close_ms = 0;
};
// at_ms: the planned start; interval_ms: the nemesis interval (REQUIRES > 0); duration_ms: the fault's planned
// duration; next_start_ms: the next planned start of the same nemesis (-1: none); limit_ms: the time limit.
// close_ms = min(at + interval, next_start - duration, limit - 100), never before at_ms.
TimingWindow timing_window(int64_t at_ms, int64_t interval_ms, int64_t duration_ms, int64_t next_start_ms,
                           int64_t limit_ms);

// At a window's opening: "" to wait for the rule, else why the fault falls back to its planned time (no rule,
// or blind: no acquire ok seen so far; not at the run's start, where no grant can have come yet: run_start).
std::string fallback_at_open(const TimingRule& r, const LockSnapshot& s, bool run_start = false);
// At a window's close without a match: why the fault is applied at the window's end (blind: no acquire ok in
// the history by then).
std::string fallback_at_close(const TimingRule& r, const TimingWindow& w, bool blind = false);

}  // namespace lockcheck
