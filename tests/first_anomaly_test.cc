// first_anomaly (checkers/first_anomaly.h) and fault_coverage (checkers/coverage.h) on hand-written histories and
// results: no violation, one, several checkers, a violation without a time, an empty history, the fault before.
#include <gtest/gtest.h>

#include "checkers/coverage.h"
#include "checkers/first_anomaly.h"
#include "tests/support/history_builder.h"

namespace lockcheck {
namespace {

using nlohmann::json;
using testing::HistoryBuilder;

// A fault's start (or stop) at ms: invoke at ms, completion 1 ms later (the detail on the invoke, as the driver
// records it; `done_detail` on the completion).
void fault(HistoryBuilder& b, int64_t ms, const std::string& f, const std::string& name, const std::string& phase,
           json detail, json targets = json::array({"n1"}), json done_detail = json::object()) {
  b.at_ms(ms);
  b.invoke(kNemesis, f, "", {{"fault", name}, {"phase", phase}, {"targets", targets}, {"detail", detail}});
  b.ok(kNemesis, f, "", {{"fault", name}, {"phase", phase}, {"targets", targets}, {"detail", done_detail}});
}

json violation(const std::string& kind, int64_t at_ms) {
  return {{"kind", kind}, {"description", kind + " at " + std::to_string(at_ms) + " ms"}, {"from_ns", at_ms * 1000000}};
}

json checker(const std::string& name, const std::string& valid, json anomalies = json::array()) {
  return {{"checker", name}, {"valid", valid}, {"summary", name + " says " + valid}, {"anomalies", anomalies}};
}

TEST(FirstAnomaly, NoneWhenValid) {
  HistoryBuilder b;
  fault(b, 100, "partition", "partition", "start", {{"step", 0}});
  const json results = {{"valid", "valid"}, {"checkers", json::array({checker("mutex", "valid")})}};
  EXPECT_TRUE(first_anomaly(results, b.history()).is_null());
  EXPECT_TRUE(first_anomaly(json::object(), b.history()).is_null());
  EXPECT_TRUE(first_anomaly(json(), History{}).is_null());
}

TEST(FirstAnomaly, NotesAreNotViolations) {
  json note = violation("slow", 5);
  note["severity"] = "note";
  const json results = {{"checkers", json::array({checker("liveness", "valid", json::array({note}))})}};
  EXPECT_TRUE(first_anomaly(results, History{}).is_null());
}

TEST(FirstAnomaly, OneViolationAfterAFaultInForce) {
  HistoryBuilder b;
  fault(b, 1000, "pause", "client-pause", "start",
        {{"step", 0}, {"timing", "lock-state"}, {"lock_state", "held-late"}}, json::array({"p2"}));
  fault(b, 4000, "resume", "client-pause", "stop", {{"step", 1}, {"start_step", 0}}, json::array({"p2"}));
  const json results = {{"checkers", json::array({checker("mutex", "invalid", json::array({violation("double-grant", 2500)}))})}};
  const json fa = first_anomaly(results, b.history());
  ASSERT_TRUE(fa.is_object()) << fa;
  EXPECT_DOUBLE_EQ(fa["at_s"].get<double>(), 2.5);
  EXPECT_EQ(fa["at_ns"], 2500000000LL);
  EXPECT_EQ(fa["checker"], "mutex");
  EXPECT_EQ(fa["kind"], "double-grant");
  EXPECT_EQ(fa["description"], "double-grant at 2500 ms");
  EXPECT_EQ(fa["summary"], "mutex says invalid");
  const json& f = fa["fault_before"];
  ASSERT_TRUE(f.is_object()) << fa;
  EXPECT_EQ(f["step"], 0);
  EXPECT_EQ(f["fault"], "client-pause");
  EXPECT_EQ(f["f"], "pause");
  EXPECT_EQ(f["targets"], json::array({"p2"}));
  EXPECT_DOUBLE_EQ(f["start_s"].get<double>(), 1.001);  // the start's completion
  EXPECT_EQ(f["in_force"], true);
  EXPECT_DOUBLE_EQ(f["healed_s"].get<double>(), 4.001);  // healed after the anomaly
  EXPECT_TRUE(f["healed_before_s"].is_null());
  EXPECT_EQ(f["timing"], "lock-state");
  EXPECT_EQ(f["lock_state"], "held-late");
  EXPECT_FALSE(f.contains("timing_fallback"));
}

TEST(FirstAnomaly, LatestFaultBeforeAndHealedBefore) {
  HistoryBuilder b;
  fault(b, 1000, "partition", "partition", "start", {{"step", 0}});
  fault(b, 2000, "heal", "partition", "stop", {{"step", 1}, {"start_step", 0}});
  fault(b, 3000, "kill", "kill", "start", {{"step", 2}}, json::array({"n2"}));
  fault(b, 3500, "restart", "kill", "stop", {{"step", 3}, {"start_step", 2}}, json::array({"n2"}));
  fault(b, 9000, "partition", "partition", "start", {{"step", 4}});  // after the anomaly: not before it
  const json results = {{"checkers", json::array({checker("mutex", "invalid", json::array({violation("double-grant", 5500)}))})}};
  const json f = first_anomaly(results, b.history())["fault_before"];
  ASSERT_TRUE(f.is_object());
  EXPECT_EQ(f["fault"], "kill");
  EXPECT_EQ(f["step"], 2);
  EXPECT_EQ(f["in_force"], false);
  EXPECT_DOUBLE_EQ(f["healed_s"].get<double>(), 3.501);
  EXPECT_NEAR(f["healed_before_s"].get<double>(), 1.999, 1e-9);
  EXPECT_FALSE(f.contains("timing"));  // an older run: no timing recorded
  EXPECT_FALSE(f.contains("lock_state"));
}

TEST(FirstAnomaly, NoFaultBefore) {
  HistoryBuilder b;
  fault(b, 3000, "partition", "partition", "start", {{"step", 0}});
  const json results = {{"checkers", json::array({checker("mutex", "invalid", json::array({violation("double-grant", 2000)}))})}};
  const json fa = first_anomaly(results, b.history());
  EXPECT_DOUBLE_EQ(fa["at_s"].get<double>(), 2.0);
  EXPECT_TRUE(fa["fault_before"].is_null());
}

TEST(FirstAnomaly, EarliestOverSeveralCheckers) {
  HistoryBuilder b;
  fault(b, 100, "partition", "partition", "start", {{"step", 0}, {"timing", "random"}, {"lock_state", "free"},
                                                    {"timing_fallback", "no lock seen"}});
  const json results = {
      {"checkers", json::array({checker("mutex", "invalid", json::array({violation("double-grant", 800)})),
                                checker("fencing", "invalid",
                                        json::array({violation("token-regression", 900), violation("stale", 400)})),
                                checker("lease", "valid", json::array({violation("ignored", 10)}))})}};
  const json fa = first_anomaly(results, b.history());
  EXPECT_EQ(fa["checker"], "fencing");
  EXPECT_EQ(fa["kind"], "stale");
  EXPECT_DOUBLE_EQ(fa["at_s"].get<double>(), 0.4);
  EXPECT_EQ(fa["fault_before"]["timing_fallback"], "no lock seen");
  EXPECT_EQ(fa["fault_before"]["lock_state"], "free");
}

TEST(FirstAnomaly, TimeFromOpsWhenTheAnomalyGivesNone) {
  HistoryBuilder b;
  b.at_ms(10);
  b.invoke(0, "acquire");
  b.ok(0, "acquire");
  const json results = {{"checkers", json::array({checker("mutex", "invalid",
                                                          json::array({{{"kind", "x"}, {"ops", json::array({0, 1})}}}))})}};
  EXPECT_DOUBLE_EQ(first_anomaly(results, b.history())["at_s"].get<double>(), 0.011);
}

TEST(FirstAnomaly, AnomalyWithoutTime) {
  const json untimed = {{"kind", "lost-update"}, {"description", "element 7 lost"}};
  const json results = {{"checkers", json::array({checker("lost-updates", "invalid", json::array({untimed}))})}};
  const json fa = first_anomaly(results, History{});
  ASSERT_TRUE(fa.is_object());
  EXPECT_TRUE(fa["at_s"].is_null());
  EXPECT_TRUE(fa["at_ns"].is_null());
  EXPECT_EQ(fa["kind"], "lost-update");
  EXPECT_TRUE(fa["fault_before"].is_null());
  // A timed violation elsewhere wins over the untimed one.
  json two = results;
  two["checkers"].push_back(checker("mutex", "invalid", json::array({violation("double-grant", 50)})));
  EXPECT_EQ(first_anomaly(two, History{})["checker"], "mutex");
}

TEST(FirstAnomaly, InvalidCheckerWithoutAnomalies) {
  const json results = {{"checkers", json::array({checker("mutex", "valid"), checker("lease", "invalid")})}};
  const json fa = first_anomaly(results, History{});
  EXPECT_EQ(fa["checker"], "lease");
  EXPECT_TRUE(fa["kind"].is_null());
  EXPECT_EQ(fa["summary"], "lease says invalid");
}

TEST(FaultStarts, StopWithoutStartStepHealsEveryOpenStartOfItsFault) {
  HistoryBuilder b;
  fault(b, 100, "partition", "partition", "start", {{"step", 0}});
  fault(b, 200, "partition", "partition", "start", {{"step", 1}});
  fault(b, 300, "kill", "kill", "start", {{"step", 2}});
  fault(b, 400, "heal", "partition", "stop", json::object());
  // A failed start did not happen.
  b.at_ms(500);
  b.invoke(kNemesis, "pause", "", {{"fault", "pause"}, {"phase", "start"}, {"targets", json::array()}});
  b.fail(kNemesis, "pause", "", {{"fault", "pause"}, {"phase", "start"}, {"targets", json::array()}});
  const auto s = fault_starts(b.history());
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].healed_ns, 401000000);
  EXPECT_EQ(s[1].healed_ns, 401000000);
  EXPECT_FALSE(s[2].healed_ns);
}

