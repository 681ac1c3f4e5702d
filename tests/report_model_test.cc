// What the report extracts from a history: holds and their leases, fault periods, latencies, lost updates.
#include "report/run_model.h"

#include <gtest/gtest.h>

#include <random>

#include "report/anomalies.h"
#include "report/timeline_svg.h"
#include "tests/support/report_fixtures.h"

namespace lockcheck {
namespace report {
namespace {

using nlohmann::json;
using report_test::HistoryBuilder;

constexpr int64_t kMs = 1000000;

TEST(ReportModelTest, HoldRunsFromAcquireOkToTheNextReleaseInvokeOfThatKey) {
  HistoryBuilder b;
  b.add(0, 1, OpType::kInvoke, "acquire", "lock-0");
  b.add(3, 1, OpType::kOk, "acquire", "lock-0", nullptr, 7, 50);
  b.add(10, 1, OpType::kInvoke, "release", "lock-1");  // another key: does not end it
  b.add(11, 1, OpType::kOk, "release", "lock-1");
  b.add(20, 1, OpType::kInvoke, "extend", "lock-0");
  b.add(22, 1, OpType::kOk, "extend", "lock-0", nullptr, std::nullopt, 80);
  b.add(40, 1, OpType::kInvoke, "release", "lock-0");
  b.add(42, 1, OpType::kFail, "release", "lock-0");  // even a failed release ends the hold at its invoke
  auto holds = lock_holds(b.history());
  ASSERT_EQ(holds.size(), 1u);
  EXPECT_EQ(holds[0].process, 1);
  EXPECT_EQ(holds[0].kind, HoldKind::kHeld);
  EXPECT_EQ(holds[0].invoke_ns, 0);
  EXPECT_EQ(holds[0].from_ns, 3 * kMs);
  EXPECT_EQ(holds[0].to_ns, 40 * kMs);
  EXPECT_FALSE(holds[0].open);
  EXPECT_EQ(holds[0].token, 7);
  EXPECT_EQ(holds[0].lease_end_ns, 102 * kMs);  // the extend's ok (22 ms) + 80 ms
  EXPECT_EQ(holds[0].acquire_index, 1);
}

TEST(ReportModelTest, ALossNoticeMarksTheProcesssLatestHoldOfThatKey) {
  HistoryBuilder b;
  b.add(1, 1, OpType::kInfo, "lost", "lock-0");  // before any acquire: belongs to no hold
  b.hold(1, "lock-0", 2, 3, 40, 1, 100);
  b.add(50, 1, OpType::kInfo, "lost", "lock-0");  // after the release, before the next acquire: that hold's
  b.add(55, 1, OpType::kInfo, "lost", "lock-0");  // a second notice: the first one counts
  b.add(56, 2, OpType::kInfo, "lost", "lock-0");  // another process's: not p1's
  b.add(57, 1, OpType::kInfo, "lost", "lock-1");  // another key
  b.hold(1, "lock-0", 60, 61, -1, 2, 100);
  b.hold(2, "lock-1", 62, 63, -1, 3, 100);
  auto holds = lock_holds(b.history());
  ASSERT_EQ(holds.size(), 3u);
  EXPECT_EQ(holds[0].loss_notice_ns, 50 * kMs);
  EXPECT_FALSE(holds[1].loss_notice_ns);  // p1's second hold of lock-0: no notice after it
  EXPECT_FALSE(holds[2].loss_notice_ns);  // p2 had not held lock-1 when p1's notice for lock-1 came
}

TEST(ReportModelTest, UnreleasedAndIndeterminateHoldsRunToTheEnd) {
  HistoryBuilder b;
  b.add(0, 1, OpType::kInvoke, "acquire", "lock-0");
  b.add(1, 1, OpType::kOk, "acquire", "lock-0");
  b.add(5, 2, OpType::kInvoke, "acquire", "lock-0");
  b.add(505, 2, OpType::kInfo, "acquire", "lock-0");
  b.add(6, 3, OpType::kInvoke, "acquire", "lock-0");
  b.add(8, 3, OpType::kFail, "acquire", "lock-0");  // no hold
  b.add(2000, 4, OpType::kInvoke, "read", "set");
  auto holds = lock_holds(b.history(), HoldOptions{100});
  ASSERT_EQ(holds.size(), 2u);
  EXPECT_EQ(holds[0].process, 1);
  EXPECT_TRUE(holds[0].open);
  EXPECT_EQ(holds[0].to_ns, 2000 * kMs);
  EXPECT_FALSE(holds[0].lease_end_ns.has_value());
  EXPECT_EQ(holds[1].process, 2);
  EXPECT_EQ(holds[1].kind, HoldKind::kIndeterminate);
  EXPECT_EQ(holds[1].from_ns, 5 * kMs);
  EXPECT_EQ(holds[1].to_ns, 105 * kMs);  // invoke + TTL
  auto no_ttl = lock_holds(b.history());
  EXPECT_EQ(no_ttl[1].to_ns, 2000 * kMs);
}

// A drifting clock's band says its rate and direction in words (the timeline's label and tip show them).
TEST(ReportModelTest, ADriftBandSaysHowFastOrSlowTheClockRuns) {
  HistoryBuilder b;
  json fast = {{"fault", "clock"}, {"phase", "start"}, {"targets", {"n1", "n2", "n3"}},
               {"detail", {{"mode", "drift"}, {"rate_ppm", 50000}}}};
  json stop = {{"fault", "clock"}, {"phase", "stop"}, {"targets", {"n1", "n2", "n3"}}};
  json slow = {{"fault", "clock"}, {"phase", "start"}, {"targets", {"n4"}},
               {"detail", {{"mode", "drift"}, {"rate_ppm", -2500}}}};
  b.add(10, kNemesis, OpType::kInvoke, "clock-drift", "", fast);
  b.add(11, kNemesis, OpType::kOk, "clock-drift", "", fast);
  b.add(20, kNemesis, OpType::kInvoke, "clock-drift-stop", "", stop);
  b.add(21, kNemesis, OpType::kOk, "clock-drift-stop", "", stop);
  b.add(30, kNemesis, OpType::kInvoke, "clock-drift", "", slow);
  b.add(31, kNemesis, OpType::kOk, "clock-drift", "", slow);
  auto bands = fault_bands(b.history());
  ASSERT_EQ(bands.size(), 2u);
  EXPECT_EQ(bands[0].words, "runs 5% fast");
  EXPECT_EQ(bands[1].words, "runs 0.25% slow");
}

TEST(ReportModelTest, FaultBandRunsFromStartCompletionToTheNextStopOfThatFault) {
  HistoryBuilder b;
  json p_start = {{"fault", "partition"}, {"phase", "start"}, {"targets", {"n1", "n2"}}, {"detail", {{"a", 1}}}};
  json p_stop = {{"fault", "partition"}, {"phase", "stop"}, {"targets", {"n1", "n2"}}};
  json k_start = {{"fault", "kill"}, {"phase", "start"}, {"targets", {"n3"}}};
  json c_start = {{"fault", "clock"}, {"phase", "start"}, {"targets", {"n4"}}};
  b.add(10, kNemesis, OpType::kInvoke, "partition", "", p_start);
  b.add(12, kNemesis, OpType::kOk, "partition", "", nullptr);  // the completion's value is taken from its invoke
  b.add(20, kNemesis, OpType::kInvoke, "kill", "", k_start);
  b.add(21, kNemesis, OpType::kInfo, "kill", "", k_start);  // info: may have happened; drawn
  b.add(30, kNemesis, OpType::kInvoke, "clock-bump", "", c_start);
  b.add(31, kNemesis, OpType::kFail, "clock-bump", "", c_start);  // fail: did not happen
  b.add(40, kNemesis, OpType::kInvoke, "heal", "", p_stop);
  b.add(45, kNemesis, OpType::kOk, "heal", "", p_stop);
  b.add(50, kNemesis, OpType::kInvoke, "noise", "", json{{"nodes", {"n1"}}});  // not the shape: ignored
  b.add(51, kNemesis, OpType::kOk, "noise", "", json{{"nodes", {"n1"}}});
  b.add(90, 0, OpType::kInvoke, "acquire", "lock-0");
  auto bands = fault_bands(b.history());
  ASSERT_EQ(bands.size(), 2u);
  EXPECT_EQ(bands[0].fault, "partition");
  EXPECT_EQ(bands[0].from_ns, 12 * kMs);
  EXPECT_EQ(bands[0].to_ns, 45 * kMs);
  EXPECT_TRUE(bands[0].healed);
  EXPECT_EQ(bands[0].targets, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(bands[0].detail, "{\"a\":1}");
  EXPECT_EQ(bands[1].fault, "kill");
  EXPECT_EQ(bands[1].from_ns, 21 * kMs);
  EXPECT_EQ(bands[1].to_ns, 90 * kMs);
  EXPECT_FALSE(bands[1].healed);
}

TEST(ReportModelTest, FaultBandSaysFirstWhatAPowerLossDroppedPerNode) {
  HistoryBuilder b;
  json start = {{"fault", "power-loss"}, {"phase", "start"}, {"targets", {"n1", "n2"}}};
  json done = start;
  done["detail"] = {{"mode", "minority"},
                    {"dropped",
                     {{"n1", {{"bytes", 127}, {"files", {{{"path", "a/incr.aof"}, {"size", 300}, {"kept", 173}}}}}},
                      {"n2", {{"bytes", 0}, {"files", json::array()}}}}}};
  b.add(10, kNemesis, OpType::kInvoke, "power-loss", "", start);
  b.add(12, kNemesis, OpType::kOk, "power-loss", "", done);  // the completion's value says what was measured
  auto bands = fault_bands(b.history());
  ASSERT_EQ(bands.size(), 1u);
  EXPECT_EQ(bands[0].detail.rfind("dropped n1 127 B in 1 file, n2 nothing; {", 0), 0u) << bands[0].detail;
}

TEST(ReportModelTest, AcquireLatenciesPairInvokesWithTheirCompletions) {
  HistoryBuilder b;
  b.add(0, 1, OpType::kInvoke, "acquire", "lock-0");
  b.add(1, 2, OpType::kInvoke, "acquire", "lock-0");
  b.add(4, 2, OpType::kFail, "acquire", "lock-0");
  b.add(9, 1, OpType::kOk, "acquire", "lock-0");
  b.add(10, 3, OpType::kInvoke, "acquire", "lock-0");  // never completes: no point
  auto points = acquire_latencies(b.history());
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].outcome, OpType::kFail);
  EXPECT_EQ(points[0].latency_ns, 3 * kMs);
  EXPECT_EQ(points[1].outcome, OpType::kOk);
  EXPECT_EQ(points[1].invoke_ns, 0);
  EXPECT_EQ(points[1].latency_ns, 9 * kMs);
}

TEST(ReportModelTest, LostUpdatesAreOkAddsMissingFromTheLastIntegerRead) {
  HistoryBuilder b;
  b.add(0, 0, OpType::kInvoke, "add", "s", 1);
  b.add(1, 0, OpType::kOk, "add", "s", 1);
  b.add(2, 0, OpType::kInvoke, "add", "s", 2);
  b.add(3, 0, OpType::kOk, "add", "s", nullptr);  // element from the invoke
  b.add(4, 0, OpType::kInvoke, "add", "s", 3);
  b.add(5, 0, OpType::kFail, "add", "s", 3);  // not acknowledged
  b.add(6, 0, OpType::kInvoke, "add", "s", 4);
  b.add(7, 0, OpType::kInfo, "add", "s", 4);  // not acknowledged
  b.add(8, 1, OpType::kInvoke, "read", "s");
  b.add(9, 1, OpType::kOk, "read", "s", json{1});
  b.add(10, 2, OpType::kInvoke, "add", "s", 5);
  b.add(11, 1, OpType::kInvoke, "read", "s");
  b.add(12, 2, OpType::kOk, "add", "s", 5);  // completes after the final read's invoke: not judged
  b.add(13, 1, OpType::kOk, "read", "s", json{1});
  b.add(14, 3, OpType::kInvoke, "read", "s");
  b.add(15, 3, OpType::kOk, "read", "s", json{"not", "ints"});  // not a final read
  // A second set, on another key, with its own final read: its adds are judged against it alone.
  b.add(16, 4, OpType::kInvoke, "add", "t", 1);
  b.add(17, 4, OpType::kOk, "add", "t", 1);
  b.add(18, 4, OpType::kInvoke, "add", "u", 9);  // a key without a final read: not judged
  b.add(19, 4, OpType::kOk, "add", "u", 9);
  b.add(20, 5, OpType::kInvoke, "read", "t");
  b.add(21, 5, OpType::kOk, "read", "t", json{1});
  auto lost = lost_updates(b.history());
  EXPECT_TRUE(lost.has_final_read);
  EXPECT_EQ(lost.final_read_indices, (std::vector<int64_t>{13, 21}));
  EXPECT_EQ(lost.acknowledged, 3);
  EXPECT_EQ(lost.unjudged, 2);
  ASSERT_EQ(lost.lost_elements, (std::vector<int64_t>{2}));
  EXPECT_EQ(lost.lost_completion_ns, (std::vector<int64_t>{3 * kMs}));
  EXPECT_TRUE(has_set_ops(b.history()));
  EXPECT_FALSE(lost_updates(report_test::valid_history()).has_final_read);
}

TEST(ReportModelTest, AnomaliesAreReadLeniently) {
  json results = {{"checkers",
                   {{{"checker", "mutex"},
                     {"anomalies",
                      {{{"kind", "double-grant"},
                        {"processes", {1, "p7", "x", -2}},
                        {"ops", {3, "x", -1}},
                        {"from_ns", 20},
                        {"to_ns", 10}},
                       {{"kind", "lost-update"}, {"from_ns", 5}},
                       "not an object"}}},
                    "not a checker",
                    {{"checker", "fencing"}, {"anomalies", "none"}}}}};
  auto an = anomalies_of(results);
  ASSERT_EQ(an.size(), 2u);
  EXPECT_EQ(an[0].processes, (std::vector<Process>{1, 7}));
  EXPECT_EQ(an[0].ops, (std::vector<int64_t>{3}));
  EXPECT_EQ(an[0].from_ns, 10);  // swapped into order
  EXPECT_EQ(an[0].to_ns, 20);
  EXPECT_FALSE(an[1].from_ns.has_value());  // half a window is no window
  EXPECT_EQ(an[1].number, 1u);
  EXPECT_EQ(sentence_of(an[1]), "lost-update (mutex)");
  EXPECT_TRUE(anomalies_of(json("x")).empty());
}

TEST(ReportModelTest, AnomalyViewCoversTheOverlappingHoldsOfItsProcesses) {
  auto holds = lock_holds(report_test::overlap_history());
  auto an = anomalies_of(report_test::overlap_results());
  ASSERT_EQ(an.size(), 1u);
  TimeWindow w = anomaly_view(an[0], holds, 900 * kMs);
  // p1 held from 2 ms, p2 to 320 ms: [2, 320] plus a quarter on each side, clipped at 0.
  EXPECT_EQ(w.from_ns, 0);
  EXPECT_EQ(w.to_ns, 320 * kMs + (318 * kMs) / 4);
}

// The report asks for up to a thousand views over a long run's holds through a HoldIndex: the same windows as
// anomaly_view, on holds in any order.
TEST(ReportModelTest, HoldIndexGivesTheWindowsOfAnomalyView) {
  std::mt19937_64 rng(7);
  std::vector<Hold> holds;
  for (int i = 0; i < 1000; ++i) {
    Hold h;
    h.process = static_cast<Process>(rng() % 6);
    h.key = rng() % 2 ? "lock-0" : "lock-1";
    h.from_ns = static_cast<int64_t>(rng() % 1000) * kMs;
    h.to_ns = h.from_ns + static_cast<int64_t>(rng() % (i % 50 == 0 ? 800 : 20)) * kMs;
    holds.push_back(h);
  }
  const HoldIndex index(holds);
  for (int k = 0; k < 500; ++k) {
    Anomaly a;
    a.from_ns = static_cast<int64_t>(rng() % 1000) * kMs;
    a.to_ns = *a.from_ns + static_cast<int64_t>(rng() % 30) * kMs;
    if (k % 3) a.key = k % 2 ? "lock-0" : "lock-1";
    if (k % 4) a.processes = {static_cast<Process>(rng() % 6), static_cast<Process>(rng() % 6)};
    const TimeWindow want = anomaly_view(a, holds, 1000 * kMs), got = index.view(a, 1000 * kMs);
    EXPECT_EQ(got.from_ns, want.from_ns) << k;
    EXPECT_EQ(got.to_ns, want.to_ns) << k;
  }
}

// A client-pause is armed for slots and taken by one process: the band names that process, how long it paused,
// and marks the pause from its ok acquire (the pause point) on its lane; the same for a client crash.
TEST(ReportModelTest, ClientFaultBandsNameTheProcessTheyTook) {
  HistoryBuilder b;
  json start = {{"fault", "client-pause"}, {"phase", "start"}, {"targets", {"c0", "c1", "c2"}},
                {"detail", {{"pause_ms", 2000}}}};
  b.add(100, kNemesis, OpType::kInvoke, "client-pause", "", start);
  b.add(101, kNemesis, OpType::kOk, "client-pause", "", start);
  b.hold(4, "lock-0", 150, 152, 170, 1);    // p4 acquires and releases at once: not its pause
  b.hold(7, "lock-0", 200, 210, 2215, 2);   // p7 holds through its pause: 210 ms to 2215 ms
  json stop = {{"fault", "client-pause"}, {"phase", "stop"}, {"targets", {"p7"}},
               {"detail", {{"paused", json::array({{{"process", 7}, {"slot", 2}, {"pause_ms", 2000}, {"lasted_ms", 2000}}})}}}};
  b.add(5100, kNemesis, OpType::kInvoke, "client-resume", "", {{"fault", "client-pause"}, {"phase", "stop"}});
  b.add(5101, kNemesis, OpType::kOk, "client-resume", "", stop);
  json cstart = {{"fault", "client-crash"}, {"phase", "start"}, {"targets", {"c0", "c1"}}, {"detail", json::object()}};
  b.add(6000, kNemesis, OpType::kInvoke, "client-crash", "", cstart);
  b.add(6001, kNemesis, OpType::kOk, "client-crash", "", cstart);
  b.add(6100, 5, OpType::kInvoke, "acquire", "lock-0");
  b.add(6120, 5, OpType::kInfo, "acquire", "lock-0", nullptr, std::nullopt, std::nullopt, "client crashed mid-acquire");
  json cstop = {{"fault", "client-crash"}, {"phase", "stop"}, {"targets", {"p5"}},
                {"detail", {{"crashed", json::array({{{"process", 5}, {"slot", 0}, {"point", "mid-acquire"}}})}}}};
  b.add(7000, kNemesis, OpType::kInvoke, "client-crash-stop", "", {{"fault", "client-crash"}, {"phase", "stop"}});
  b.add(7001, kNemesis, OpType::kOk, "client-crash-stop", "", cstop);
  const auto bands = fault_bands(b.history());
  ASSERT_EQ(bands.size(), 2u);
  EXPECT_EQ(bands[0].targets, std::vector<std::string>{"p7"});
  EXPECT_EQ(bands[0].words, "p7 (slot c2) paused 2.00 s");
  ASSERT_EQ(bands[0].clients.size(), 1u);
  EXPECT_EQ(bands[0].clients[0].from_ns, 210 * kMs);
  EXPECT_EQ(bands[0].clients[0].to_ns, 2210 * kMs);
  EXPECT_EQ(bands[1].targets, std::vector<std::string>{"p5"});
  EXPECT_EQ(bands[1].words, "p5 (slot c0) crashed mid-acquire");
  ASSERT_EQ(bands[1].clients.size(), 1u);
  EXPECT_EQ(bands[1].clients[0].from_ns, 6120 * kMs);
  const std::string svg = render_timeline(lock_holds(b.history()), bands, {}, history_end_ns(b.history()));
  EXPECT_NE(svg.find("class=\"client-fault\" data-process=\"7\" data-fault=\"client-pause\""), std::string::npos);
  EXPECT_NE(svg.find("p7 (slot c2) paused 2.00 s"), std::string::npos);
}

}  // namespace
}  // namespace report
}  // namespace lockcheck
