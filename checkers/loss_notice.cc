// The `loss-notice` checker: how timely a lock library tells its caller that the lock is gone. Its evidence are
// the loss notices in the history (core/op.h, kLostF: an external client's protocol-2 "lost" event, stamped
// when lockcheck read it).
//
// A hold of key k by process p runs from p's ok acquire of k until p stops using the lock: the invoke of its
// release of k, the completion of an extend of k that did not end ok, or an info op of p (it is retired); holds
// still open run to the end of the history. The hold is TAKEN OVER when another process's ok acquire of k
// completes inside it (the first such acquire counts). For each takeover, p's library warned p by its first loss
// notice for k at or after p's acquire (and before p's next ok acquire of k):
//   warned before   the notice came at or before the other acquire completed (lag <= 0): p was told in time;
//   warned after    it came later (lag > 0): p used a lock it no longer held until the warning;
//   never           no notice came.
// The lag is notice time - the other acquire's completion. An overlap counts up to the warning: it is reported
// from the other acquire to the earlier of the warning and the end of p's hold.
//
// A notice of k that p's library gave while p's acquire of k was pending (after its invoke, before its ok, p not
// holding k then) belongs to the hold that acquire then opened: p was told the lock was lost and then that it
// held it (a lock granted on a lease that had already ended, as etcd's Mutex did for a waiter whose lease expired
// while it waited). Such a hold counts as warned from that notice, and each is listed as a note
// ("grant-after-loss-notice"), which does not change the verdict by itself.
//
// Verdict: unknown when no acquire succeeded, or when holds were taken over but the history holds no loss
// notice at all (the client does not report losses: there is nothing to judge its warnings by); invalid when
// the client does report losses and some taken-over holder was warned after, or never; valid otherwise (no
// hold was taken over, or every holder was warned in time). Stats: takeovers, warned_before, warned_after,
// never, notices, lags_ms (each warned takeover's lag, in history order, at most kMaxAnomalies) and
// median_lag_ms, for the scorecard's per-library figures.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <unordered_map>

#include "checkers/checker.h"
#include "checkers/format.h"

namespace lockcheck {

namespace {

struct NoticeHold {
  Process process;
  Atom key;
  int64_t start_ns, end_ns;  // the ok acquire's completion; the end of the use
  int64_t acquire_ok;        // history index of the ok acquire
  int64_t end_op = -1;       // history index of the op that ended the use; -1: open to the end
  int64_t notices_until_ns = std::numeric_limits<int64_t>::max();  // p's next ok acquire of the key
  int64_t notices_from_ns = 0;  // start_ns, or the acquire's invoke when p held nothing of the key then
};

struct OkAcquire {
  int64_t time_ns;
  Process process;
  int64_t index;
};

struct NoticeAt {
  int64_t time_ns;
  int64_t index;
};

// "-12.3 ms" (a lag may be negative: warned before).
std::string notice_lag_text(double ms) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f ms", ms);
  return buf;
}

class LossNoticeChecker : public Checker {
 public:
  std::string name() const override { return "loss-notice"; }

