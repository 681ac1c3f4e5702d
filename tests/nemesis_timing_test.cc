// Lock-state fault timing without Redis (nemesis/lock_state.h, nemesis/timing.h): the live lock-state view on
// hand-written histories fed op by op, each nemesis's timing rule firing at its moment (and falling back when the
// run is blind), the window arithmetic the driver uses, and the replay of a lock-state run's schedule.json at the
// offsets its faults fired.
#include "nemesis/lock_state.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include "nemesis/schedule.h"
#include "nemesis/timing.h"

namespace lockcheck {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

// Feeds a view hand-written ops, each seen at t0 + ms.
class Feeder {
 public:
  explicit Feeder(int64_t ttl_ms = 1000) : view(ttl_ms) {}

  void op(int64_t ms, Process p, OpType type, const std::string& f, std::optional<int64_t> validity_ms = {},
          const std::string& key = "lock-0") {
    Op o;
    o.index = next_++;
    o.time_ns = ms * 1000000;
    o.process = p;
    o.type = type;
    o.f = f;
    o.key = key;
    if (validity_ms) o.validity_ms = *validity_ms;
    if (type == OpType::kInfo && f != kLostF) o.error = "timeout";
    view.on_op(o, at(ms));
  }
  void invoke(int64_t ms, Process p, const std::string& f) { op(ms, p, OpType::kInvoke, f); }
  void ok(int64_t ms, Process p, const std::string& f, std::optional<int64_t> validity_ms = {}) {
    op(ms, p, OpType::kOk, f, validity_ms);
  }
  SteadyTime at(int64_t ms) const { return t0 + milliseconds(ms); }
  LockSnapshot snap(int64_t ms) const { return view.snapshot(at(ms)); }
  std::string state(int64_t ms) const { return to_string(snap(ms).run_state()); }

  const SteadyTime t0 = std::chrono::steady_clock::now();
  LockStateView view;

