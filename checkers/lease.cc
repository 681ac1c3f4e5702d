// The `lease` checker: the guarantee Redlock claims. Each ok acquire that reports validity_ms gives its process a
// lease window [acquire ok time, acquire invoke time + validity_ms]; the window ends early at the invoke of the
// process's next release of the key, and an ok extend that reports validity_ms stretches it to the extend's
// invoke time + its validity (an ok extend invoked after the window had run out opens a new window from the
// extend's ok time: the client believes it holds the lock again). Two windows of different processes on one
// key that overlap are a violation ("lease-overlap").
//
// Acquires without validity_ms have an unknown window: they are skipped and counted. info acquires and extends
// are unknown too and give no window.
#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include "checkers/checker.h"
#include "checkers/format.h"

namespace lockcheck {

namespace {

constexpr size_t kMaxAnomalies = 1000;

struct Window {
  Process process;
  int64_t start_ns, end_ns;
  std::vector<int64_t> ops;  // acquire invoke + ok, extends, the release invoke that cut it
};

class LeaseChecker : public Checker {
 public:
  std::string name() const override { return "lease"; }

  CheckResult check(const History& h, const CheckOptions&) const override {
    CheckResult r;
    const std::vector<int64_t> pairs = pair_index(h);
    std::map<std::string, std::vector<Window>> windows;  // key -> closed and open windows
    // (key, process) -> index of its current window in windows[key], or -1.
    std::map<std::pair<std::string, Process>, int64_t> current;
    int64_t ok_acquires = 0, without_validity = 0, expired_on_arrival = 0, extends_applied = 0;

    for (size_t i = 0; i < h.size(); ++i) {
      const Op& op = h[i];
      if (!op.is_invoke() || !op.is_client()) continue;
      const bool acquire = op.f == "acquire", extend = op.f == "extend", release = op.f == "release";
      if (!acquire && !extend && !release) continue;
      const auto who = std::make_pair(op.key, op.process);
      auto& ws = windows[op.key];
      auto cur = current.find(who);
      if (release) {
        // The client stops relying on the lock when it starts to release it, whatever the outcome.
        if (cur != current.end() && cur->second >= 0) {
          Window& w = ws[static_cast<size_t>(cur->second)];
          w.end_ns = std::min(w.end_ns, op.time_ns);
          w.ops.push_back(static_cast<int64_t>(i));
          cur->second = -1;
        }
        continue;
      }
      const int64_t c = pairs[i];
      if (c < 0 || !h[static_cast<size_t>(c)].is_ok()) continue;
      const Op& done = h[static_cast<size_t>(c)];
      const std::optional<int64_t> validity = done.validity_ms ? done.validity_ms : op.validity_ms;
      if (acquire) {
        ++ok_acquires;
        if (!validity) {
          ++without_validity;
          current[who] = -1;
          continue;
        }
        ws.push_back(Window{op.process, done.time_ns, op.time_ns + *validity * 1000000,
                            {static_cast<int64_t>(i), c}});
        current[who] = static_cast<int64_t>(ws.size()) - 1;
        continue;
      }
      // extend
      if (!validity || cur == current.end() || cur->second < 0) continue;
      Window& w = ws[static_cast<size_t>(cur->second)];
      const int64_t new_end = op.time_ns + *validity * 1000000;
      ++extends_applied;
      if (op.time_ns <= w.end_ns) {
        w.end_ns = std::max(w.end_ns, new_end);
        w.ops.push_back(static_cast<int64_t>(i));
        w.ops.push_back(c);
      } else {
        ws.push_back(Window{op.process, done.time_ns, new_end, {static_cast<int64_t>(i), c}});
        cur->second = static_cast<int64_t>(ws.size()) - 1;
      }
    }

    int64_t overlaps = 0, total_overlap_ns = 0, max_overlap_ns = 0, window_count = 0;
    for (auto& [key, ws] : windows) {
      std::vector<const Window*> live;
      for (const Window& w : ws) {
        if (w.end_ns <= w.start_ns) {
          ++expired_on_arrival;
          continue;
        }
        live.push_back(&w);
      }
      window_count += static_cast<int64_t>(live.size());
      std::stable_sort(live.begin(), live.end(),
                       [](const Window* a, const Window* b) { return a->start_ns < b->start_ns; });
      std::vector<const Window*> active;
      for (const Window* w : live) {
        active.erase(std::remove_if(active.begin(), active.end(),
                                    [&](const Window* a) { return a->end_ns <= w->start_ns; }),
                     active.end());
        for (const Window* a : active) {
          if (a->process == w->process) continue;
          const int64_t from = w->start_ns, to = std::min(a->end_ns, w->end_ns);
          ++overlaps;
          total_overlap_ns += to - from;
          max_overlap_ns = std::max(max_overlap_ns, to - from);
          if (r.anomalies.size() >= kMaxAnomalies) continue;
          std::vector<int64_t> ops = a->ops;
          ops.insert(ops.end(), w->ops.begin(), w->ops.end());
          std::sort(ops.begin(), ops.end());
          ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
          r.anomalies.push_back(
              {{"kind", "lease-overlap"},
               {"description", "processes " + std::to_string(a->process) + " and " + std::to_string(w->process) +
                                   " both held " + key + " for " + format_duration_ms(to - from) + " from t=" +
                                   format_time_s(from) + " by their leases (process " +
                                   std::to_string(a->process) + "'s lease ran to t=" + format_time_s(a->end_ns) +
                                   ", process " + std::to_string(w->process) + "'s began at its acquire's ok)"},
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

    r.stats = {{"ok_acquires", ok_acquires},
               {"acquires_without_validity", without_validity},
               {"windows", window_count},
               {"windows_expired_before_ok", expired_on_arrival},
               {"extends_applied", extends_applied},
               {"overlaps", overlaps},
               {"total_overlap_ms", static_cast<double>(total_overlap_ns) / 1e6},
               {"max_overlap_ms", static_cast<double>(max_overlap_ns) / 1e6}};
    if (overlaps > 0) {
      r.valid = Validity::kInvalid;
      r.summary = std::to_string(overlaps) + " lease overlap" + (overlaps > 1 ? "s" : "") + " (longest " +
                  format_duration_ms(max_overlap_ns) + "): " + r.anomalies[0]["description"].get<std::string>();
      if (overlaps > static_cast<int64_t>(kMaxAnomalies))
        r.summary += " (the first " + std::to_string(kMaxAnomalies) + " are listed)";
    } else if (ok_acquires == 0) {
      r.summary = "no successful acquires: no leases to check";
    } else if (without_validity == ok_acquires) {
      r.summary = "no acquire reported validity_ms: lease windows are unknown, nothing checked";
    } else {
      r.summary = "no two processes' lease windows overlap (" + std::to_string(window_count) + " windows";
      if (without_validity > 0) r.summary += ", " + std::to_string(without_validity) + " acquires without validity skipped";
      r.summary += ")";
    }
    return r;
  }
};

}  // namespace

std::unique_ptr<Checker> make_lease_checker() { return std::make_unique<LeaseChecker>(); }

}  // namespace lockcheck