TEST(FaultStarts, CompletionDetailOverInvokeDetail) {
  HistoryBuilder b;
  fault(b, 100, "pause", "pause", "start", {{"step", 0}, {"lock_state", "free"}}, json::array({"n1"}),
        {{"step", 0}, {"lock_state", "held-early"}});
  const auto s = fault_starts(b.history());
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].detail["lock_state"], "held-early");
}

TEST(FaultCoverage, EmptyHistory) {
  const FaultCoverage c = fault_coverage(History{});
  EXPECT_EQ(c.faults, 0);
  EXPECT_TRUE(c.grid.empty());
  EXPECT_TRUE(c.never_met().empty());
  EXPECT_EQ(to_json(c), json({{"faults", 0}, {"grid", json::object()}, {"never_met", json::object()},
                               {"timing", json::object()}, {"fallbacks", 0}}));
}

TEST(FaultCoverage, GridNeverMetTimingAndFallbacks) {
  HistoryBuilder b;
  fault(b, 100, "pause", "client-pause", "start", {{"step", 0}, {"timing", "lock-state"}, {"lock_state", "held-late"}});
  fault(b, 200, "resume", "client-pause", "stop", {{"step", 1}, {"start_step", 0}});
  fault(b, 300, "pause", "client-pause", "start", {{"step", 2}, {"timing", "lock-state"}, {"lock_state", "held-late"}});
  fault(b, 400, "pause", "client-pause", "start",
        {{"step", 3}, {"timing", "lock-state"}, {"lock_state", "free"}, {"timing_fallback", "no holder in 5 s"}});
  fault(b, 500, "partition", "partition", "start", {{"step", 4}});  // an older run's: unknown
  fault(b, 600, "kill", "kill", "start", {{"step", 5}, {"timing", "sideways"}, {"lock_state", "asleep"}});
  const FaultCoverage c = fault_coverage(b.history());
  EXPECT_EQ(c.faults, 5);
  EXPECT_EQ(c.grid.at("client-pause").at("held-late"), 2);
  EXPECT_EQ(c.grid.at("client-pause").at("free"), 1);
  EXPECT_EQ(c.grid.at("partition").at("unknown"), 1);
  EXPECT_EQ(c.grid.at("kill").at("unknown"), 1);  // unrecognised values count as unknown
  EXPECT_EQ(c.timing.at("lock-state"), 3);
  EXPECT_EQ(c.timing.at("unknown"), 2);
  EXPECT_EQ(c.fallbacks, 1);
  const auto never = c.never_met();
  ASSERT_EQ(never.size(), 1u);  // partition and kill measured nothing
  EXPECT_EQ(never.at("client-pause"), (std::vector<std::string>{"acquiring", "held-early", "renewing", "releasing"}));

  // Round trip and sums.
  const json j = to_json(c);
  EXPECT_EQ(j["never_met"]["client-pause"].size(), 4u);
  FaultCoverage twice = coverage_from_json(j);
  twice.add(c);
  EXPECT_EQ(twice.faults, 10);
  EXPECT_EQ(twice.grid.at("client-pause").at("held-late"), 4);
  EXPECT_EQ(twice.fallbacks, 2);
  EXPECT_EQ(coverage_from_json(json("nonsense")).faults, 0);
}

TEST(FirstAnomaly, AClientFaultNamesTheProcessesItHitNotTheSlotsItArmed) {
  HistoryBuilder b;
  const json slots = json::array({"c0", "c1", "c2"});
  fault(b, 1000, "pause", "client-pause", "start", {{"step", 0}}, slots);
  fault(b, 6000, "resume", "client-pause", "stop", {{"step", 1}, {"start_step", 0}}, slots,
        {{"paused", json::array({{{"process", 4}, {"slot", 1}, {"lasted_ms", 5000}}})}});
  const json results = {{"checkers", json::array({checker("mutex", "invalid", json::array({violation("stale-holder", 4000)}))})}};
  const json f = first_anomaly(results, b.history())["fault_before"];
  ASSERT_TRUE(f.is_object());
  EXPECT_EQ(f["targets"], json::array({"p4"}));
  EXPECT_EQ(f["armed"], slots);
  EXPECT_EQ(f["in_force"], true);
}

}  // namespace
}  // namespace lockcheck