 private:
  int64_t next_ = 0;
};

TEST(LockStateViewTest, EmptyIsFreeAndBlind) {
  Feeder f;
  const LockSnapshot s = f.snap(0);
  EXPECT_EQ(s.run_state(), RunLockState::kFree);
  EXPECT_EQ(s.grants, 0u);
  EXPECT_TRUE(s.processes.empty());
  EXPECT_FALSE(s.newest_live());
}

TEST(LockStateViewTest, AValidGrantIsEarlyThenLateThenExpires) {
  Feeder f;
  f.invoke(0, 1, "acquire");
  EXPECT_EQ(f.state(1), "acquiring");
  f.ok(10, 1, "acquire", 1000);  // reported validity: 1000 ms from the ok
  EXPECT_EQ(f.state(10), "held-early");
  EXPECT_EQ(f.state(509), "held-early");
  EXPECT_EQ(f.state(511), "held-late");
  EXPECT_EQ(f.state(1009), "held-late");
  EXPECT_EQ(f.state(1011), "free") << "an expired holding is no live lock";
  const LockSnapshot s = f.snap(20);
  ASSERT_EQ(s.processes.size(), 1u);
  EXPECT_TRUE(s.processes[0].validity_reported);
  EXPECT_EQ(s.processes[0].validity_ms, 1000);
  EXPECT_EQ(s.grants, 1u);
  ASSERT_TRUE(s.newest(LockEventKind::kGrant));
  EXPECT_EQ(s.newest(LockEventKind::kGrant)->process, 1);
}

TEST(LockStateViewTest, WithoutAReportedValidityTheTtlRunsFromTheInvoke) {
  Feeder f(400);
  f.invoke(0, 2, "acquire");
  f.ok(100, 2, "acquire");
  const LockSnapshot s = f.snap(100);
  ASSERT_EQ(s.processes.size(), 1u);
  EXPECT_FALSE(s.processes[0].validity_reported);
  EXPECT_EQ(s.processes[0].validity_ms, 400);
  EXPECT_EQ(f.state(240), "held-early");  // half of [100, 400) is 250
  EXPECT_EQ(f.state(260), "held-late");
  EXPECT_EQ(f.state(401), "free");
}

TEST(LockStateViewTest, AnExtendRenewsTheValidity) {
  Feeder f;
  f.invoke(0, 1, "acquire");
  f.ok(0, 1, "acquire", 500);
  f.invoke(400, 1, "extend");
  EXPECT_EQ(f.state(401), "renewing");
  EXPECT_EQ(f.snap(401).extends, 1u);
  f.ok(410, 1, "extend", 500);
  EXPECT_EQ(f.state(600), "held-early") << "the renewal's validity runs from its ok";
  EXPECT_EQ(f.state(800), "held-late");
  EXPECT_EQ(f.state(911), "free");
  // A failed extend keeps the old validity.
  f.invoke(800, 1, "extend");
  f.op(820, 1, OpType::kFail, "extend");
  EXPECT_EQ(f.state(850), "held-late");
}

TEST(LockStateViewTest, AReleaseFreesTheLock) {
  Feeder f;
  f.invoke(0, 1, "acquire");
  f.ok(1, 1, "acquire", 1000);
  f.invoke(100, 1, "release");
  EXPECT_EQ(f.state(101), "releasing");
  f.ok(102, 1, "release");
  EXPECT_EQ(f.state(103), "free");
  EXPECT_TRUE(f.snap(103).processes.empty());
  ASSERT_TRUE(f.snap(103).newest(LockEventKind::kReleased));
}

TEST(LockStateViewTest, ALossNoticeEndsTheHolding) {
  Feeder f;
  f.invoke(0, 3, "acquire");
  f.ok(1, 3, "acquire", 1000);
  f.op(50, 3, OpType::kInfo, kLostF);
  EXPECT_EQ(f.state(51), "free");
  ASSERT_TRUE(f.snap(51).newest(LockEventKind::kLost));
}

TEST(LockStateViewTest, AnInfoRetiresTheProcess) {
  Feeder f;
  f.invoke(0, 4, "acquire");
  f.ok(1, 4, "acquire", 1000);
  f.invoke(100, 4, "release");
  f.op(600, 4, OpType::kInfo, "release");  // a timeout: the process is retired
  EXPECT_EQ(f.state(601), "free");
  f.invoke(700, 5, "acquire");
  f.op(900, 5, OpType::kInfo, "acquire");
  EXPECT_EQ(f.state(901), "free");
  EXPECT_TRUE(f.snap(901).processes.empty());
}

TEST(LockStateViewTest, PrecedenceWhenProcessesDiffer) {
  Feeder f;
  f.invoke(0, 1, "acquire");
  EXPECT_EQ(f.state(0), "acquiring");
  f.invoke(0, 2, "acquire");
  f.ok(0, 2, "acquire", 1000);
  EXPECT_EQ(f.state(600), "held-late");
  f.invoke(1, 3, "acquire");
  f.ok(500, 3, "acquire", 1000);
  EXPECT_EQ(f.state(600), "held-early") << "held-early > held-late > acquiring";
  f.invoke(601, 3, "release");
  EXPECT_EQ(f.state(602), "releasing") << "releasing > held";
  f.invoke(603, 2, "extend");
  EXPECT_EQ(f.state(604), "renewing") << "renewing > releasing";
}

TEST(LockStateViewTest, ResourceOpsAndTheNemesisChangeNothing) {
  Feeder f;
  f.op(0, 1, OpType::kInvoke, "read");
  f.op(1, 1, OpType::kOk, "read");
  f.op(2, kNemesis, OpType::kInvoke, "kill");
  EXPECT_EQ(f.snap(3).seq, 0u);
  EXPECT_EQ(f.state(3), "free");
}

TEST(LockStateViewTest, WaitUntilWakesOnAnOpAndStopsOnTheFlag) {
  LockStateView view(1000);
  std::thread t([&] {
    std::this_thread::sleep_for(milliseconds(30));
    Op o;
    o.process = 1;
    o.f = "acquire";
    view.on_op(o);
    o.type = OpType::kOk;
    view.on_op(o);
  });
  auto s = view.wait_until([](const LockSnapshot& x) { return x.grants > 0; },
                           std::chrono::steady_clock::now() + std::chrono::seconds(5), nullptr);
  t.join();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->run_state(), RunLockState::kHeldEarly);
  // A stop flag set: returns at once (within its 10 ms look), never a match after the stop.
  std::atomic<bool> stop{true};
  const auto before = std::chrono::steady_clock::now();
  auto none = view.wait_until([](const LockSnapshot& x) { return x.grants > 1; },
                              before + std::chrono::seconds(5), &stop);
  EXPECT_FALSE(none);
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(1));
  // And a deadline bounds it.
  auto late = view.wait_until([](const LockSnapshot& x) { return x.grants > 1; },
                              std::chrono::steady_clock::now() + milliseconds(30), nullptr);
  EXPECT_FALSE(late);
}

