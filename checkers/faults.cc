// The `faults` checker: did the faults the run planned take effect? A run under a nemesis whose faults never
// happened has tested nothing of what it claims, and must not pass as VALID. From the nemesis ops alone:
//   a start op that completed ok applied its fault (info: it may have been applied only in part);
//   client-pause is special: its start only arms a pause, which takes effect when a holder reaches its pause
//   point; the stop op lists what fired (value.detail.paused).
// Holder targeting (--nemesis-targeting holder): each start says whether it was aimed at the holder
// (detail.aimed) and, when not, why (detail.not_aimed_because: e.g. no node had the keys the client reported);
// counted per fault as aimed / not_aimed with the reasons, in the summary, and listed as a note per fault.
// Verdict: unknown when some kind of fault was started but never took effect ("client-pause armed 5 times, fired
// 0"), or when the history has no fault at all; valid otherwise. Never invalid: it judges the test, not the lock.
#include <map>
#include <memory>

#include "checkers/checker.h"

namespace lockcheck {

namespace {

struct FaultCount {
  int64_t started = 0;    // start ops invoked
  int64_t applied = 0;    // start ops that completed ok
  int64_t uncertain = 0;  // start ops that completed info
  int64_t fired = 0;      // client-pause: pauses taken
  int64_t aimed = 0;      // holder targeting: starts aimed at the holder
  int64_t not_aimed = 0;  // holder targeting: starts that found nothing to aim at
  std::map<std::string, int64_t> not_aimed_because;
  int64_t first_not_aimed = -1;  // history index of the first
};

class FaultsChecker : public Checker {
 public:
  std::string name() const override { return "faults"; }

  CheckResult check(const History& h, const CheckOptions&) const override {
    CheckResult r;
    std::map<std::string, FaultCount> counts;
    for (const Op& op : h) {
      if (op.is_client() || !op.value.is_object()) continue;
      const std::string fault = op.value.value("fault", "");
      const std::string phase = op.value.value("phase", "");
      if (fault.empty()) continue;
      FaultCount& c = counts[fault];
      if (phase == "start") {
        if (op.is_invoke()) ++c.started;
        const auto detail = op.value.value("detail", nlohmann::json::object());
        if (op.is_invoke() && detail.is_object() && detail.contains("aimed") && detail["aimed"].is_boolean()) {
          if (detail["aimed"].get<bool>()) {
            ++c.aimed;
          } else {
            ++c.not_aimed;
            ++c.not_aimed_because[detail.value("not_aimed_because", std::string("no reason given"))];
            if (c.first_not_aimed < 0) c.first_not_aimed = op.index;
          }
        }
        if (op.is_ok()) ++c.applied;
        if (op.is_info()) ++c.uncertain;
      } else if (phase == "stop" && !op.is_invoke() && fault == "client-pause") {
        const auto detail = op.value.value("detail", nlohmann::json::object());
        if (detail.is_object() && detail.contains("paused") && detail["paused"].is_array())
          c.fired += static_cast<int64_t>(detail["paused"].size());
      }
    }
    nlohmann::json per = nlohmann::json::object();
    std::string summary, never;
    for (const auto& [fault, c] : counts) {
      const bool is_pause = fault == "client-pause";
      const int64_t effective = is_pause ? c.fired : c.applied + c.uncertain;
      per[fault] = {{"started", c.started}, {"applied", c.applied}, {"uncertain", c.uncertain}};
      if (is_pause) per[fault]["fired"] = c.fired;
      std::string line = is_pause ? fault + " armed " + std::to_string(c.applied) + " time" +
                                        (c.applied == 1 ? "" : "s") + ", fired " + std::to_string(c.fired)
                                  : fault + " started " + std::to_string(c.started) + ", applied " +
                                        std::to_string(c.applied) +
                                        (c.uncertain ? " (+" + std::to_string(c.uncertain) + " in part)" : "");
      if (c.aimed + c.not_aimed > 0) {
        per[fault]["aimed"] = c.aimed;
        per[fault]["not_aimed"] = c.not_aimed;
        per[fault]["not_aimed_because"] = c.not_aimed_because;
        line += ", aimed at the holder " + std::to_string(c.aimed) + " of " + std::to_string(c.aimed + c.not_aimed);
        if (c.not_aimed > 0) {
          std::string reasons;
          for (const auto& [why, n] : c.not_aimed_because)
            reasons += (reasons.empty() ? "" : "; ") + why + (n > 1 ? " (" + std::to_string(n) + "x)" : "");
          r.anomalies.push_back(
              {{"kind", "fault-not-aimed"},
               {"severity", "note"},
               {"description", fault + ": " + std::to_string(c.not_aimed) + " of " +
                                   std::to_string(c.aimed + c.not_aimed) +
                                   " holder-targeted starts were not aimed at the holder (they hit the planned "
                                   "targets): " + reasons},
               {"ops", nlohmann::json::array({c.first_not_aimed})}});
          line += " (not aimed: " + reasons + ")";
        }
      }
      summary += (summary.empty() ? "" : "; ") + line;
      if (c.started > 0 && effective == 0) {
        never += (never.empty() ? "" : "; ") + line;
        r.anomalies.push_back({{"kind", "fault-never-took-effect"},
                               {"severity", "note"},
                               {"description", line + ": the run did not test what it planned"},
                               {"ops", nlohmann::json::array()}});
      }
    }
    r.stats = {{"faults", per}};
    if (counts.empty()) {
      r.valid = Validity::kUnknown;
      r.summary = "nothing checked: no fault in the history";
    } else if (!never.empty()) {
      r.valid = Validity::kUnknown;
      r.summary = "planned faults never took effect (" + never + "): the run did not test what it planned";
    } else {
      r.summary = summary;
    }
    return r;
  }
};

}  // namespace

std::unique_ptr<Checker> make_faults_checker() { return std::make_unique<FaultsChecker>(); }

// This checker's line in the registry (checkers/registry.cc): its name, what `lockcheck list` says of it, its factory.
CheckerInfo faults_checker() {
  return {"faults", "the planned faults took effect (client-pause armed vs fired); judged whenever a nemesis runs",
          make_faults_checker};
}

}  // namespace lockcheck
