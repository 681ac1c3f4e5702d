// The `lease` checker: the guarantee Redlock claims. Validity is what remains at the END of an acquire (TTL -
// elapsed - drift), so each ok acquire that reports validity_ms gives its process a lease window
// [acquire ok, acquire ok + validity_ms]. The window ends early at the invoke of the process's release of the key
// (the client stops relying on the lock when it starts to release it) or at the completion of an extend that did
// not end ok (a careful client stops the moment its extend fails). An ok extend stretches the window to
// [.., extend ok + its validity]; one that completes after the window had run out opens a new window from its ok
// (the client believes it holds the lock again; whether that is a resurrected lock is the renewal checker's call).
//
// Anomalies:
//   double-grant      two processes' windows on one key overlap: both held the lock at once within their leases.
//                     Every overlapping pair is listed (up to kMaxAnomalies).
//   expired-grant     an ok acquire or extend reported validity_ms <= 0: the client handed out a lock that had
//                     already expired (some clients do). Invalid: its caller would use a lock nobody holds.
//   lost-before-release / lost-before-extend (notes, not violations): a release or extend of a lock the process
//                     held failed because it no longer held it: the lock had expired or been taken by then. Known
//                     from the typed reason "not_held" in the completion's value (protocol 2 of external
//                     clients), or, for clients that give none (the built-in locks, protocol-1 clients), from an
//                     error text starting with "not held" (what the built-in locks write). Listed so a reader
//                     sees where locks were lost; a violation needs an overlap of use or of leases.
// An acquire without validity_ms gets the lease a careful client computes from its TTL (CheckOptions.ttl_ms):
// [ok, invoke + TTL], counted as validity_from_ttl. An ok extend without validity_ms likewise stretches the window
// to its invoke + TTL (what the renew workload assumes), counted in validity_from_ttl too. Without a TTL the
// window of such an acquire is unknown (counted, acquires_without_validity) and such an extend stretches nothing
// (counted, extends_without_validity, and said in the summary). A history where no window could be formed is
// unknown, never valid.
#include <algorithm>
#include <memory>
#include <unordered_map>

#include "checkers/checker.h"
#include "checkers/format.h"
#include "core/flat_table.h"
#include "core/nearly_sorted.h"

namespace lockcheck {

namespace {


// ops: the acquire invoke and ok (op0, op1), then the extends and the release invoke that cut it, as a chain in
// Windows::extra (no allocation per window).
struct Window {
  Process process;
  int64_t start_ns, end_ns;
  int64_t op0, op1;
  int32_t extra_head = -1, extra_tail = -1;
};

// The windows of every key, and the ops they hold beyond their first two.
struct Windows {
  std::vector<std::pair<int64_t, int32_t>> extra;  // (history index, next in the chain or -1)

  void add_op(Window* w, int64_t op) {
    const int32_t at = static_cast<int32_t>(extra.size());
    extra.emplace_back(op, -1);
    if (w->extra_tail >= 0) {
      extra[static_cast<size_t>(w->extra_tail)].second = at;
    } else {
      w->extra_head = at;
    }
    w->extra_tail = at;
  }
  // The window's ops in the order they were added.
  std::vector<int64_t> ops(const Window& w) const {
    std::vector<int64_t> out = {w.op0, w.op1};
    for (int32_t k = w.extra_head; k >= 0; k = extra[static_cast<size_t>(k)].second) {
      out.push_back(extra[static_cast<size_t>(k)].first);
    }
    return out;
  }
};

// The client says the op failed because it no longer held the lock: the typed reason when it gave one, else the
// built-in locks' text.
bool says_not_held(const Op& done) {
  if (!done.is_fail()) return false;
  if (done.value.is_object()) {
    auto reason = done.value.find("reason");
    if (reason != done.value.end() && reason->is_string()) return reason->get<std::string>() == "not_held";
  }
  return done.error.rfind("not held", 0) == 0 && done.error != "not held by this client";
}

class LeaseChecker : public Checker {
 public:
  std::string name() const override { return "lease"; }

