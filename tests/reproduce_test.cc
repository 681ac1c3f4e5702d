// The shrinking loop of `lockcheck reproduce` with a fake runner (which candidates are tried, when one is kept,
// the budget), the schedule edits it is made of, fault matching by role, and the anomaly kinds it compares.
#include "harness/reproduce.h"

#include <gtest/gtest.h>

#include <functional>
#include <sstream>

#include "core/exit_codes.h"
#include "harness/rerun.h"
#include "report/report.h"

namespace lockcheck {
namespace {

using nlohmann::json;

// A schedule of `n` client-pause faults, one every 3 s from 1.5 s, each 1 s long.
Schedule pauses(int n) {
  json plan = json::array();
  for (int i = 0; i < n; ++i) {
    plan.push_back({{"at_ms", 1500 + 3000 * i},
                    {"nemesis", "client-pause"},
                    {"phase", "start"},
                    {"f", "client-pause"},
                    {"targets", {"c" + std::to_string(i % 5)}},
                    {"detail", {{"pause_ms", 2000}}},
                    {"duration_ms", 1000}});
    plan.push_back({{"at_ms", 2500 + 3000 * i}, {"nemesis", "client-pause"}, {"phase", "stop"}, {"f", "client-resume"}});
  }
  return schedule_from_json({{"nemesis", {"client-pause"}}, {"targeting", "holder"}, {"plan", plan}}, "test");
}

ReproCase original_case(int faults = 4) {
  ReproCase c;
  c.change = "baseline";
  c.config.lock = "single";
  c.config.nemesis = {"client-pause"};
  c.config.nemesis_targeting = "holder";
  c.config.time_limit_s = 12;
  c.config.concurrency = 5;
  c.config.keys = 1;
  c.config.seed = 11;
  c.schedule = pauses(faults);
  return c;
}

bool has_fault_at(const Schedule& s, int64_t at_ms) {
  for (const auto& e : s.plan) {
    if (e.phase == Phase::kStart && e.at_ms == at_ms) return true;
  }
  return false;
}

// A fake runner: `reproduces` decides each try; every run takes its time limit plus 2 s of start-up on a fake
// clock; every case run is recorded.
class FakeRunner : public ReproRunner {
 public:
  explicit FakeRunner(std::function<bool(const ReproCase&, int)> reproduces) : reproduces_(std::move(reproduces)) {}
  TrialOutcome run(const ReproCase& c, size_t candidate, int try_index) override {
    if (try_index == 0) cases.push_back(c);
    ++runs;
    clock_s += c.config.time_limit_s + 2.0;
    TrialOutcome t;
    t.reproduced = reproduces_(c, try_index);
    t.exit_code = t.reproduced ? kExitInvalid : kExitValid;
    if (t.reproduced) t.first_anomaly_s = first_s;
    (void)candidate;
    return t;
  }
  double now_s() override { return clock_s; }

  std::vector<ReproCase> cases;
  int runs = 0;
  double clock_s = 0;
  double first_s = 2.2;

