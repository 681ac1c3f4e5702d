// The `renewal` checker: judges extends. A process's lease on a key is renewed by its ok acquire and each ok
// extend after it; a failed extend or a release ends it. An ok extend by p is a "resurrected-lock" when another
// process q had an ok acquire of the key that completed after p's last renewal and before p's extend was
// invoked: q held the lock in between, so p's lease did not last, yet p was told that it still holds the lock.
// How the extend succeeded is not in the history (re-created by SET NX once the key was gone, q's key
// overwritten, a client that does not look): the message says only what the history shows. An extend that fails
// is the honest outcome (the client learns that the lock is lost) and is only counted.
//
// Extends by a process without a lease on the key (none acquired, or ended by a release or a failed extend) are
// counted and skipped. No extend at all: unknown (nothing to judge).
#include <algorithm>
#include <memory>
#include <unordered_map>

#include "checkers/checker.h"
#include "checkers/format.h"

namespace lockcheck {

namespace {


struct Grant {
  int64_t ok_ns;
  Process process;
  int64_t invoke, ok;  // history indices
};

class RenewalChecker : public Checker {
 public:
  std::string name() const override { return "renewal"; }

  CheckResult check(const History& h, const CheckOptions& opts) const override {
    static const Atom kAcquire("acquire"), kExtend("extend"), kRelease("release");
    CheckResult r;
    std::vector<int64_t> scratch;
    const std::vector<int64_t>& pairs = pairs_of(h, opts, &scratch);
    std::unordered_map<Atom, std::vector<Grant>> acquires;  // ok acquires per key, in completion order
    // (key, p) -> p's last renewal.
    struct WhoHash {
      size_t operator()(const std::pair<Atom, Process>& w) const noexcept {
        return AtomHash()(w.first) * 31 + std::hash<Process>()(w.second);
      }
    };
    std::unordered_map<std::pair<Atom, Process>, Grant, WhoHash> lease;
    int64_t extends = 0, ok_extends = 0, failed = 0, info = 0, without_lease = 0, resurrected = 0;

    for (size_t i = 0; i < h.size(); ++i) {
      prefetch_pair(h, pairs, i);
      const Op& op = h[i];
      if (!op.is_client() || op.key.empty()) continue;
      const auto who = std::make_pair(op.key, op.process);
      if (op.f == kAcquire && op.is_ok()) {
        const int64_t inv = pairs[i];
        Grant g{op.time_ns, op.process, inv >= 0 ? inv : static_cast<int64_t>(i), static_cast<int64_t>(i)};
        acquires[op.key].push_back(g);
        lease[who] = g;
        continue;
      }
      if (op.f == kRelease && op.is_invoke()) {
        lease.erase(who);
        continue;
      }
      if (op.f != kExtend || !op.is_invoke()) continue;
      ++extends;
      const int64_t c = pairs[i];
      const Op* done = c >= 0 ? &h[static_cast<size_t>(c)] : nullptr;
      if (!done || done->is_info()) {
        ++info;
        continue;
      }
      auto l = lease.find(who);
      if (done->is_fail()) {
        ++failed;
        if (l != lease.end()) lease.erase(l);
        continue;
      }
      ++ok_extends;
      const Grant renewed{done->time_ns, op.process, static_cast<int64_t>(i), c};
      if (l == lease.end()) {
        ++without_lease;
        lease[who] = renewed;
        continue;
      }
      const Grant last = l->second;
      l->second = renewed;
      // Another process's ok acquire completed in (last renewal, this extend's invoke)?
      const auto& acq = acquires[op.key];
      auto it =
          std::upper_bound(acq.begin(), acq.end(), last.ok_ns, [](int64_t t, const Grant& g) { return t < g.ok_ns; });
      for (; it != acq.end() && it->ok_ns < op.time_ns; ++it) {
        if (it->process == op.process) continue;
        ++resurrected;
        if (r.anomalies.size() < kMaxAnomalies) {
          std::vector<int64_t> ops = {last.invoke, last.ok, it->invoke, it->ok, static_cast<int64_t>(i), c};
          std::sort(ops.begin(), ops.end());
          ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
          const std::string p = process_name(op.process), q = process_name(it->process);
          r.anomalies.push_back(
              {{"kind", "resurrected-lock"},
               {"description", p + "'s extend of " + op.key + " succeeded at t=" +
                                   format_time_s(done->time_ns) + " although " + q + " acquired it at t=" +
                                   format_time_s(it->ok_ns) + ", after " + p + "'s last renewal (t=" +
                                   format_time_s(last.ok_ns) + ") and before this extend was invoked (t=" +
                                   format_time_s(op.time_ns) + "): " + p +
                                   "'s lease did not last, yet it was told that it still holds the lock"},
               {"ops", ops},
               {"key", op.key},
               {"processes", {op.process, it->process}},
               {"from_ns", it->ok_ns},
               {"to_ns", done->time_ns}});
        }
        break;  // one anomaly per extend
      }
    }

    r.stats = {{"extends", extends},
               {"ok_extends", ok_extends},
               {"failed_extends", failed},
               {"info_extends", info},
               {"extends_without_lease", without_lease},
               {"resurrected", resurrected}};
    if (resurrected > 0) {
      r.valid = Validity::kInvalid;
      r.summary = std::to_string(resurrected) + " resurrected lock" + (resurrected > 1 ? "s" : "") + ": " +
                  r.anomalies[0]["description"].get<std::string>();
    } else if (extends == 0) {
      r.valid = Validity::kUnknown;
      r.summary = "nothing checked: no extends";
    } else {
      r.summary = std::to_string(ok_extends) + " ok extends, none after another process held the lock; " +
                  std::to_string(failed) + " failed (the lock was lost, and the client was told)";
    }
    return r;
  }
};

}  // namespace

std::unique_ptr<Checker> make_renewal_checker() { return std::make_unique<RenewalChecker>(); }

// This checker's line in the registry (checkers/registry.cc): its name, what `lockcheck list` says of it, its factory.
CheckerInfo renewal_checker() {
  return {"renewal",
          "an ok extend after another process acquired the key since the extender's last lease is a "
          "resurrected lock",
          make_renewal_checker};
}

}  // namespace lockcheck