// ---- The rules ----

std::unique_ptr<Nemesis> nemesis(const std::string& name) {
  auto n = make_nemesis(name);
  EXPECT_TRUE(n) << name;
  return n;
}

FaultPlan a_plan(const Nemesis& n) {
  RunConfig c;
  c.nemesis_interval_s = 2;
  PlanContext ctx = PlanContext::from(c, {"n1", "n2", "n3", "n4", "n5"}, {"s1", "s2", "s3"});
  std::mt19937_64 rng(3);
  return n.plan(ctx, rng);
}

TEST(TimingRuleTest, EachFaultHasItsRule) {
  const std::map<std::string, TimingTrigger> expected = {
      {"kill", TimingTrigger::kHeldEarly},
      {"power-loss", TimingTrigger::kHeldEarly},
      {"clock", TimingTrigger::kAtGrant},
      {"clock:drift", TimingTrigger::kAtGrant},
      {"failover", TimingTrigger::kAtGrant},
      {"partition", TimingTrigger::kAtGrant},
      {"leader-partition", TimingTrigger::kAtGrant},
      {"delay", TimingTrigger::kAtGrant},
      {"pause", TimingTrigger::kAtGrant},
      {"client-pause", TimingTrigger::kAtAcquireInvoke},
      {"client-crash:mid-acquire", TimingTrigger::kAtAcquireInvoke},
      {"client-crash:after-acquire", TimingTrigger::kHeld},
      {"client-crash:mid-release", TimingTrigger::kHeld},
  };
  for (const auto& [name, trigger] : expected) {
    auto n = nemesis(name);
    const TimingRule r = n->timing_rule(a_plan(*n));
    EXPECT_EQ(to_string(r.trigger), std::string(to_string(trigger))) << name;
    EXPECT_FALSE(r.why.empty()) << name;
  }
  EXPECT_TRUE(nemesis("delay")->timing_rule(a_plan(*nemesis("delay"))).renewal_first);
  EXPECT_TRUE(nemesis("pause")->timing_rule(a_plan(*nemesis("pause"))).renewal_first);
  EXPECT_EQ(rule_name(nemesis("pause")->timing_rule(a_plan(*nemesis("pause")))), "at-grant-or-extend-invoke");
  EXPECT_EQ(rule_name(nemesis("kill")->timing_rule(a_plan(*nemesis("kill")))), "held-early");
  // Every registered nemesis has a rule (a new one without gets random timing, said in its detail).
  for (const auto& info : nemesis_registry()) {
    auto n = nemesis(info.name);
    EXPECT_NE(n->timing_rule(a_plan(*n)).trigger, TimingTrigger::kRandom) << info.name;
  }
}

// Feeds a live history op by op and says at which op (its time) the rule first matched, for a window opened
// before the first op.
struct Step {
  int64_t ms;
  Process p;
  OpType type;
  std::string f;
  std::optional<int64_t> validity_ms;
};
// The window opens just before ops[open_after] is recorded.
std::optional<int64_t> first_match(const TimingRule& r, const std::vector<Step>& ops, size_t open_after = 0) {
  Feeder f;
  uint64_t opened = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (i == open_after) opened = f.snap(ops[i].ms).seq;
    const Step& s = ops[i];
    f.op(s.ms, s.p, s.type, s.f, s.validity_ms);
    if (i < open_after) continue;
    if (rule_matches(r, f.snap(s.ms), opened)) return s.ms;
  }
  return std::nullopt;
}