 private:
  std::function<bool(const ReproCase&, int)> reproduces_;
};

TEST(ReproduceTest, ShrinksToTheOneFaultThatMattersAndFewerProcesses) {
  // The anomaly (at 5 s) needs the pause at 4.5 s and a run of at least 5 s; anything else is noise.
  FakeRunner runner([](const ReproCase& c, int) { return has_fault_at(c.schedule, 4500) && c.config.time_limit_s >= 5; });
  runner.first_s = 5.0;
  std::ostringstream log;
  ReproduceOptions o;  // 8 of 10
  ShrinkResult r = shrink(original_case(), o, runner, log);
  ASSERT_TRUE(r.reproducible) << log.str();
  ASSERT_GE(r.tried.size(), 4u);
  EXPECT_EQ(r.tried[0].change, "baseline");
  EXPECT_EQ(r.tried[0].reproduced, 10);
  EXPECT_EQ(r.tried[0].faults, 4u);
  // Time limit first: just past the first anomaly (5 s x 1.2 + 1 s, up to the half second).
  EXPECT_EQ(r.tried[1].change, "time limit 12 s -> 7 s");
  EXPECT_TRUE(r.tried[1].kept);
  EXPECT_EQ(r.tried[1].faults, 2u);  // 1.5 s and 4.5 s; the one at 7.5 s is past the cut
  // Then the fault in force at the anomaly, alone.
  EXPECT_EQ(r.tried[2].change, "only client-pause at 4.5 s");
  EXPECT_TRUE(r.tried[2].kept);
  const ReproCase& best = r.best;
  EXPECT_EQ(fault_count(best.schedule), 1u);
  EXPECT_TRUE(has_fault_at(best.schedule, 4500));
  EXPECT_EQ(best.config.time_limit_s, 7);
  EXPECT_EQ(best.config.concurrency, 2);
  EXPECT_EQ(best.config.keys, 1);
  // Dropping the last fault was tried and rejected after 3 misses (it cannot reach 8 of 10 any more).
  bool tried_without = false;
  for (const auto& c : r.tried) {
    if (c.change == "without client-pause at 4.5 s") {
      tried_without = true;
      EXPECT_FALSE(c.kept);
      EXPECT_EQ(c.tries, 3);
      EXPECT_EQ(c.reproduced, 0);
    }
  }
  EXPECT_TRUE(tried_without) << log.str();
  EXPECT_EQ(r.best.change, "processes 5 -> 2");
  // Sliding the pause earlier was tried (to 1 s, then 2.8 s) and rejected: this anomaly needs it at 4.5 s.
  EXPECT_EQ(r.tried[4].change, "faults 3.5 s earlier (first at 1.0 s)");
  EXPECT_FALSE(r.tried[4].kept);
  EXPECT_EQ(r.tried[5].change, "faults 1.8 s earlier (first at 2.8 s)");
  EXPECT_EQ(r.tried[r.best_index].change, "confirm [6]: processes 5 -> 2");  // its rate measured again
  EXPECT_TRUE(r.confirmed);
  EXPECT_EQ(r.stopped, "every candidate tried");
  // Slots folded into the 2 processes that exist.
  for (const auto& e : best.schedule.plan) {
    for (const auto& t : e.fault.targets) EXPECT_TRUE(t == "c0" || t == "c1") << t;
  }
}

// The issue's case: the anomaly comes 2 s after the one fault that matters, wherever that fault is, and the
// schedule (drawn for a 20 s run) put it at 7.5 s. Sliding it to 1 s and cutting again ends the case within a
// third of the original time.
TEST(ReproduceTest, SlidesALateFaultEarlierSoTheCaseEndsSooner) {
  auto fault_at = [](const ReproCase& c) -> std::optional<double> {
    for (const auto& e : c.schedule.plan) {
      if (e.phase == Phase::kStart) return static_cast<double>(e.at_ms) / 1000.0;
    }
    return std::nullopt;
  };
  struct Late : FakeRunner {
    explicit Late(std::function<std::optional<double>(const ReproCase&)> at)
        : FakeRunner([](const ReproCase&, int) { return true; }), at_(std::move(at)) {}
    TrialOutcome run(const ReproCase& c, size_t k, int t) override {
      TrialOutcome o = FakeRunner::run(c, k, t);
      const auto at = at_(c);
      o.reproduced = at && *at + 2.0 <= c.config.time_limit_s - 0.5;
      o.exit_code = o.reproduced ? kExitInvalid : kExitValid;
      if (o.reproduced) o.first_anomaly_s = *at + 2.0; else o.first_anomaly_s.reset();
      return o;
    }
    std::function<std::optional<double>(const ReproCase&)> at_;
  } runner(fault_at);
  ReproCase c = original_case(0);
  c.config.time_limit_s = 20;
  c.schedule = pauses(1);  // one pause at 1.5 s ...
  c.schedule = slid_schedule(c.schedule, -6000);  // ... moved to 7.5 s, as drawn for the long run
  std::ostringstream log;
  ShrinkResult r = shrink(c, ReproduceOptions{}, runner, log);
  ASSERT_TRUE(r.reproducible) << log.str();
  bool slid = false;
  for (const auto& t : r.tried) {
    if (t.change == "faults 6.5 s earlier (first at 1.0 s)") slid = t.kept;
  }
  EXPECT_TRUE(slid) << log.str();
  EXPECT_LE(r.best.config.time_limit_s, 20.0 / 3) << log.str();
  EXPECT_EQ(*fault_at(r.best), 1.0);
  EXPECT_TRUE(r.confirmed);
}

TEST(ReproduceTest, DropsFaultsOneAtATimeWhenTheLoneFaultIsNotEnough) {
  // Needs both the 1.5 s and the 4.5 s pauses (the anomaly at 5 s).
  FakeRunner runner([](const ReproCase& c, int) {
    return has_fault_at(c.schedule, 1500) && has_fault_at(c.schedule, 4500) && c.config.time_limit_s >= 5;
  });
  runner.first_s = 5.0;
  std::ostringstream log;
  ShrinkResult r = shrink(original_case(4), ReproduceOptions{}, runner, log);
  ASSERT_TRUE(r.reproducible);
  EXPECT_EQ(fault_count(r.best.schedule), 2u) << log.str();
  EXPECT_TRUE(has_fault_at(r.best.schedule, 1500));
  EXPECT_TRUE(has_fault_at(r.best.schedule, 4500));
  // The others kept their offsets: nothing moved.
  EXPECT_EQ(r.best.config.time_limit_s, 7.0);  // 5 x 1.2 + 1
  std::vector<std::string> changes;
  for (const auto& c : r.tried) changes.push_back(c.change);
  EXPECT_NE(std::find(changes.begin(), changes.end(), "only client-pause at 4.5 s"), changes.end()) << log.str();
  EXPECT_NE(std::find(changes.begin(), changes.end(), "without client-pause at 4.5 s"), changes.end());
  EXPECT_NE(std::find(changes.begin(), changes.end(), "without client-pause at 1.5 s"), changes.end());
}

TEST(ReproduceTest, TheTimeCutIsJustPastTheFirstAnomalyOfRofNTries) {
  // Try t shows its first anomaly at 2 + t s (2 .. 11 s), and only when the run goes on 1 s past it.
  struct Spread : FakeRunner {
    Spread() : FakeRunner([](const ReproCase&, int) { return true; }) {}
    TrialOutcome run(const ReproCase& c, size_t k, int t) override {
      TrialOutcome o = FakeRunner::run(c, k, t);
      o.reproduced = 2.0 + t <= c.config.time_limit_s - 1.0;
      o.exit_code = o.reproduced ? kExitInvalid : kExitValid;
      if (o.reproduced) o.first_anomaly_s = 2.0 + t; else o.first_anomaly_s.reset();
      return o;
    }
  } runner;
  std::ostringstream log;
  ReproCase c = original_case(0);
  c.config.time_limit_s = 30;
  ShrinkResult r = shrink(c, ReproduceOptions{}, runner, log);
  ASSERT_GE(r.tried.size(), 2u);
  // 8 of 10 tries had shown it by 9 s: 9 x 1.2 + 1 = 11.8, up to 12 s; there all 10 tries still show it.
  EXPECT_EQ(r.tried[1].change, "time limit 30 s -> 12 s") << log.str();
  EXPECT_TRUE(r.tried[1].kept);
  EXPECT_EQ(r.tried[1].reproduced, 10);
  // Cut again from there: 8 of 10 by 9 s again, so 12 s stays; nothing tighter is tried.
  EXPECT_EQ(r.best.config.time_limit_s, 12);
}

TEST(ReproduceTest, KeepsACandidateOnlyAtTheRate) {
  // 7 of 10 reproduce when the time limit is cut: not enough for 8 of 10.
  FakeRunner runner([](const ReproCase& c, int t) { return c.config.time_limit_s >= 12 || t < 7; });
  std::ostringstream log;
  ReproCase one = original_case(1);
  ShrinkResult r = shrink(one, ReproduceOptions{}, runner, log);
  ASSERT_TRUE(r.reproducible);
  for (const auto& c : r.tried) {
    if (c.change.rfind("time limit", 0) == 0) {
      EXPECT_FALSE(c.kept) << c.change;
      EXPECT_EQ(c.reproduced, 7);
      EXPECT_EQ(c.tries, 10);
    }
  }
  EXPECT_EQ(r.best.config.time_limit_s, 12);
  // With 7 of 10 accepted, the cut is kept.
  FakeRunner again([](const ReproCase& c, int t) { return c.config.time_limit_s >= 12 || t < 7; });
  ReproduceOptions lenient;
  lenient.rate = 7;
  ShrinkResult r2 = shrink(one, lenient, again, log);
  EXPECT_LT(r2.best.config.time_limit_s, 12);
}

TEST(ReproduceTest, ALuckyCaseThatFailsItsConfirmationGivesWayToTheOneBefore) {
  // Fewer processes passes 8 of 10 once (tries 0-7 of its first round), then reproduces only half the time.
  int two_process_runs = 0;
  FakeRunner runner([&](const ReproCase& c, int) {
    if (c.config.concurrency != 2) return has_fault_at(c.schedule, 4500) && c.config.time_limit_s >= 5;
    return ++two_process_runs <= 8 || two_process_runs % 2 == 0;
  });
  runner.first_s = 5.0;
  std::ostringstream log;
  ShrinkResult r = shrink(original_case(), ReproduceOptions{}, runner, log);
  std::vector<std::string> changes;
  for (const auto& c : r.tried) changes.push_back(c.change);
  ASSERT_GE(changes.size(), 3u);
  EXPECT_EQ(changes[changes.size() - 2], "confirm [6]: processes 5 -> 2") << log.str();
  EXPECT_FALSE(r.tried[r.tried.size() - 2].kept);
  EXPECT_EQ(changes.back(), "confirm [2]: only client-pause at 4.5 s");
  EXPECT_TRUE(r.tried.back().kept);
  EXPECT_TRUE(r.confirmed);
  EXPECT_EQ(r.best.config.concurrency, 5);
  EXPECT_EQ(fault_count(r.best.schedule), 1u);
  EXPECT_EQ(r.best.change, "only client-pause at 4.5 s");
}

TEST(ReproduceTest, AStoredRunThatDoesNotComeBackIsNotShrunk) {
  FakeRunner runner([](const ReproCase&, int t) { return t % 2 == 0; });
  std::ostringstream log;
  ShrinkResult r = shrink(original_case(), ReproduceOptions{}, runner, log);
  EXPECT_FALSE(r.reproducible);
  ASSERT_EQ(r.tried.size(), 1u);
  EXPECT_EQ(r.tried[0].tries, 6);  // 3 of 6 missed: 8 of 10 out of reach
  EXPECT_NE(r.stopped.find("nothing to shrink"), std::string::npos) << r.stopped;
  EXPECT_EQ(r.best.config.time_limit_s, 12);
}

TEST(ReproduceTest, StopsWithinTheBudgetAndKeepsTheBestSoFar) {
  FakeRunner runner([](const ReproCase& c, int) { return has_fault_at(c.schedule, 1500); });
  std::ostringstream log;
  ReproduceOptions o;
  // 300 s: the baseline (10 x 14 s) and the time cut (10 x 6 s) take 200 s; from then on 60 s (10 x 6 s) are
  // kept back to confirm the cut: dropping the fault (3 x 6 s), sliding it earlier (3 x 6 s), 1 try of fewer
  // processes, then the confirmation.
  o.budget_min = 5;
  ShrinkResult r = shrink(original_case(), o, runner, log);
  EXPECT_TRUE(r.budget_exhausted) << log.str();
  EXPECT_EQ(r.stopped, "budget ran out");
  // Never more than one run's time limit past the budget.
  EXPECT_LE(runner.clock_s, o.budget_min * 60 + r.best.config.time_limit_s + 0.001) << runner.clock_s;
  ASSERT_GE(r.tried.size(), 5u);
  const CandidateRecord& fewer = r.tried[r.tried.size() - 2];
  EXPECT_EQ(fewer.change, "processes 5 -> 2");
  EXPECT_NE(fewer.note.find("budget ran out after 1 tries (the rest confirms the smallest case)"), std::string::npos)
      << fewer.note;
  EXPECT_FALSE(fewer.kept);
  EXPECT_EQ(r.tried.back().change, "confirm [1]: time limit 12 s -> 4 s");
  EXPECT_TRUE(r.tried.back().kept);
  EXPECT_EQ(r.tried.back().tries, 10);
  EXPECT_TRUE(r.confirmed);
  EXPECT_EQ(r.best_index, r.tried.back().index);
  EXPECT_EQ(r.best.config.time_limit_s, 4);  // the cut, kept and confirmed before the budget ran out
  // A budget too small for the baseline: nothing is kept, the original is the best.
  FakeRunner small([](const ReproCase&, int) { return true; });
  o.budget_min = 1;
  ShrinkResult r2 = shrink(original_case(), o, small, log);
  EXPECT_FALSE(r2.reproducible);
  EXPECT_LE(small.clock_s, 60 + 12 + 2 + 0.001);
}

TEST(ReproduceTest, FailedRunsAreNotTriesAndKeepFailingStopsTheSearch) {
  // Every fifth run of the baseline fails (exit 3, e.g. a full disk): it is run again, not counted.
  struct Flaky : FakeRunner {
    Flaky() : FakeRunner([](const ReproCase& c, int) { return has_fault_at(c.schedule, 1500); }) {}
    TrialOutcome run(const ReproCase& c, size_t k, int t) override {
      TrialOutcome o = FakeRunner::run(c, k, t);
      if (k == 0 && t % 5 == 4) o.exit_code = kExitHarness, o.reproduced = false;
      if (k == 1) o.exit_code = kExitHarness, o.reproduced = false;  // the time cut's runs all fail
      return o;
    }
  } runner;
  std::ostringstream log;
  ShrinkResult r = shrink(original_case(), ReproduceOptions{}, runner, log);
  ASSERT_GE(r.tried.size(), 2u);
  EXPECT_EQ(r.tried[0].tries, 10);
  EXPECT_EQ(r.tried[0].reproduced, 10);
  EXPECT_EQ(r.tried[0].failed, 2);  // attempts 4 and 9
  EXPECT_TRUE(r.reproducible);
  EXPECT_EQ(r.tried[1].failed, 3);
  EXPECT_EQ(r.tried[1].tries, 0);
  EXPECT_TRUE(r.runs_failing);
  EXPECT_EQ(r.stopped, "runs failed (harness or cluster errors)");
  EXPECT_EQ(r.tried.size(), 2u) << log.str();
  EXPECT_EQ(r.best.config.time_limit_s, 12);
}

TEST(ReproduceTest, InterruptStopsTheShrink) {
  struct Interrupting : FakeRunner {
    Interrupting() : FakeRunner([](const ReproCase&, int) { return true; }) {}
    TrialOutcome run(const ReproCase& c, size_t k, int t) override {
      TrialOutcome o = FakeRunner::run(c, k, t);
      o.interrupted = runs > 12;
      return o;
    }
  } runner;
  std::ostringstream log;
  ShrinkResult r = shrink(original_case(), ReproduceOptions{}, runner, log);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(runner.runs, 13);
  EXPECT_EQ(r.stopped, "interrupted");
}

TEST(ReproduceScheduleTest, ReadsDropsAndCutsFaults) {
  Schedule s = pauses(3);
  ASSERT_EQ(s.plan.size(), 6u);
  EXPECT_EQ(s.plan[0].fault.stop_f, "client-resume");  // from its stop entry
  EXPECT_EQ(fault_count(s), 3u);
  Schedule w = without_fault(s, schedule_faults(s)[1]);
  ASSERT_EQ(w.plan.size(), 4u);
  EXPECT_EQ(w.plan[2].at_ms, 7500);
  EXPECT_EQ(w.plan[2].step, 2);
  EXPECT_EQ(w.plan[3].start_step, 2);  // renumbered with its start
  Schedule c = cut_schedule(s, 5000);
  EXPECT_EQ(c.plan.size(), 3u);  // the second fault starts at 4.5 s, its stop at 5.5 s is past the cut
  EXPECT_DOUBLE_EQ(c.time_limit_s, 5.0);
  // Round trip through schedule.json.
  Schedule back = schedule_from_json(to_json(w), "again");
  ASSERT_EQ(back.plan.size(), w.plan.size());
  EXPECT_EQ(back.plan[2].fault.detail, w.plan[2].fault.detail);
  EXPECT_EQ(back.plan[2].fault.stop_f, "client-resume");
}

TEST(ReproduceScheduleTest, MalformedSchedulesNameTheField) {
  auto error_of = [](const json& j) {
    try {
      schedule_from_json(j, "s.json");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of(json::array()).find("s.json: a schedule must be a JSON object"), std::string::npos);
  EXPECT_NE(error_of({{"nemesis", {"kill"}}}).find("plan"), std::string::npos);
  EXPECT_NE(error_of({{"plan", {{{"nemesis", "kill"}, {"phase", "start"}, {"f", "kill"}}}}}).find("plan[0].at_ms"),
            std::string::npos);
  EXPECT_NE(error_of({{"plan", {{{"at_ms", 5}, {"nemesis", "kill"}, {"phase", "begin"}, {"f", "kill"}}}}})
                .find("plan[0].phase"),
            std::string::npos);
  EXPECT_NE(error_of({{"plan", {{{"at_ms", 5}, {"nemesis", "kill"}, {"phase", "start"}, {"f", "kill"}}}}})
                .find("plan[0].duration_ms"),
            std::string::npos);
  EXPECT_NE(error_of({{"nemesis", {"kill"}},
                      {"plan", {{{"at_ms", 5}, {"nemesis", "pause"}, {"phase", "stop"}, {"f", "resume"}}}}})
                .find("'pause' is not in the schedule's \"nemesis\" list"),
            std::string::npos);
  EXPECT_NE(error_of({{"targeting", "everyone"}, {"plan", json::array()}}).find("targeting"), std::string::npos);
  // Integers: a seed that is not one was ignored in silence (the run took another seed), an at_ms or duration_ms
  // above INT64_MAX was wrapped to a negative number.
  EXPECT_NE(error_of({{"seed", -3}, {"plan", json::array()}}).find("s.json: seed: not an integer >= 0"),
            std::string::npos);
  EXPECT_NE(error_of({{"seed", "7"}, {"plan", json::array()}}).find("seed"), std::string::npos);
  EXPECT_NE(error_of(json::parse(R"({"plan": [{"at_ms": 9223372036854775808, "nemesis": "kill", "phase": "start",
                                             "f": "kill", "duration_ms": 5}]})"))
                .find("plan[0].at_ms"),
            std::string::npos);
  EXPECT_NE(error_of({{"plan", {{{"at_ms", 5}, {"nemesis", "kill"}, {"phase", "start"}, {"f", "kill"},
                                 {"duration_ms", 2.5}}}}})
                .find("plan[0].duration_ms"),
            std::string::npos);
  // Targets are names: a number among them was dropped in silence when the fault was applied.
  EXPECT_NE(error_of({{"plan", {{{"at_ms", 5}, {"nemesis", "kill"}, {"phase", "start"}, {"f", "kill"},
                                 {"duration_ms", 5}, {"targets", {"n1", 2}}}}}})
                .find("s.json: plan[0].targets: not an array of names"),
            std::string::npos);
  Schedule s = pauses(1);
  try {
    check_schedule_nemeses(s, {"kill"}, "--schedule");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--schedule: step 0 is a fault of nemesis 'client-pause'"),
              std::string::npos)
        << e.what();
  }
}