  CheckResult check(const History& h, const CheckOptions& opts) const override {
    static const Atom kAcquire("acquire"), kExtend("extend"), kRelease("release");
    CheckResult r;
    std::vector<int64_t> scratch;
    const std::vector<int64_t>& pairs = pairs_of(h, opts, &scratch);
    // Keys by first appearance; each key's closed and open windows.
    std::vector<Atom> key_names;
    std::vector<std::vector<Window>> windows;
    std::unordered_map<Atom, uint32_t> key_ids;
    Windows arena;
    // (key id, process) -> index of its current window in windows[key], or -1 (present: the process had an
    // acquire or extend of the key that ended its claim).
    FlatTable<int64_t> current;
    int64_t ok_acquires = 0, without_validity = 0, expired_grants = 0, extends_applied = 0, lost = 0, derived = 0;
    int64_t extends_without_validity = 0;
    nlohmann::json notes = nlohmann::json::array();
    Atom last_key;
    uint32_t last_id = 0;

    for (size_t i = 0; i < h.size(); ++i) {
      prefetch_pair(h, pairs, i);
      const Op& op = h[i];
      if (!op.is_invoke() || !op.is_client()) continue;
      const bool acquire = op.f == kAcquire, extend = op.f == kExtend, release = op.f == kRelease;
      if (!acquire && !extend && !release) continue;
      if (key_names.empty() || op.key != last_key) {
        auto [it, added] = key_ids.emplace(op.key, static_cast<uint32_t>(key_names.size()));
        if (added) {
          key_names.push_back(op.key);
          windows.emplace_back();
        }
        last_key = op.key;
        last_id = it->second;
      }
      const uint64_t who = (static_cast<uint64_t>(last_id) << 32) | static_cast<uint32_t>(op.process);
      auto& ws = windows[last_id];
      int64_t* cur = current.find(who);
      Window* w = (cur != nullptr && *cur >= 0) ? &ws[static_cast<size_t>(*cur)] : nullptr;
      const int64_t c = pairs[i];
      const Op* done = c >= 0 ? &h[static_cast<size_t>(c)] : nullptr;
      if (release || (extend && done != nullptr && !done->is_ok())) {
        // The client stops relying on the lock when it starts to release it, whatever the outcome, and when its
        // extend fails.
        if (w != nullptr) {
          w->end_ns = std::min(w->end_ns, release ? op.time_ns : done->time_ns);
          arena.add_op(w, static_cast<int64_t>(i));
          if (!release) arena.add_op(w, c);
          if (release) *cur = -1;
        }
        if (done != nullptr && says_not_held(*done) && cur != nullptr) {
          ++lost;
          if (notes.size() < kMaxAnomalies) {
            notes.push_back({{"kind", release ? "lost-before-release" : "lost-before-extend"},
                             {"severity", "note"},
                             {"description", process_name(op.process) + "'s " + op.f + " of " + op.key +
                                                 " (op " + std::to_string(c) + ", t=" + format_time_s(done->time_ns) +
                                                 ") failed: " + done->error +
                                                 " (the lock was lost before; not a violation by itself)"},
                             {"ops", {static_cast<int64_t>(i), c}},
                             {"key", op.key},
                             {"processes", {op.process}},
                             {"from_ns", op.time_ns},
                             {"to_ns", done->time_ns}});
          }
        }
        continue;
      }
      if (done == nullptr || !done->is_ok()) continue;
      std::optional<int64_t> validity = done->validity_ms;
      if (acquire) ++ok_acquires;
      if (!validity && acquire && opts.ttl_ms > 0) {
        // A client that reports no validity (most single-node libraries) still knows its TTL: the lease it may
        // assume is what a careful client computes, TTL - the acquire's own duration (as the workloads do).
        const int64_t left = opts.ttl_ms - (done->time_ns - op.time_ns) / 1000000;
        ++derived;
        if (left <= 0) {
          current[who] = -1;  // expired on arrival by the client's own reckoning: no window, no claim made
          continue;
        }
        validity = left;
      }
      if (!validity && extend && opts.ttl_ms > 0) {
        // The same for an ok extend: it holds the lock until invoke + TTL by the client's own reckoning.
        const int64_t left = opts.ttl_ms - (done->time_ns - op.time_ns) / 1000000;
        if (left > 0) {
          validity = left;
          ++derived;
        }
      }
      if (!validity) {
        if (acquire) {
          ++without_validity;
          current[who] = -1;
        } else {
          ++extends_without_validity;  // stretches nothing: its window, if any, ends where it did
        }
        continue;
      }
      if (*validity <= 0 && done->validity_ms) {
        ++expired_grants;
        if (r.anomalies.size() < kMaxAnomalies) {
          r.anomalies.push_back(
              {{"kind", "expired-grant"},
               {"description", process_name(op.process) + "'s " + op.f + " of " + op.key + " (op " +
                                   std::to_string(c) + ", t=" + format_time_s(done->time_ns) +
                                   ") was reported ok with validity " + std::to_string(*validity) +
                                   " ms: the client handed out a lock that had already expired"},
               {"ops", {static_cast<int64_t>(i), c}},
               {"key", op.key},
               {"processes", {op.process}},
               {"from_ns", op.time_ns},
               {"to_ns", done->time_ns}});
        }
        if (acquire) current[who] = -1;
        continue;
      }
      const int64_t end = done->time_ns + *validity * 1000000;
      if (acquire) {
        ws.push_back(Window{op.process, done->time_ns, end, static_cast<int64_t>(i), c});
        current[who] = static_cast<int64_t>(ws.size()) - 1;
        continue;
      }
      // An ok extend.
      ++extends_applied;
      if (w != nullptr && done->time_ns <= w->end_ns) {
        w->end_ns = std::max(w->end_ns, end);
        arena.add_op(w, static_cast<int64_t>(i));
        arena.add_op(w, c);
      } else {
        ws.push_back(Window{op.process, done->time_ns, end, static_cast<int64_t>(i), c});
        current[who] = static_cast<int64_t>(ws.size()) - 1;
      }
    }

    // Keys in the order of their names.
    std::vector<uint32_t> key_order(key_names.size());
    for (uint32_t k = 0; k < key_order.size(); ++k) key_order[k] = k;
    std::sort(key_order.begin(), key_order.end(),
              [&](uint32_t a, uint32_t b) { return key_names[a].str() < key_names[b].str(); });
    int64_t overlaps = 0, total_overlap_ns = 0, max_overlap_ns = 0, window_count = 0, cut_at_once = 0;
    std::vector<const Window*> live, active;
    for (uint32_t k : key_order) {
      const Atom& key = key_names[k];
      const std::vector<Window>& ws = windows[k];
      live.clear();
      active.clear();
      for (const Window& w : ws) {
        // A window cut by a release invoked before the acquire's own ok cannot be: counted, never dropped
        // silently (with well-formed histories a release follows its acquire, so this stays 0).
        if (w.end_ns <= w.start_ns) {
          ++cut_at_once;
          continue;
        }
        live.push_back(&w);
      }
      window_count += static_cast<int64_t>(live.size());
      auto by_start = [](const Window* a, const Window* b) { return a->start_ns < b->start_ns; };
      if (!std::is_sorted(live.begin(), live.end(), by_start)) {  // a stable sort by start
        std::vector<int64_t> starts(live.size());
        for (size_t i = 0; i < live.size(); ++i) starts[i] = live[i]->start_ns;
        std::vector<const Window*> sorted;
        sorted.reserve(live.size());
        for (size_t i : stable_order(starts)) sorted.push_back(live[i]);
        live.swap(sorted);
      }
      for (const Window* w : live) {
        active.erase(
            std::remove_if(active.begin(), active.end(), [&](const Window* a) { return a->end_ns <= w->start_ns; }),
            active.end());
        for (const Window* a : active) {
          if (a->process == w->process) continue;
          const int64_t from = w->start_ns, to = std::min(a->end_ns, w->end_ns);
          ++overlaps;
          total_overlap_ns += to - from;
          max_overlap_ns = std::max(max_overlap_ns, to - from);
          if (r.anomalies.size() >= kMaxAnomalies) continue;
          std::vector<int64_t> ops = arena.ops(*a);
          const std::vector<int64_t> w_ops = arena.ops(*w);
          ops.insert(ops.end(), w_ops.begin(), w_ops.end());
          std::sort(ops.begin(), ops.end());
          ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
          r.anomalies.push_back(
              {{"kind", "double-grant"},
               {"description", process_name(a->process) + " and " + process_name(w->process) +
                                   " both held " + key + " within their leases for " + format_duration_ms(to - from) +
                                   " from t=" + format_time_s(from) + " (" + process_name(a->process) +
                                   "'s hold ran to t=" + format_time_s(a->end_ns) +
                                   " (its lease's end, its release or a failed extend, whichever came first), " +
                                   process_name(w->process) + "'s began at its acquire's ok, op " +
                                   std::to_string(w->op1) + ")"},
               {"ops", ops},
               {"key", key},
               {"processes", {a->process, w->process}},
               {"from_ns", from},
               {"to_ns", to},
               {"overlap_ms", static_cast<double>(to - from) / 1e6}});
        }
        active.push_back(w);
      }
    }
    for (auto& n : notes) r.anomalies.push_back(std::move(n));

    r.stats = {{"ok_acquires", ok_acquires},
               {"acquires_without_validity", without_validity},
               {"validity_from_ttl", derived},
               {"windows", window_count},
               {"windows_cut_before_ok", cut_at_once},
               {"expired_grants", expired_grants},
               {"extends_applied", extends_applied},
               {"extends_without_validity", extends_without_validity},
               {"double_grants", overlaps},
               {"lost_before_release_or_extend", lost},
               {"total_overlap_ms", static_cast<double>(total_overlap_ns) / 1e6},
               {"max_overlap_ms", static_cast<double>(max_overlap_ns) / 1e6}};
    const std::string lost_note = lost > 0 ? "; " + std::to_string(lost) + (lost > 1 ? " releases or extends" : " release or extend") +
                                                 " found the lock already lost (notes)"
                                           : "";
    if (overlaps > 0 || expired_grants > 0) {
      r.valid = Validity::kInvalid;
      std::string s;
      if (overlaps > 0) {
        s = std::to_string(overlaps) + " double grant" + (overlaps > 1 ? "s" : "") + " within leases (longest " +
            format_duration_ms(max_overlap_ns) + ")";
      }
      if (expired_grants > 0) {
        s += (s.empty() ? "" : " and ") + std::to_string(expired_grants) + " grant" + (expired_grants > 1 ? "s" : "") +
             " of an already expired lock";
      }
      r.summary = s + ": " + r.anomalies[0]["description"].get<std::string>();
      if (overlaps + expired_grants > static_cast<int64_t>(kMaxAnomalies))
        r.summary += " (the first " + std::to_string(kMaxAnomalies) + " are listed)";
    } else if (ok_acquires == 0) {
      r.valid = Validity::kUnknown;
      r.summary = "nothing checked: no acquire succeeded, so there are no leases to compare";
    } else if (window_count == 0) {
      r.valid = Validity::kUnknown;
      r.summary = "nothing checked: no acquire reported validity_ms, so lease windows are unknown";
    } else {
      r.summary = "no two processes' lease windows overlap (" + std::to_string(window_count) + " windows";
      if (derived > 0) r.summary += ", " + std::to_string(derived) + " from the TTL (no validity reported)";
      if (without_validity > 0)
        r.summary += ", " + std::to_string(without_validity) + " acquires without validity skipped";
      if (extends_without_validity > 0)
        r.summary += ", " + std::to_string(extends_without_validity) +
                     " ok extends without validity and no TTL given: they stretch no window";
      r.summary += ")" + lost_note;
    }
    return r;
  }
};

}  // namespace

std::unique_ptr<Checker> make_lease_checker() { return std::make_unique<LeaseChecker>(); }

// This checker's line in the registry (checkers/registry.cc): its name, what `lockcheck list` says of it, its factory.
CheckerInfo lease_checker() {
  return {"lease", "no two processes' lease windows (acquire ok .. ok + validity_ms, extends, release) overlap",
          make_lease_checker};
}

}  // namespace lockcheck
