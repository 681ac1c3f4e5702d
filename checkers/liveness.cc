// The `liveness` checker: a key that processes keep trying to acquire is granted within a bound, outside
// faults. The bound is B = 2 x TTL + op timeout (CheckOptions; when they are not given, the TTL is taken as the
// longest validity the clients reported (TTL - elapsed: a few ms short) and the op timeout as the longest op
// latency seen (which more than covers that), and the summary says so).
//
// Per key, the history says when the key may legitimately be taken ("busy"):
//  - an ok acquire by p holds it from its ok until p's next release of the key is invoked (or p's next extend
//    fails); an ok extend renews it. A holder that never releases (it crashed, was retired or the history
//    ended) holds it until its last acquire or extend ok + TTL, when the lock must have expired;
//  - an info acquire or extend may have taken or renewed it: busy until its completion + TTL (an acquire still
//    open at the end: to the end); an info release may not have deleted it: busy until the last renewal + TTL;
//  - node and network faults (every nemesis fault but the client-side ones, client-pause and client-crash,
//    whose effects the rules above already cover) suspend the judgement from their start to their heal.
// The rest of the time the key is free and judged: a free stretch starting at s in which acquires invoked at or
// after s + B still failed (at least two failed acquires in the stretch) is an anomaly:
//  - "stuck-lock" when the key is never granted again until the end of the history (e.g. a client died
//    between SETNX and EXPIRE: the key never expires);
//  - "livelock" when a grant ends the stretch (acquires kept failing for longer than B with no holder).
// Each anomaly carries from_ns/to_ns (the stretch: from s to the last failed acquire) and the ops: the op that
// began the stretch (the release, the crashed acquire ...) and the first and last failed acquires.
//
// Nothing judged (no acquire attempted while the key was free outside faults, or no TTL known) is unknown.
#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "checkers/checker.h"
#include "checkers/format.h"
#include "core/flat_table.h"
#include "core/huge_pages.h"
#include "core/nearly_sorted.h"

namespace lockcheck {

namespace {

constexpr size_t kOpsPerEnd = 5;  // failed acquires listed at each end of a stretch

// [from, to): the key may be held by someone (or a fault suspends the judgement); cause: the op that began it.
struct Busy {
  int64_t from_ns, to_ns;
  int64_t cause;  // history index (a fault: its heal), -1 when unknown
};

struct Attempt {
  int64_t invoke_ns, done_ns;
  int64_t invoke, done;  // history indices
  Process process;
};

bool client_side_fault(const std::string& fault) { return fault.rfind("client-", 0) == 0; }

// v sorted by key(x), equal keys in their order in v (a stable sort): the intervals and attempts are collected
// in history order, so ties (two ops at the same time) keep the history's order. They come nearly sorted
// (intervals recorded in time order but for a few): a sorted v is left as it is after one pass, otherwise the
// (key, position) pairs are sorted as a nearly sorted sequence. (Ties were once left to std::sort, whose order
// of equal elements is its own: on a history with equal times that sort was a tenth of `check`.)
template <class T, class Key>
void sort_by_key(std::vector<T>* v, Key key) {
  size_t i = 1;
  while (i < v->size() && !(key((*v)[i]) < key((*v)[i - 1]))) ++i;
  if (i >= v->size()) return;
  std::vector<std::pair<int64_t, size_t>> p(v->size());
  for (size_t k = 0; k < v->size(); ++k) p[k] = {key((*v)[k]), k};
  sort_nearly_sorted(&p);
  std::vector<T> sorted;
  sorted.reserve(v->size());
  for (const auto& e : p) sorted.push_back(std::move((*v)[e.second]));
  v->swap(sorted);
}

class LivenessChecker : public Checker {
 public:
  std::string name() const override { return "liveness"; }