Op nemesis_start(const std::string& f, const std::string& fault, json targets, json detail) {
  Op op;
  op.process = kNemesis;
  op.type = OpType::kInvoke;
  op.f = f;
  op.value = {{"fault", fault}, {"phase", "start"}, {"targets", targets}, {"detail", detail}};
  return op;
}

TEST(ReproduceRoleTest, FaultsMatchByRoleNotByTheNamesTheAimPicked) {
  // A clock run where holder targeting picked other nodes and another client in the rerun.
  History a, b;
  for (int i = 0; i < 4; ++i) {
    a.push_back(nemesis_start("clock-bump", "clock", {"n1", "n2", "n3"}, {{"mode", "bump"}, {"aimed", true}}));
    b.push_back(nemesis_start("clock-bump", "clock", {"n3", "n4", "n5"}, {{"mode", "bump"}, {"aimed", true}}));
    a.push_back(nemesis_start("partition", "partition", {"c1", "n4"}, {{"mode", "client-cut"}, {"aimed", true}}));
    b.push_back(nemesis_start("partition", "partition", {"c0", "n2"}, {{"mode", "client-cut"}, {"aimed", true}}));
  }
  auto [matched, total] = fault_timeline_match(a, b);
  EXPECT_EQ(total, 8u);
  EXPECT_EQ(matched, 8u);
  EXPECT_EQ(fault_role(a[0]), "holder's nodes");
  EXPECT_EQ(fault_role(a[1]), "holder and holder's nodes");
  // Another mode, or a fault that fell back to the plan, is not the same fault.
  b[0].value["detail"]["mode"] = "strobe";
  b[2].value["detail"]["aimed"] = false;
  EXPECT_EQ(fault_timeline_match(a, b).first, 6u);
  EXPECT_EQ(fault_role(b[2]), "random nodes");
  EXPECT_EQ(fault_role(nemesis_start("client-pause", "client-pause", {"c3"}, json::object())), "random client");
  EXPECT_EQ(fault_role(nemesis_start("kill", "kill", {"n2"}, json::object())), "random node");
}