const std::vector<Step> kLife = {
    {0, 1, OpType::kInvoke, "acquire", {}},      {5, 1, OpType::kOk, "acquire", 1000},
    {600, 1, OpType::kInvoke, "extend", {}},     {610, 1, OpType::kOk, "extend", 1000},
    {700, 1, OpType::kInvoke, "release", {}},    {702, 1, OpType::kOk, "release", {}},
    {710, 2, OpType::kInvoke, "acquire", {}},    {715, 2, OpType::kOk, "acquire", 1000},
};

TEST(TimingRuleTest, AtGrantFiresOnTheAcquiresOk) {
  EXPECT_EQ(first_match({TimingTrigger::kAtGrant, false, ""}, kLife), 5);
  // Opened after the first grant: the next one.
  EXPECT_EQ(first_match({TimingTrigger::kAtGrant, false, ""}, kLife, 2), 715);
}

TEST(TimingRuleTest, RenewalFirstFiresOnAnExtendsInvokeOnceTheRunRenews) {
  // The run has renewed before the window opens (at op 4, after the first extend): an extend's invoke is
  // awaited, not the next grant; none comes, so it never matches here.
  EXPECT_EQ(first_match({TimingTrigger::kAtGrant, true, ""}, kLife, 4), std::nullopt);
  std::vector<Step> renewing = kLife;
  renewing.push_back({800, 2, OpType::kInvoke, "extend", {}});
  EXPECT_EQ(first_match({TimingTrigger::kAtGrant, true, ""}, renewing, 4), 800);
  // Before any extend, it is a grant rule.
  EXPECT_EQ(first_match({TimingTrigger::kAtGrant, true, ""}, kLife), 5);
}

TEST(TimingRuleTest, HeldEarlyFiresOnALiveLockInTheFirstHalfOfItsLease) {
  EXPECT_EQ(first_match({TimingTrigger::kHeldEarly, false, ""}, kLife), 5);
  // Looked at only late in the lease (t = 560 of [5, 1005)) it does not match; renewed, it is early again.
  Feeder f;
  f.op(0, 1, OpType::kInvoke, "acquire");
  f.op(5, 1, OpType::kOk, "acquire", 1000);
  const TimingRule r{TimingTrigger::kHeldEarly, false, ""};
  EXPECT_FALSE(rule_matches(r, f.snap(560), 0));
  EXPECT_TRUE(rule_matches(r, f.snap(500), 0));
  EXPECT_FALSE(rule_matches(r, f.snap(1006), 0)) << "an expired lock is not live";
  const auto m = rule_matches(r, f.snap(100), 0);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->process, 1);
  EXPECT_EQ(m->key, "lock-0");
}

TEST(TimingRuleTest, HeldFiresWhileALockIsHeldAndNotWhenReleasing) {
  EXPECT_EQ(first_match({TimingTrigger::kHeld, false, ""}, kLife), 5);
  Feeder f;
  f.op(0, 1, OpType::kInvoke, "acquire");
  f.op(5, 1, OpType::kOk, "acquire", 1000);
  f.op(10, 1, OpType::kInvoke, "release");
  f.op(12, 1, OpType::kOk, "release");
  EXPECT_FALSE(rule_matches({TimingTrigger::kHeld, false, ""}, f.snap(12), 0));
}

TEST(TimingRuleTest, AtAcquireInvokeFiresOnTheInvoke) {
  EXPECT_EQ(first_match({TimingTrigger::kAtAcquireInvoke, false, ""}, kLife), 0);
  EXPECT_EQ(first_match({TimingTrigger::kAtAcquireInvoke, false, ""}, kLife, 1), 710);
  EXPECT_EQ(first_match({TimingTrigger::kAtExtendInvoke, false, ""}, kLife), 600);
}