  CheckResult check(const History& h, const CheckOptions& opts) const override {
    static const Atom kAcquire("acquire"), kExtend("extend"), kRelease("release");
    CheckResult r;
    std::vector<int64_t> scratch;
    const std::vector<int64_t>& pairs = pairs_of(h, opts, &scratch);
    const int64_t end_ns = h.empty() ? 0 : h.back().time_ns;

    // The TTL and op timeout: given, or derived from the history.
    int64_t ttl_ms = opts.ttl_ms, op_timeout_ms = opts.op_timeout_ms;
    std::string derived;
    if (ttl_ms <= 0 || op_timeout_ms <= 0) {
      int64_t longest_validity_ns = 0, longest_latency_ns = 0;
      for (size_t i = 0; i < h.size(); ++i) {
        prefetch_pair(h, pairs, i);
        const Op& op = h[i];
        if (!op.is_invoke() || !op.is_client() || pairs[i] < 0) continue;
        const Op& done = h[static_cast<size_t>(pairs[i])];
        const int64_t latency = done.time_ns - op.time_ns;
        longest_latency_ns = std::max(longest_latency_ns, latency);
        if (done.is_ok() && done.validity_ms && (op.f == kAcquire || op.f == kExtend)) {
          longest_validity_ns = std::max(longest_validity_ns, *done.validity_ms * 1000000);
        }
      }
      if (ttl_ms <= 0 && longest_validity_ns > 0) {
        ttl_ms = (longest_validity_ns + 999999) / 1000000;
        derived += "TTL taken as " + std::to_string(ttl_ms) + " ms (longest validity reported)";
      }
      if (op_timeout_ms <= 0) {
        op_timeout_ms = (longest_latency_ns + 999999) / 1000000;
        derived += std::string(derived.empty() ? "" : ", ") + "op timeout taken as " + std::to_string(op_timeout_ms) +
                   " ms (longest op latency seen)";
      }
    }
    if (ttl_ms <= 0) {
      r.valid = Validity::kUnknown;
      r.summary = "nothing checked: the TTL is unknown (not given, and no acquire reported a validity)";
      return r;
    }
    const int64_t ttl_ns = ttl_ms * 1000000;
    const int64_t bound_ns = 2 * ttl_ns + op_timeout_ms * 1000000;

    // Faults that suspend the judgement: [start invoke, stop completion].
    std::vector<Busy> faults;
    {
      std::map<std::string, int64_t> open;  // fault name -> start time
      for (size_t i = 0; i < h.size(); ++i) {
        const Op& op = h[i];
        if (op.process != kNemesis || !op.is_invoke() || !op.value.is_object()) continue;
        const std::string fault = op.value.value("fault", "");
        const std::string phase = op.value.value("phase", "");
        if (client_side_fault(fault)) continue;
        if (phase == "start") {
          open.emplace(fault, op.time_ns);
        } else if (phase == "stop") {
          auto it = open.find(fault);
          const int64_t done = pairs[i] >= 0 ? h[static_cast<size_t>(pairs[i])].time_ns : end_ns;
          faults.push_back({it != open.end() ? it->second : op.time_ns, done, pairs[i] >= 0 ? pairs[i] : int64_t(i)});
          if (it != open.end()) open.erase(it);
        }
      }
      for (const auto& [fault, from] : open) faults.push_back({from, end_ns + 1, -1});  // never healed
    }

    // Per key (in order of first appearance): busy intervals and the acquire attempts.
    struct KeyData {
      Atom key;
      std::vector<Busy> busy;
      std::vector<Attempt> failed;  // failed acquires
      std::vector<int64_t> grants;  // ok acquire completion times
    };
    std::vector<KeyData> keys;
    std::unordered_map<Atom, uint32_t> key_ids;
    struct Hold {
      int64_t from_ns, renewed_ns, cause;
    };
    // (key id << 32 | process) -> its hold.
    FlatTable<Hold> holding;
    auto who_of = [](uint32_t key, Process p) { return (static_cast<uint64_t>(key) << 32) | static_cast<uint32_t>(p); };
    auto close_hold = [&](uint64_t who, int64_t to_ns) {
      const Hold* held = holding.find(who);
      if (held == nullptr) return;
      keys[who >> 32].busy.push_back({held->from_ns, std::max(held->from_ns, to_ns), held->cause});
      holding.erase(who);
    };
    int64_t attempts = 0;
    Atom last_key;
    uint32_t last_id = 0;
    for (size_t i = 0; i < h.size(); ++i) {
      prefetch_pair(h, pairs, i);
      const Op& op = h[i];
      // An op without a key (Jepsen/Knossos mutex histories have none) is on the history's one unnamed lock, as
      // in the mutex and lease checkers.
      if (!op.is_invoke() || !op.is_client()) continue;
      const bool acquire = op.f == kAcquire, extend = op.f == kExtend, release = op.f == kRelease;
      if (!acquire && !extend && !release) continue;
      if (keys.empty() || op.key != last_key) {
        auto [it, added] = key_ids.emplace(op.key, static_cast<uint32_t>(keys.size()));
        if (added) {
          keys.push_back(KeyData{op.key, {}, {}, {}});
          // Most histories have one key: its failed acquires and grants are at most one per invoke from here on
          // (reserved address space, touched as they come; never moved, so never copied and touched twice).
          if (keys.size() == 1) {
            keys.back().failed.reserve((h.size() - i) / 2 + 1);
            keys.back().grants.reserve((h.size() - i) / 2 + 1);
            advise_huge_pages(keys.back().failed);
            advise_huge_pages(keys.back().grants);
          }
        }
        last_key = op.key;
        last_id = it->second;
      }
      KeyData& kd = keys[last_id];
      const int64_t c = pairs[i];
      const Op* done = c >= 0 ? &h[static_cast<size_t>(c)] : nullptr;
      const uint64_t who = who_of(last_id, op.process);
      const int64_t idx = static_cast<int64_t>(i);
      if (acquire) {
        ++attempts;
        if (!done) {
          kd.busy.push_back({op.time_ns, end_ns + 1, idx});
        } else if (done->is_ok()) {
          close_hold(who, done->time_ns);
          holding[who] = Hold{done->time_ns, done->time_ns, idx};
          kd.grants.push_back(done->time_ns);
        } else if (done->is_info()) {
          kd.busy.push_back({op.time_ns, done->time_ns + ttl_ns, idx});
        } else {
          kd.failed.push_back({op.time_ns, done->time_ns, idx, c, op.process});
        }
        continue;
      }
      Hold* held = holding.find(who);
      if (extend) {
        if (done && done->is_ok()) {
          if (held != nullptr)
            held->renewed_ns = done->time_ns;
          else
            holding[who] = Hold{done->time_ns, done->time_ns, idx};  // re-created: it believes it holds it
        } else if (!done || done->is_info()) {
          if (held != nullptr) close_hold(who, op.time_ns);
          kd.busy.push_back({op.time_ns, done ? done->time_ns + ttl_ns : end_ns + 1, idx});
        } else if (held != nullptr) {
          close_hold(who, op.time_ns);  // lost: the holder stops using it
        }
        continue;
      }
      // release: the holder stops relying on the lock when it starts to release it.
      if (held == nullptr) continue;
      const int64_t renewed = held->renewed_ns;
      close_hold(who, op.time_ns);
      if (!done || done->is_info()) kd.busy.push_back({op.time_ns, done ? renewed + ttl_ns : end_ns + 1, idx});
    }
    // Holders that never released: until their last renewal + TTL (per key in order of process, so that the
    // intervals come in a fixed order).
    {
      std::vector<std::pair<uint64_t, Hold>> left;
      holding.for_each([&](uint64_t who, const Hold& hold) { left.emplace_back(who, hold); });
      std::sort(left.begin(), left.end(), [](const auto& a, const auto& b) {
        const uint32_t ka = static_cast<uint32_t>(a.first >> 32), kb = static_cast<uint32_t>(b.first >> 32);
        if (ka != kb) return ka < kb;
        return static_cast<Process>(static_cast<uint32_t>(a.first)) <
               static_cast<Process>(static_cast<uint32_t>(b.first));
      });
      for (const auto& [who, hold] : left) {
        keys[who >> 32].busy.push_back({hold.from_ns, hold.renewed_ns + ttl_ns, hold.cause});
      }
    }
    // Keys in the order of their names.
    std::vector<uint32_t> key_order(keys.size());
    for (uint32_t k = 0; k < key_order.size(); ++k) key_order[k] = k;
    std::sort(key_order.begin(), key_order.end(),
              [&](uint32_t a, uint32_t b) { return keys[a].key.str() < keys[b].key.str(); });

    int64_t stuck = 0, livelocks = 0, judged_attempts = 0, longest_ns = 0;
    std::vector<Busy> blocked;
    for (uint32_t k : key_order) {
      KeyData& kd = keys[k];
      if (kd.failed.empty()) continue;
      const Atom& key = kd.key;
      const std::string key_name = key.empty() ? std::string("the lock (no key)") : key.str();
      std::vector<Attempt>& fails = kd.failed;
      blocked = std::move(kd.busy);
      blocked.insert(blocked.end(), faults.begin(), faults.end());
      sort_by_key(&blocked, [](const Busy& b) { return b.from_ns; });
      const std::vector<int64_t>& g = kd.grants;
      // Walk the failed acquires in invoke order, tracking the free stretch each one falls in.
      sort_by_key(&fails, [](const Attempt& a) { return a.invoke_ns; });
      size_t next_block = 0;
      // Nothing was observed before the history's first op (a run starts it after its cluster is up, seconds
      // into the run for Sentinel or Redis Cluster): a free stretch cannot begin earlier.
      int64_t covered_to = h.front().time_ns, stretch_cause = -1;  // blocked up to here; what blocked it last
      int64_t stretch_from = -1;                                   // current free stretch's start, -1: none yet
      std::vector<const Attempt*> in_stretch;
      bool late = false;  // an acquire in the stretch was invoked at or after from + bound
      auto flush = [&]() {
        if (stretch_from >= 0 && late && in_stretch.size() >= 2) {
          const Attempt& last = *in_stretch.back();
          const bool granted_after = std::upper_bound(g.begin(), g.end(), stretch_from) != g.end();
          const bool is_stuck = !granted_after;
          (is_stuck ? stuck : livelocks) += 1;
          const int64_t to = last.done_ns;
          longest_ns = std::max(longest_ns, to - stretch_from);
          if (r.anomalies.size() < kMaxAnomalies) {
            std::set<Process> procs;
            std::vector<int64_t> ops;
            if (stretch_cause >= 0) ops.push_back(stretch_cause);
            for (size_t k = 0; k < in_stretch.size(); ++k) {
              procs.insert(in_stretch[k]->process);
              if (k < kOpsPerEnd || k + kOpsPerEnd >= in_stretch.size()) {
                ops.push_back(in_stretch[k]->invoke);
                ops.push_back(in_stretch[k]->done);
              }
            }
            std::sort(ops.begin(), ops.end());
            ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
            std::string who;
            for (Process p : procs) who += (who.empty() ? "" : ", ") + process_name(p);
            std::string since = stretch_cause >= 0 ? " (since " + describe(h, pairs, stretch_cause) + ")" : "";
            std::string d = is_stuck
                                ? key_name + " was never granted again: free from t=" + format_time_s(stretch_from) +
                                      since + ", " + std::to_string(in_stretch.size()) + " acquires by " + who + " failed up to t=" + format_time_s(to) +
                                      " (bound 2 x TTL + op timeout = " + format_duration_ms(bound_ns) + ")"
                                : key_name + " had no holder from t=" + format_time_s(stretch_from) + since + " but " +
                                      std::to_string(in_stretch.size()) + " acquires by " + who + " failed for " +
                                      format_duration_ms(to - stretch_from) +
                                      " (bound 2 x TTL + op timeout = " + format_duration_ms(bound_ns) + ")";
            nlohmann::json ps = nlohmann::json::array();
            for (Process p : procs) ps.push_back(p);
            r.anomalies.push_back({{"kind", is_stuck ? "stuck-lock" : "livelock"},
                                   {"description", d},
                                   {"ops", ops},
                                   {"key", key},
                                   {"processes", ps},
                                   {"from_ns", stretch_from},
                                   {"to_ns", to},
                                   {"failed_acquires", in_stretch.size()},
                                   {"stretch_ms", static_cast<double>(to - stretch_from) / 1e6}});
          }
        }
        stretch_from = -1;
        in_stretch.clear();
        late = false;
      };
      for (const Attempt& a : fails) {
        // Every block that began before this acquire's invoke: a block that reaches past the current stretch's
        // start ends the stretch.
        while (next_block < blocked.size() && blocked[next_block].from_ns <= a.invoke_ns) {
          const Busy& b = blocked[next_block++];
          if (b.to_ns <= covered_to) continue;
          if (stretch_from >= 0 && b.from_ns >= stretch_from) flush();
          covered_to = b.to_ns;
          stretch_cause = b.cause;
        }
        if (a.invoke_ns < covered_to) continue;  // held, possibly held, or a fault: not judged
        ++judged_attempts;
        if (stretch_from < 0) stretch_from = covered_to;
        in_stretch.push_back(&a);
        if (a.invoke_ns >= stretch_from + bound_ns) late = true;
      }
      flush();
    }
    // Ok acquires outside faults were judged too (they are what a live lock looks like): each grant against the
    // union of the fault periods (merged, in order).
    std::vector<std::pair<int64_t, int64_t>> fault_union;
    for (const Busy& f : faults) {
      if (f.from_ns < f.to_ns) fault_union.emplace_back(f.from_ns, f.to_ns);
    }
    std::sort(fault_union.begin(), fault_union.end());
    {
      size_t out = 0;
      for (const auto& iv : fault_union) {
        if (out > 0 && iv.first <= fault_union[out - 1].second) {
          fault_union[out - 1].second = std::max(fault_union[out - 1].second, iv.second);
        } else {
          fault_union[out++] = iv;
        }
      }
      fault_union.resize(out);
    }
    for (const KeyData& kd : keys) {
      for (int64_t t : kd.grants) {
        // The last period starting at or before t contains t, or none does.
        auto it = std::upper_bound(fault_union.begin(), fault_union.end(), t,
                                   [](int64_t x, const std::pair<int64_t, int64_t>& iv) { return x < iv.first; });
        const bool in_fault = it != fault_union.begin() && t < std::prev(it)->second;
        if (!in_fault) ++judged_attempts;
      }
    }

    r.stats = {{"ttl_ms", ttl_ms},
               {"op_timeout_ms", op_timeout_ms},
               {"bound_ms", static_cast<double>(bound_ns) / 1e6},
               {"acquires", attempts},
               {"judged_acquires", judged_attempts},
               {"fault_periods", faults.size()},
               {"stuck_locks", stuck},
               {"livelocks", livelocks},
               {"longest_stretch_ms", static_cast<double>(longest_ns) / 1e6}};
    const std::string note = derived.empty() ? "" : " [" + derived + "]";
    if (stuck + livelocks > 0) {
      r.valid = Validity::kInvalid;
      std::string what;
      if (stuck) what += std::to_string(stuck) + " stuck lock" + (stuck > 1 ? "s" : "");
      if (livelocks)
        what += std::string(what.empty() ? "" : ", ") + std::to_string(livelocks) + " livelock" +
                (livelocks > 1 ? "s" : "");
      r.summary = what + ": " + r.anomalies[0]["description"].get<std::string>() + note;
    } else if (judged_attempts == 0) {
      r.valid = Validity::kUnknown;
      r.summary = attempts == 0 ? "nothing checked: no acquires"
                                : "nothing checked: no acquire outside faults while the lock was free";
      r.summary += note;
    } else {
      r.summary = "every key tried outside faults was granted within " + format_duration_ms(bound_ns) +
                  " (2 x TTL + op timeout; " + std::to_string(judged_attempts) + " acquires judged)" + note;
    }
    return r;
  }