TEST(ReproduceKindsTest, KindsComeFromTheCheckersKindFieldEarliestFirst) {
  json results = {
      {"valid", "invalid"},
      {"checkers",
       {{{"checker", "lease"},
         {"valid", "valid"},
         {"anomalies", {{{"kind", "lost-before-release"}, {"severity", "note"}, {"from_ns", 1}}}}},
        {{"checker", "mutex"},
         {"valid", "invalid"},
         {"anomalies",
          {{{"kind", "stale-holder"}, {"from_ns", 5000000000}},
           {{"kind", "double-grant"}, {"from_ns", 1000000000}, {"at_ns", 3000000000}},
           {{"kind", "stale-holder"}, {"from_ns", 2000000000}},
           {{"kind", "harness-stall"}, {"severity", "note"}, {"from_ns", 1}}}}},
        {{"checker", "liveness"}, {"valid", "invalid"}, {"anomalies", {{{"kind", "stuck-lock"}}}}}}}};
  auto kinds = anomaly_kinds(results, nullptr);
  ASSERT_EQ(kinds.size(), 3u);
  EXPECT_EQ(kinds[0].kind.str(), "mutex:stale-holder");
  EXPECT_EQ(*kinds[0].first_ns, 2000000000);
  EXPECT_EQ(kinds[1].kind.str(), "mutex:double-grant");
  EXPECT_EQ(kinds[2].kind.str(), "liveness:stuck-lock");
  EXPECT_FALSE(kinds[2].first_ns);
}

