#include "nemesis/timing.h"

#include <algorithm>

namespace lockcheck {

const char* to_string(TimingTrigger t) {
  switch (t) {
    case TimingTrigger::kRandom: return "random";
    case TimingTrigger::kHeldEarly: return "held-early";
    case TimingTrigger::kHeld: return "held";
    case TimingTrigger::kAtGrant: return "at-grant";
    case TimingTrigger::kAtAcquireInvoke: return "at-acquire-invoke";
    case TimingTrigger::kAtExtendInvoke: return "at-extend-invoke";
  }
  return "random";
}

std::string rule_name(const TimingRule& r) {
  if (r.trigger == TimingTrigger::kAtGrant && r.renewal_first) return "at-grant-or-extend-invoke";
  return to_string(r.trigger);
}

namespace {

std::string who(Process p, const std::string& key) {
  return "p" + std::to_string(p) + (key.empty() ? "" : ", " + key);
}

std::optional<TimingMatch> event_match(const LockSnapshot& s, LockEventKind k, uint64_t opened_seq,
                                       const char* what) {
  const std::optional<LockEvent> e = s.since(k, opened_seq);
  if (!e) return std::nullopt;
  return TimingMatch{e->process, e->key, std::string(what) + " (" + who(e->process, e->key) + ")"};
}

std::optional<TimingMatch> holding_match(const LockSnapshot& s, bool early_only) {
  std::optional<ProcessLock> best;
  for (const ProcessLock& p : s.processes) {
    if (!(early_only ? p.early(s.now) : p.live(s.now))) continue;
    if (!best || p.grant_seq > best->grant_seq) best = p;
  }
  if (!best) return std::nullopt;
  return TimingMatch{best->process, best->key,
                     std::string(early_only ? "a live lock early in its lease" : "a live lock") + " (" +
                         who(best->process, best->key) + ")"};
}

}  // namespace

std::optional<TimingMatch> rule_matches(const TimingRule& r, const LockSnapshot& s, uint64_t opened_seq) {
  switch (r.trigger) {
    case TimingTrigger::kRandom: return TimingMatch{0, "", "the planned time"};
    case TimingTrigger::kHeldEarly: return holding_match(s, true);
    case TimingTrigger::kHeld: return holding_match(s, false);
    case TimingTrigger::kAtGrant:
      if (r.renewal_first && s.extends > 0) {
        return event_match(s, LockEventKind::kExtendInvoke, opened_seq, "an extend's invoke");
      }
      return event_match(s, LockEventKind::kGrant, opened_seq, "an acquire's ok");
    case TimingTrigger::kAtAcquireInvoke:
      return event_match(s, LockEventKind::kAcquireInvoke, opened_seq, "an acquire's invoke");
    case TimingTrigger::kAtExtendInvoke:
      return event_match(s, LockEventKind::kExtendInvoke, opened_seq, "an extend's invoke");
  }
  return std::nullopt;
}

TimingWindow timing_window(int64_t at_ms, int64_t interval_ms, int64_t duration_ms, int64_t next_start_ms,
                           int64_t limit_ms) {
  TimingWindow w;
  w.open_ms = at_ms;
  int64_t close = at_ms + std::max<int64_t>(0, interval_ms);
  if (next_start_ms >= 0) close = std::min(close, next_start_ms - std::max<int64_t>(0, duration_ms));
  // The run stops at its time limit (the driver's clock starts a little before the workload's): leave room
  // for the fault to be applied inside the run.
  close = std::min(close, limit_ms - 100);
  w.close_ms = std::max(at_ms, close);
  return w;
}

std::string fallback_at_open(const TimingRule& r, const LockSnapshot& s, bool run_start) {
  if (r.trigger == TimingTrigger::kRandom) return "this fault has no lock-state rule: applied at its planned time";
  if (s.grants == 0 && !run_start) {
    return "blind: no acquire ok in the history so far (the lock reported no grant to time by): applied at its "
           "planned time";
  }
  return "";
}

std::string fallback_at_close(const TimingRule& r, const TimingWindow& w, bool blind) {
  if (blind && r.trigger != TimingTrigger::kRandom) {
    return "blind: no acquire ok in the history by the window's end (the lock reported no grant to time by): "
           "applied at the window's end";
  }
  const char* moment = "";
  switch (r.trigger) {
    case TimingTrigger::kRandom: moment = "the planned time"; break;
    case TimingTrigger::kHeldEarly: moment = "no live lock early in its lease"; break;
    case TimingTrigger::kHeld: moment = "no live lock"; break;
    case TimingTrigger::kAtGrant: moment = r.renewal_first ? "no acquire ok (or extend invoke)" : "no acquire ok"; break;
    case TimingTrigger::kAtAcquireInvoke: moment = "no acquire invoke"; break;
    case TimingTrigger::kAtExtendInvoke: moment = "no extend invoke"; break;
  }
  return std::string(moment) + " within the window of " + std::to_string(w.close_ms - w.open_ms) +
         " ms after the planned time: applied at the window's end";
}

}  // namespace lockcheck