 private:
  static std::string describe(const History& h, const std::vector<int64_t>& pairs, int64_t i) {
    const Op& op = h[static_cast<size_t>(i)];
    if (op.process == kNemesis) {
      const std::string fault = op.value.is_object() ? op.value.value("fault", op.f.str()) : op.f.str();
      return "the " + fault + " fault healed at t=" + format_time_s(op.time_ns);
    }
    const auto pairs_note = [&]() -> std::string {
      // The next op of the same process: the invoke's completion when it has one (pair_index pairs an invoke with
      // the next op of its process when that is a completion), else found by a scan.
      const int64_t c = pairs[static_cast<size_t>(i)];
      if (c > i) return std::string(" ended ") + to_string(h[static_cast<size_t>(c)].type);
      for (size_t k = static_cast<size_t>(i) + 1; k < h.size(); ++k) {
        if (h[k].process == op.process && !h[k].is_notice()) return std::string(" ended ") + to_string(h[k].type);
      }
      return " never completed";
    };
    return process_name(op.process) + "'s " + op.f + " at t=" + format_time_s(op.time_ns) + pairs_note();
  }
};

}  // namespace

std::unique_ptr<Checker> make_liveness_checker() { return std::make_unique<LivenessChecker>(); }

// This checker's line in the registry (checkers/registry.cc): its name, what `lockcheck list` says of it, its factory.
CheckerInfo liveness_checker() {
  return {"liveness",
          "outside faults, a key processes keep trying to acquire is granted within 2 x TTL + op timeout "
          "(stuck lock, livelock)",
          make_liveness_checker};
}

}  // namespace lockcheck