TEST(ReproduceReportTest, TheReportHasAMinimalReproductionSection) {
  json config = {{"results_dir", "results"}};
  json results = {{"run_id", "r1"}, {"valid", "invalid"}, {"checkers", json::array()}};
  History h;
  std::string html = render_report(config, h, results);
  EXPECT_NE(html.find("<h2>Minimal reproduction</h2>"), std::string::npos);
  EXPECT_NE(html.find("lockcheck reproduce results/r1"), std::string::npos);
  results["reproduction"] = {
      {"anomaly", {{"checker", "mutex"}, {"kind", "stale-holder"}}},
      {"tries", 10},
      {"rate", 8},
      {"stopped", "every candidate tried"},
      {"candidates", 5},
      {"elapsed_s", 300.0},
      {"reproducible", true},
      {"original", {{"time_limit_s", 30.0}, {"faults", 8}, {"concurrency", 5}, {"keys", 1}, {"reproduced", 10}, {"tries", 10}}},
      {"minimal", {{"time_limit_s", 4.0}, {"faults", 1}, {"concurrency", 2}, {"keys", 1}, {"reproduced", 9}, {"tries", 10}}},
      {"command", "lockcheck run --config results/r1/repro/config.json --schedule results/r1/repro/schedule.json"}};
  html = render_report(config, h, results);
  EXPECT_NE(html.find("mutex:stale-holder"), std::string::npos);
  EXPECT_NE(html.find("id=\"repro-command\">lockcheck run --config results/r1/repro/config.json"), std::string::npos);
  EXPECT_NE(html.find("9 of 10"), std::string::npos);
  // A valid run has no such section.
  json valid = {{"run_id", "r2"}, {"valid", "valid"}, {"checkers", json::array()}};
  EXPECT_EQ(render_report(config, h, valid).find("Minimal reproduction"), std::string::npos);
}

}  // namespace
}  // namespace lockcheck