  CheckResult check(const History& h, const CheckOptions&) const override {
    static const Atom kAcquire("acquire"), kExtend("extend"), kRelease("release");
    CheckResult r;
    r.checker = name();
    std::vector<NoticeHold> holds;
    std::map<std::pair<Process, Atom>, size_t> open;  // (process, key) -> its open hold in holds
    std::unordered_map<Atom, std::vector<OkAcquire>, AtomHash> acquires;
    std::map<std::pair<Process, Atom>, std::vector<NoticeAt>> notices;
    std::map<std::pair<Process, Atom>, size_t> last_hold;  // (process, key) -> its latest hold
    std::map<std::pair<Process, Atom>, int64_t> pending;   // (process, key) -> invoke of its pending acquire,
                                                           // when it held nothing of the key then
    int64_t notice_count = 0, ok_acquires = 0, end_ns = 0;

    const auto close = [&](std::map<std::pair<Process, Atom>, size_t>::iterator it, const Op& op) {
      NoticeHold& hd = holds[it->second];
      hd.end_ns = op.time_ns;
      hd.end_op = op.index;
      open.erase(it);
    };
    for (const Op& op : h) {
      end_ns = std::max(end_ns, op.time_ns);
      if (!op.is_client()) continue;
      const auto who = std::make_pair(op.process, op.key);
      if (op.is_notice()) {
        ++notice_count;
        notices[who].push_back({op.time_ns, op.index});
        continue;
      }
      if (op.is_invoke()) {
        if (op.f == kRelease) {
          if (auto it = open.find(who); it != open.end()) close(it, op);
        }
        if (op.f == kAcquire && open.find(who) == open.end()) pending[who] = op.time_ns;
        continue;
      }
      int64_t invoked_ns = -1;  // this completion's acquire invoke, when pending
      if (op.f == kAcquire) {
        if (auto it = pending.find(who); it != pending.end()) {
          invoked_ns = it->second;
          pending.erase(it);
        }
      }
      if (op.is_info()) {  // retired: every hold of the process ends
        for (auto it = open.begin(); it != open.end();) {
          auto next = std::next(it);
          if (it->first.first == op.process) close(it, op);
          it = next;
        }
        continue;
      }
      if (op.f == kExtend && !op.is_ok()) {
        if (auto it = open.find(who); it != open.end()) close(it, op);
        continue;
      }
      if (op.f != kAcquire || !op.is_ok()) continue;
      ++ok_acquires;
      acquires[op.key].push_back({op.time_ns, op.process, op.index});
      if (auto it = open.find(who); it != open.end()) close(it, op);
      const int64_t from = invoked_ns >= 0 ? invoked_ns : op.time_ns;
      if (auto l = last_hold.find(who); l != last_hold.end()) holds[l->second].notices_until_ns = from;
      holds.push_back({op.process, op.key, op.time_ns, -1, op.index});
      holds.back().notices_from_ns = from;
      open[who] = holds.size() - 1;
      last_hold[who] = holds.size() - 1;
    }
    for (auto& [who, i] : open) holds[i].end_ns = end_ns;
    for (auto& [key, v] : acquires) {
      std::stable_sort(v.begin(), v.end(),
                       [](const OkAcquire& a, const OkAcquire& b) { return a.time_ns < b.time_ns; });
    }
    for (auto& [who, v] : notices) {
      std::stable_sort(v.begin(), v.end(), [](const NoticeAt& a, const NoticeAt& b) { return a.time_ns < b.time_ns; });
    }

    int64_t takeovers = 0, before = 0, after = 0, never = 0;
    std::vector<int64_t> lags_ns;
    nlohmann::json late = nlohmann::json::array(), notes = nlohmann::json::array();
    for (const NoticeHold& hd : holds) {
      // A notice while the acquire was pending: granted after the library said the lock was lost.
      if (auto n = notices.find({hd.process, hd.key}); n != notices.end() && notes.size() < kMaxAnomalies) {
        for (const NoticeAt& na : n->second) {
          if (na.time_ns < hd.notices_from_ns || na.time_ns > hd.start_ns) continue;
          const std::string p = process_name(hd.process);
          notes.push_back(
              {{"kind", "grant-after-loss-notice"},
               {"severity", "note"},
               {"description", p + "'s acquire of " + hd.key.str() + " answered ok at t=" +
                                   format_time_s(hd.start_ns) + " after its library had said the lock was lost (t=" +
                                   format_time_s(na.time_ns) +
                                   ") while that acquire was pending: it was granted a lock whose lease had already "
                                   "ended"},
               {"ops", {na.index, hd.acquire_ok}},
               {"key", hd.key},
               {"processes", {hd.process}},
               {"from_ns", na.time_ns},
               {"to_ns", hd.start_ns}});
          break;
        }
      }
      const auto& acq = acquires[hd.key];
      // The first other process's ok acquire completing inside the hold (after its start, before its end).
      auto it = std::upper_bound(acq.begin(), acq.end(), hd.start_ns,
                                 [](int64_t t, const OkAcquire& a) { return t < a.time_ns; });
      while (it != acq.end() && it->time_ns < hd.end_ns && it->process == hd.process) ++it;
      if (it == acq.end() || it->time_ns >= hd.end_ns) continue;
      ++takeovers;
      const OkAcquire& other = *it;
      const NoticeAt* warned = nullptr;
      if (auto n = notices.find({hd.process, hd.key}); n != notices.end()) {
        for (const NoticeAt& na : n->second) {
          if (na.time_ns >= hd.notices_from_ns && na.time_ns < hd.notices_until_ns) {
            warned = &na;
            break;
          }
        }
      }
      const std::string p = process_name(hd.process), q = process_name(other.process);
      std::vector<int64_t> ops = {hd.acquire_ok, other.index};
      if (hd.end_op >= 0) ops.push_back(hd.end_op);
      if (warned) {
        const int64_t lag = warned->time_ns - other.time_ns;
        lags_ns.push_back(lag);
        if (lag <= 0) {
          ++before;
          continue;
        }
        ++after;
        ops.push_back(warned->index);
      } else {
        ++never;
      }
      std::sort(ops.begin(), ops.end());
      const int64_t to = warned ? std::min(hd.end_ns, warned->time_ns) : hd.end_ns;
      if (late.size() >= kMaxAnomalies) continue;
      std::string d = q + " acquired " + hd.key.str() + " at t=" + format_time_s(other.time_ns) +
                      " while " + p + " held it (since t=" + format_time_s(hd.start_ns) + "); ";
      d += warned ? p + "'s library warned it that the lock was lost only " +
                        format_duration_ms(warned->time_ns - other.time_ns) + " later (t=" +
                        format_time_s(warned->time_ns) + ")"
                  : p + "'s library never warned it that the lock was lost";
      late.push_back({{"kind", warned ? "late-loss-notice" : "no-loss-notice"},
                      {"description", d},
                      {"ops", ops},
                      {"key", hd.key},
                      {"processes", {hd.process, other.process}},
                      {"from_ns", other.time_ns},
                      {"to_ns", std::max(to, other.time_ns)}});
    }

    nlohmann::json lags_ms = nlohmann::json::array();
    for (size_t i = 0; i < lags_ns.size() && i < kMaxAnomalies; ++i) {
      lags_ms.push_back(static_cast<double>(lags_ns[i]) / 1e6);
    }
    double median_ms = 0;
    if (!lags_ns.empty()) {
      std::vector<int64_t> s = lags_ns;
      std::sort(s.begin(), s.end());
      const size_t n = s.size();
      median_ms = (n % 2 ? static_cast<double>(s[n / 2]) : (static_cast<double>(s[n / 2 - 1]) + s[n / 2]) / 2) / 1e6;
    }
    r.stats = {{"takeovers", takeovers}, {"warned_before", before}, {"warned_after", after}, {"never", never},
               {"notices", notice_count}, {"lags_ms", lags_ms}};
    if (!lags_ns.empty()) r.stats["median_lag_ms"] = median_ms;

    const std::string counts = std::to_string(takeovers) + " hold" + (takeovers == 1 ? "" : "s") +
                               " taken over: warned before " + std::to_string(before) + ", after " +
                               std::to_string(after) + ", never " + std::to_string(never);
    if (ok_acquires == 0) {
      r.valid = Validity::kUnknown;
      r.summary = "nothing checked: no acquire succeeded";
    } else if (takeovers > 0 && notice_count == 0) {
      r.valid = Validity::kUnknown;
      r.summary = counts + "; the client reported no loss notice at all (protocol 2's \"lost\" event), so its "
                           "warnings cannot be judged";
    } else if (after + never > 0) {
      r.valid = Validity::kInvalid;
      r.anomalies = std::move(late);
      r.summary = counts + ": " + r.anomalies[0]["description"].get<std::string>();
    } else if (takeovers == 0) {
      r.summary = "no hold was taken over by another process (" + std::to_string(notice_count) + " loss notice" +
                  (notice_count == 1 ? "" : "s") + ")";
    } else {
      r.summary = counts + "; every holder was warned in time";
    }
    if (!lags_ns.empty()) r.summary += "; median lag " + notice_lag_text(median_ms) + " (notice - the other acquire)";
    r.stats["grants_after_loss_notice"] = static_cast<int64_t>(notes.size());
    if (!notes.empty()) {
      r.summary += "; " + std::to_string(notes.size()) + " grant" + (notes.size() == 1 ? "" : "s") +
                   " after the library had said the lock was lost (notes)";
      for (auto& n : notes) r.anomalies.push_back(std::move(n));
    }
    return r;
  }
};

}  // namespace

std::unique_ptr<Checker> make_loss_notice_checker() { return std::make_unique<LossNoticeChecker>(); }

// This checker's line in the registry (checkers/registry.cc): its name, what `lockcheck list` says of it, its factory.
CheckerInfo loss_notice_checker() {
  return {"loss-notice",
          "a holder whose lock another process acquired was warned by its library (a loss notice) before that "
          "acquire, not after or never",
          make_loss_notice_checker};
}

}  // namespace lockcheck
