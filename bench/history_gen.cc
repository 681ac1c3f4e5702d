#include "bench/history_gen.h"

#include <deque>
#include <queue>
#include <string>
#include <vector>

namespace lockcheck {

namespace {

// splitmix64: a small deterministic generator (same sequence on every platform).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi].
  int64_t between(int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool chance(double p) { return p > 0 && static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }

 private:
  uint64_t s_;
};

enum class EvKind {
  kInvokeAcquire,  // slot starts an acquire
  kArrive,         // the acquire request reaches the lock
  kTimeout,        // the acquire's timeout fires
  kReply,          // a reply reaches the client: completes the op with the stored outcome
  kInvokeExtend,
  kInvokeRelease,
  kReleaseEffect,  // the release takes effect at the lock
  kNemesis,
};

struct Event {
  int64_t time;
  uint64_t seq;
  EvKind kind;
  int slot;
  uint64_t op_serial;  // which op of the slot the event belongs to (stale events are ignored)
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

struct Slot {
  Process process = 0;
  uint64_t op_serial = 0;  // incremented at each invoke
  bool in_flight = false;
  std::string f;
  int key = 0;
  bool waiting = false;  // acquire queued at the lock
  bool info = false;     // this op completes as info
  // Outcome of the op in flight, delivered at kReply.
  OpType outcome = OpType::kOk;
  int64_t token = -1;
  bool with_validity = false;
  // Plan after a grant.
  bool will_extend = false;
  int64_t release_invoke_at = 0;
};

struct Lock {
  std::vector<int> holders;  // slots
  std::deque<int> waiters;   // slots, FIFO
  int64_t next_token = 1;
};

}  // namespace

History generate_lock_history(const LockHistoryOptions& o, LockHistoryInfo* info_out) {
  Rng rng(o.seed);
  LockHistoryInfo info;
  History h;
  h.reserve(static_cast<size_t>(o.ops) * 2 + 16);

  std::vector<Slot> slots(static_cast<size_t>(o.processes));
  std::vector<Lock> locks(static_cast<size_t>(o.keys));
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
  uint64_t seq = 0;
  Process next_process = 0;
  int64_t invoked = 0;
  bool stopped = false;
  int64_t nemesis_ops = 0;

  auto schedule = [&](int64_t t, EvKind k, int slot, uint64_t serial) {
    events.push(Event{t, seq++, k, slot, serial});
  };
  auto latency = [&]() { return rng.between(1, o.latency_us_max) * 1000; };
  auto record = [&](int64_t t, Process p, OpType type, const std::string& f, const std::string& key) -> Op& {
    Op op;
    op.index = static_cast<int64_t>(h.size());
    op.time_ns = t;
    op.process = p;
    op.type = type;
    op.f = f;
    op.key = key;
    h.push_back(std::move(op));
    return h.back();
  };
  auto key_name = [](int k) { return "lock-" + std::to_string(k); };

  for (int s = 0; s < o.processes; ++s) {
    slots[static_cast<size_t>(s)].process = next_process++;
    schedule(rng.between(0, o.think_us_max) * 1000, EvKind::kInvokeAcquire, s, 0);
  }
  if (o.nemesis_interval_us > 0) schedule(o.nemesis_interval_us * 1000, EvKind::kNemesis, -1, 0);

  // Starts an op on slot s at time t; returns false once the op budget is spent.
  auto invoke = [&](int64_t t, int s, const std::string& f, int key) -> bool {
    if (invoked >= o.ops) {
      stopped = true;
      return false;
    }
    ++invoked;
    Slot& sl = slots[static_cast<size_t>(s)];
    ++sl.op_serial;
    sl.in_flight = true;
    sl.f = f;
    sl.key = key;
    sl.waiting = false;
    sl.info = (f == "acquire" || f == "release") && rng.chance(o.info_fraction);
    sl.token = -1;
    sl.with_validity = false;
    record(t, sl.process, OpType::kInvoke, f, key_name(key));
    return true;
  };

  // Grants lock `key` to slot s at time t and plans its hold.
  auto grant = [&](int64_t t, int s) {
    Slot& sl = slots[static_cast<size_t>(s)];
    Lock& lk = locks[static_cast<size_t>(sl.key)];
    lk.holders.push_back(s);
    sl.waiting = false;
    sl.outcome = OpType::kOk;
    sl.token = lk.next_token++;
    sl.with_validity = true;
    const int64_t reply = t + latency();
    schedule(reply, EvKind::kReply, s, sl.op_serial);
    sl.will_extend = rng.chance(o.extend_fraction);
    const int64_t hold = rng.between(0, o.hold_us_max) * 1000;
    // With an extend: the extend is invoked mid-hold and takes at most two latencies.
    sl.release_invoke_at = reply + hold + (sl.will_extend ? 2 * o.latency_us_max * 1000 + 1 : 0);
  };

  auto grant_next = [&](int64_t t, int key) {
    Lock& lk = locks[static_cast<size_t>(key)];
    while (lk.holders.empty() && !lk.waiters.empty()) {
      const int w = lk.waiters.front();
      lk.waiters.pop_front();
      if (!slots[static_cast<size_t>(w)].waiting) continue;
      grant(t, w);
    }
  };

  auto retire = [&](int s) {
    if (!o.retire_after_info) return;
    Slot& sl = slots[static_cast<size_t>(s)];
    sl.process = next_process++;
  };

  while (!events.empty()) {
    const Event ev = events.top();
    events.pop();
    const int64_t t = ev.time;
    if (ev.kind == EvKind::kNemesis) {
      if (stopped) continue;
      const bool start = (nemesis_ops++ % 2) == 0;
      record(t, kNemesis, OpType::kInvoke, start ? "partition" : "heal", "");
      Op& done = record(t + 1000, kNemesis, OpType::kInfo, start ? "partition" : "heal", "");
      done.value = nlohmann::json{{"fault", "partition"}, {"phase", start ? "start" : "stop"}};
      schedule(t + o.nemesis_interval_us * 1000, EvKind::kNemesis, -1, 0);
      continue;
    }
    Slot& sl = slots[static_cast<size_t>(ev.slot)];
    if (ev.op_serial != sl.op_serial && ev.kind != EvKind::kInvokeAcquire && ev.kind != EvKind::kInvokeExtend &&
        ev.kind != EvKind::kInvokeRelease) {
      continue;  // belongs to an op that has completed already
    }
    switch (ev.kind) {
      case EvKind::kInvokeAcquire: {
        if (stopped) break;
        const int key = static_cast<int>(rng.between(0, o.keys - 1));
        if (!invoke(t, ev.slot, "acquire", key)) break;
        if (sl.info) {
          // Never reaches the lock; the client gives up without knowing.
          sl.outcome = OpType::kInfo;
          schedule(t + o.acquire_timeout_us * 1000, EvKind::kReply, ev.slot, sl.op_serial);
          break;
        }
        schedule(t + latency(), EvKind::kArrive, ev.slot, sl.op_serial);
        schedule(t + o.acquire_timeout_us * 1000, EvKind::kTimeout, ev.slot, sl.op_serial);
        break;
      }
      case EvKind::kArrive: {
        Lock& lk = locks[static_cast<size_t>(sl.key)];
        if (lk.holders.empty()) {
          grant(t, ev.slot);
          break;
        }
        if (lk.holders.size() == 1 && rng.chance(o.violation_fraction)) {
          const Slot& holder = slots[static_cast<size_t>(lk.holders[0])];
          const int64_t reply_at = t + o.latency_us_max * 1000;  // a bound on this grant's reply time
          if (holder.release_invoke_at > reply_at) {
            ++info.injected_violations;
            grant(t, ev.slot);
            break;
          }
        }
        sl.waiting = true;
        lk.waiters.push_back(ev.slot);
        break;
      }
      case EvKind::kTimeout: {
        if (!sl.waiting) break;  // granted (reply pending) or already done
        sl.waiting = false;
        sl.outcome = OpType::kFail;
        schedule(t, EvKind::kReply, ev.slot, sl.op_serial);
        break;
      }
      case EvKind::kReply: {
        if (!sl.in_flight) break;
        if (stopped && o.crash_at_end) break;
        sl.in_flight = false;
        const OpType type = sl.info ? OpType::kInfo : sl.outcome;
        Op& done = record(t, sl.process, type, sl.f, key_name(sl.key));
        if (type == OpType::kOk) {
          ++info.ok;
          if (sl.f == "acquire") done.token = sl.token;
          if (sl.with_validity) done.validity_ms = o.validity_ms;
        } else if (type == OpType::kFail) {
          ++info.fail;
          done.error = "timeout waiting for the lock";
        } else {
          ++info.info;
          done.error = "timeout";
        }
        const int s = ev.slot;
        if (type == OpType::kInfo) {
          retire(s);
          schedule(t + rng.between(0, o.think_us_max) * 1000, EvKind::kInvokeAcquire, s, 0);
        } else if (sl.f == "acquire" && type == OpType::kOk) {
          if (sl.will_extend) {
            schedule(t + (sl.release_invoke_at - t - 2 * o.latency_us_max * 1000 - 1) / 2, EvKind::kInvokeExtend, s, 0);
          } else {
            schedule(sl.release_invoke_at, EvKind::kInvokeRelease, s, 0);
          }
        } else if (sl.f == "extend") {
          schedule(std::max(t, sl.release_invoke_at), EvKind::kInvokeRelease, s, 0);
        } else {
          schedule(t + rng.between(0, o.think_us_max) * 1000, EvKind::kInvokeAcquire, s, 0);
        }
        break;
      }
      case EvKind::kInvokeExtend: {
        if (stopped) break;
        const int key = sl.key;
        if (!invoke(t, ev.slot, "extend", key)) break;
        sl.info = false;
        sl.outcome = OpType::kOk;
        sl.with_validity = true;
        schedule(t + latency(), EvKind::kReply, ev.slot, sl.op_serial);
        break;
      }
      case EvKind::kInvokeRelease: {
        if (stopped) break;
        const int key = sl.key;
        if (!invoke(t, ev.slot, "release", key)) break;
        sl.outcome = OpType::kOk;
        schedule(t + latency(), EvKind::kReleaseEffect, ev.slot, sl.op_serial);
        break;
      }
      case EvKind::kReleaseEffect: {
        Lock& lk = locks[static_cast<size_t>(sl.key)];
        for (size_t j = 0; j < lk.holders.size(); ++j) {
          if (lk.holders[j] == ev.slot) {
            lk.holders.erase(lk.holders.begin() + static_cast<std::ptrdiff_t>(j));
            break;
          }
        }
        grant_next(t, sl.key);
        schedule(t + latency(), EvKind::kReply, ev.slot, sl.op_serial);
        break;
      }
      case EvKind::kNemesis: break;
    }
    if (stopped && o.crash_at_end) break;
  }

  for (const Slot& sl : slots) info.crashed += sl.in_flight ? 1 : 0;
  info.ops = invoked;
  info.events = static_cast<int64_t>(h.size());
  info.processes_used = next_process;
  if (info_out) *info_out = info;
  return h;
}

}  // namespace lockcheck