TEST(TimingRuleTest, EveryRuleFallsBackWhenBlind) {
  // A silent adapter: acquires invoked, never an ok.
  Feeder f;
  f.op(0, 1, OpType::kInvoke, "acquire");
  f.op(500, 1, OpType::kInfo, "acquire");
  for (TimingTrigger t : {TimingTrigger::kHeldEarly, TimingTrigger::kHeld, TimingTrigger::kAtGrant,
                          TimingTrigger::kAtAcquireInvoke, TimingTrigger::kAtExtendInvoke}) {
    const std::string why = fallback_at_open({t, false, ""}, f.snap(600));
    EXPECT_NE(why.find("blind"), std::string::npos) << to_string(t) << ": " << why;
  }
  EXPECT_NE(fallback_at_open({}, f.snap(600)).find("no lock-state rule"), std::string::npos);
  // At the run's start no grant can have come yet: the window waits for the first, and is blind only if none
  // came by its end.
  EXPECT_EQ(fallback_at_open({TimingTrigger::kAtGrant, false, ""}, f.snap(600), /*run_start=*/true), "");
  EXPECT_NE(fallback_at_close({TimingTrigger::kAtGrant, false, ""}, {0, 2000}, /*blind=*/true).find("blind"),
            std::string::npos);
  // Once a grant was seen the window opens (no fallback).
  f.op(600, 2, OpType::kInvoke, "acquire");
  f.op(601, 2, OpType::kOk, "acquire");
  EXPECT_EQ(fallback_at_open({TimingTrigger::kAtGrant, false, ""}, f.snap(602)), "");
  const std::string at_close = fallback_at_close({TimingTrigger::kAtGrant, false, ""}, {1000, 3000});
  EXPECT_NE(at_close.find("no acquire ok within the window of 2000 ms"), std::string::npos) << at_close;
}

TEST(TimingWindowTest, AtMostOneIntervalNeverPastTheLimitOrTheNextFault) {
  // One interval after the planned time.
  TimingWindow w = timing_window(1000, 2000, 2000, 5000, 60000);
  EXPECT_EQ(w.open_ms, 1000);
  EXPECT_EQ(w.close_ms, 3000);
  // The fault's duration must end by the next start of the same nemesis.
  w = timing_window(1000, 2000, 3500, 5000, 60000);
  EXPECT_EQ(w.close_ms, 1500);
  // Not past the time limit (less a margin to apply it inside the run) ...
  w = timing_window(9000, 2000, 0, -1, 10000);
  EXPECT_EQ(w.close_ms, 9900);
  // ... and never before the planned time (an empty window: applied at once, at its end).
  w = timing_window(9950, 2000, 0, -1, 10000);
  EXPECT_EQ(w.close_ms, 9950);
  w = timing_window(1000, 2000, 5000, 5000, 60000);
  EXPECT_EQ(w.close_ms, 1000);
}

// ---- Replay of a lock-state run's schedule.json ----

json lock_state_file() {
  json plan = json::array({
      {{"step", 0}, {"at_ms", 1000}, {"nemesis", "kill"}, {"phase", "start"}, {"f", "kill"},
       {"targets", {"n1"}}, {"detail", {{"mode", "one"}}}, {"duration_ms", 300}, {"stop_f", "restart"}},
      {{"step", 1}, {"at_ms", 1300}, {"nemesis", "kill"}, {"phase", "stop"}, {"f", "restart"}, {"start_step", 0}},
      {{"step", 2}, {"at_ms", 3300}, {"nemesis", "kill"}, {"phase", "start"}, {"f", "kill"},
       {"targets", {"n2"}}, {"detail", {{"mode", "one"}}}, {"duration_ms", 300}, {"stop_f", "restart"}},
      {{"step", 3}, {"at_ms", 3600}, {"nemesis", "kill"}, {"phase", "stop"}, {"f", "restart"}, {"start_step", 2}},
      {{"step", 4}, {"at_ms", 5600}, {"nemesis", "kill"}, {"phase", "start"}, {"f", "kill"},
       {"targets", {"n3"}}, {"detail", {{"mode", "one"}}}, {"duration_ms", 300}, {"stop_f", "restart"}},
  });
  json executed = json::array({
      {{"step", 0}, {"at_ms", 1450}, {"phase", "start"}, {"f", "kill"}, {"targets", {"n1"}}, {"outcome", "ok"},
       {"timing", "lock-state"}, {"lock_state", "held-early"}},
      {{"step", 1}, {"at_ms", 1750}, {"phase", "stop"}, {"f", "restart"}, {"targets", {"n1"}}, {"outcome", "ok"}},
      {{"step", 2}, {"at_ms", 4100}, {"phase", "start"}, {"f", "kill"}, {"targets", {"n2"}}, {"outcome", "ok"},
       {"timing", "lock-state"}, {"lock_state", "held-early"}},
      {{"step", 3}, {"at_ms", 4400}, {"phase", "stop"}, {"f", "restart"}, {"targets", {"n2"}}, {"outcome", "ok"}},
  });
  return {{"seed", 1}, {"targeting", "random"}, {"timing", "lock-state"}, {"interval_s", 2}, {"time_limit_s", 6},
          {"nemesis", {"kill"}}, {"plan", plan}, {"executed", executed}};
}

TEST(TimingReplayTest, ALockStateScheduleReplaysAtTheOffsetsItsFaultsFired) {
  const Schedule s = schedule_from_json(lock_state_file(), "schedule.json");
  EXPECT_EQ(s.timing, "random");
  EXPECT_TRUE(s.fired_offsets);
  ASSERT_EQ(s.plan.size(), 4u) << "the start that never fired is left out";
  EXPECT_EQ(s.plan[0].at_ms, 1450);
  EXPECT_EQ(s.plan[0].phase, Phase::kStart);
  EXPECT_EQ(s.plan[0].fault.targets, json({"n1"}));
  EXPECT_EQ(s.plan[1].at_ms, 1750) << "the stop follows by the duration";
  EXPECT_EQ(s.plan[1].start_step, 0);
  EXPECT_EQ(s.plan[2].at_ms, 4100);
  EXPECT_EQ(s.plan[3].at_ms, 4400);
  EXPECT_EQ(s.plan[3].start_step, 2);
  // Written back, it says random and replays the same.
  const json again = to_json(s);
  EXPECT_EQ(again["timing"], "random");
  const Schedule t = schedule_from_json(again, "again");
  ASSERT_EQ(t.plan.size(), 4u);
  EXPECT_EQ(t.plan[2].at_ms, 4100);
}

TEST(TimingReplayTest, RandomAndUnfinishedFilesKeepTheirPlan) {
  json j = lock_state_file();
  j["timing"] = "random";
  Schedule s = schedule_from_json(j, "r");
  EXPECT_FALSE(s.fired_offsets);
  ASSERT_EQ(s.plan.size(), 5u);
  EXPECT_EQ(s.plan[0].at_ms, 1000);
  j = lock_state_file();
  j.erase("executed");
  s = schedule_from_json(j, "unfinished");
  ASSERT_EQ(s.plan.size(), 5u);
  EXPECT_EQ(s.timing, "lock-state");
  j = lock_state_file();
  j["timing"] = "sometimes";
  EXPECT_THROW(schedule_from_json(j, "bad"), ConfigError);
}

TEST(TimingConfigTest, TheFlagIsValidatedByName) {
  RunConfig c;
  EXPECT_EQ(c.nemesis_timing, "random");
  c.nemesis_timing = "lock-state";
  EXPECT_NO_THROW(validate_fields(c));
  c.nemesis_timing = "soon";
  try {
    validate_fields(c);
    FAIL() << "accepted a bad timing";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--nemesis-timing"), std::string::npos) << e.what();
  }
  json j;
  to_json(j, RunConfig{});
  EXPECT_EQ(j["nemesis_timing"], "random");
  RunConfig back;
  from_json(json{{"nemesis_timing", "lock-state"}}, back);
  EXPECT_EQ(back.nemesis_timing, "lock-state");
}

}  // namespace
}  // namespace lockcheck
