// The nemesis in whole runs: a run killed by SIGTERM in the middle of a partition and a pause leaves nothing
// behind and closes its fault periods in a valid history; the same seed gives the same schedule.json; and the
// targeted schedules reproduce `single`'s known anomalies in a few seconds.
#include <algorithm>
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "core/exit_codes.h"
#include "core/history.h"
#include "harness/runner.h"
#include "nemesis/schedule.h"
#include "sys/process.h"
#include "tests/support/test_util.h"

namespace lockcheck {
namespace {

using nlohmann::json;

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// The fault names in force after the ops of the history read so far (start ok without a later stop).
std::map<std::string, bool> in_force(const History& h) {
  std::map<std::string, bool> f;
  for (const auto& op : h) {
    if (op.process != kNemesis || op.is_invoke() || !op.value.is_object()) continue;
    f[op.value.value("fault", "")] = op.value.value("phase", "") == "start";
  }
  return f;
}

// Lines of a history file that is still being written: every complete line parsed, a torn last line dropped.
History read_partial(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  const auto end = text.rfind('\n');
  if (end == std::string::npos) return {};
  try {
    return parse_history(text.substr(0, end + 1));
  } catch (const HistoryError&) {
    return {};
  }
}

TEST(NemesisRunTest, SigtermDuringAPartitionAndAPauseLeavesNothingBehind) {
  TempDir dir;
  const std::string results = dir.str() + "/results";
  ProcessSpec spec;
  // Both faults last an interval (4 s); their first starts fall in [2, 6) s, so they overlap.
  spec.argv = {LOCKCHECK_BINARY,
               "run",
               "--time-limit",
               "60",
               "--concurrency",
               "3",
               "--ttl-ms",
               "300",
               "--nemesis",
               "partition:isolate,pause:minority",
               "--nemesis-interval",
               "4",
               "--seed",
               "5",
               "--results",
               results,
               "--no-progress"};
  spec.stdout_path = dir.str() + "/out.txt";
  spec.stderr_path = "=stdout";
  ChildProcess child(spec);
  std::string run_dir;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool both = false;
  while (!both && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    boost::system::error_code ec;
    if (!boost::filesystem::exists(results + "/latest/history.jsonl", ec)) continue;
    run_dir = testing_util::latest_run(results);
    auto f = in_force(read_partial(run_dir + "/history.jsonl"));
    both = f["partition"] && f["pause"];
  }
  ASSERT_TRUE(both) << "the partition and the pause were never in force together";
  auto pids = testing_util::node_pids(run_dir);
  ASSERT_EQ(pids.size(), 5u);
  child.signal(SIGTERM);
  auto status = child.wait_for(std::chrono::seconds(30));
  ASSERT_TRUE(status.has_value()) << "lockcheck did not exit after SIGTERM";
  EXPECT_EQ(*status, 128 + SIGTERM);
  for (pid_t p : pids) EXPECT_FALSE(testing_util::process_alive(p)) << "redis-server " << p << " left behind";
  // The proxy is a thread of the harness: gone with it. The history is whole and closes both fault periods.
  History h = read_history(run_dir + "/history.jsonl");
  auto f = in_force(h);
  EXPECT_FALSE(f["partition"]);
  EXPECT_FALSE(f["pause"]);
  int finals = 0;
  for (const auto& op : h) {
    if (op.process == kNemesis && op.is_ok() && op.value["detail"].value("final", false)) ++finals;
  }
  EXPECT_EQ(finals, 2);
  std::ifstream log(run_dir + "/lockcheck.log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("every fault undone"), std::string::npos) << text;
  json schedule = read_json(run_dir + "/schedule.json");
  EXPECT_FALSE(schedule["executed"].empty());
}

RunConfig short_run(const TempDir& dir, std::vector<std::string> nemesis, uint64_t seed) {
  RunConfig c;
  c.results_dir = dir.str() + "/results";
  c.progress = false;
  c.seed = seed;
  c.nemesis = std::move(nemesis);
  c.nemesis_interval_s = 0.5;
  c.time_limit_s = 3;
  c.ttl_ms = 300;
  c.concurrency = 3;
  return c;
}

TEST(NemesisRunTest, SameSeedSameScheduleJson) {
  TempDir dir;
  std::ostringstream out;
  RunOutcome a = run_test(short_run(dir, {"partition", "clock", "kill"}, 11), out);
  RunOutcome b = run_test(short_run(dir, {"partition", "clock", "kill"}, 11), out);
  RunOutcome c = run_test(short_run(dir, {"partition", "clock", "kill"}, 12), out);
  ASSERT_FALSE(a.run_dir.empty());
  ASSERT_NE(a.run_dir, b.run_dir);
  json sa = read_json(a.run_dir + "/schedule.json"), sb = read_json(b.run_dir + "/schedule.json"),
       sc = read_json(c.run_dir + "/schedule.json");
  EXPECT_FALSE(sa["plan"].empty());
  EXPECT_EQ(sa["plan"], sb["plan"]);
  EXPECT_NE(sa["plan"], sc["plan"]);
  // With random targeting the faults applied are the planned ones, in the planned order.
  auto applied = [](const json& s) {
    json v = json::array();
    for (const auto& e : s["executed"]) {
      if (!e["step"].is_null()) v.push_back({e["step"], e["f"], e["targets"]});
    }
    return v;
  };
  // The same steps, each with the same action and targets. Steps of different nemeses may be applied in either
  // order when they fall close together (each nemesis applies its own), and on a loaded machine a run may end
  // before its last steps are applied: so the two are compared step by step over the steps both reached.
  auto by_step = [&](const json& s) {
    std::map<int64_t, json> m;
    for (const auto& x : applied(s)) {
      json& v = m[x[0].get<int64_t>()];
      if (v.is_null()) v = json::array();
      v.push_back(x);
    }
    return m;
  };
  const std::map<int64_t, json> xa = by_step(sa), xb = by_step(sb);
  ASSERT_FALSE(xa.empty());
  ASSERT_FALSE(xb.empty());
  const int64_t reached = std::min(xa.rbegin()->first, xb.rbegin()->first);
  // A planned stop can also be folded into its nemesis's next start: when a start came late (a slow kill or
  // restart under load), the fault is still in force at the next start of the same nemesis, which heals it
  // first, recorded without a step ("final"). So a stop step may be in one run only; a start step may not.
  auto planned_stop = [&](int64_t step) { return sa["plan"][static_cast<size_t>(step)]["phase"] == "stop"; };
  size_t compared = 0;
  for (const auto& [step, entries] : xa) {
    if (step > reached) break;
    auto it = xb.find(step);
    if (it == xb.end()) {
      EXPECT_TRUE(planned_stop(step)) << "step " << step << " applied in one run only";
      continue;
    }
    EXPECT_EQ(entries, it->second) << "step " << step;
    ++compared;
  }
  for (const auto& [step, entries] : xb) {
    if (step <= reached && !xa.count(step)) {
      EXPECT_TRUE(planned_stop(step)) << "step " << step << " applied in one run only";
    }
  }
  EXPECT_GE(compared, 2u);
  for (const auto& e : sa["executed"]) {
    if (e["step"].is_null() || e["phase"] != "start") continue;
    EXPECT_EQ(e["targets"], sa["plan"][e["step"].get<size_t>()]["targets"]) << e.dump();
  }
}

// A seeded run of `single` with a targeted schedule finds a double grant within a few seconds. ttl_ms: the
// lock's TTL (short_run's 300 ms unless given).
void expect_anomaly(const std::string& nemesis, uint64_t seed, int64_t ttl_ms = 0) {
  TempDir dir;
  RunConfig c = short_run(dir, {nemesis}, seed);
  c.lock = "single";
  c.nemesis_targeting = "holder";
  c.nemesis_interval_s = 1;
  c.time_limit_s = 6;
  if (ttl_ms > 0) {
    c.ttl_ms = ttl_ms;
    c.time_limit_s = 8;
  }
  std::ostringstream out;
  RunOutcome o = run_test(c, out);
  json r = read_json(o.run_dir + "/results.json");
  bool found = false;
  for (const auto& ch : r["checkers"]) {
    if (ch["checker"] == "mutex") found = ch["valid"] == "invalid";
  }
  EXPECT_TRUE(found) << nemesis << ": " << out.str();
  EXPECT_EQ(o.exit_code, kExitInvalid) << out.str();
}

TEST(NemesisRunTest, SingleLosesMutualExclusionUnderATargetedClientPause) { expect_anomaly("client-pause", 1); }
// The double grant needs the killed node back, empty, while the holder's lease still runs: a kill and restart of
// redis-server took longer than a 300 ms TTL in a loaded CI run (5 kills aimed at the holder, none overlapped),
// so this one runs with a 2 s TTL, which a restart under that load still fits in.
TEST(NemesisRunTest, SingleLosesMutualExclusionUnderATargetedKillWithoutPersistence) {
  expect_anomaly("kill", 1, 2000);
}
TEST(NemesisRunTest, SingleLosesMutualExclusionUnderATargetedClockJump) { expect_anomaly("clock:bump", 1); }

// Lock-state timing in a whole run: every executed start says how it was timed and the lock state it met (the
// contract the results read), the file says "timing": "lock-state", and its schedule replays (run --schedule, as
// rerun does) the same faults at the offsets they fired, within a tolerance for the replay's own sleep.
TEST(NemesisRunTest, LockStateTimingRecordsItsMomentAndReplaysAtTheOffsetsItFired) {
  TempDir dir;
  RunConfig c = short_run(dir, {"kill"}, 3);
  c.lock = "single";
  c.nemesis_timing = "lock-state";
  c.nemesis_interval_s = 1;
  c.time_limit_s = 5;
  std::ostringstream out;
  RunOutcome o = run_test(c, out);
  ASSERT_FALSE(o.run_dir.empty()) << out.str();
  json s = read_json(o.run_dir + "/schedule.json");
  EXPECT_EQ(s["timing"], "lock-state");
  const std::set<std::string> states = {"free", "acquiring", "held-early", "held-late", "renewing", "releasing"};
  json starts = json::array();
  size_t on_moment = 0;
  for (const auto& e : s["executed"]) {
    if (e["phase"] != "start") continue;
    starts.push_back(e);
    EXPECT_EQ(e["timing"], "lock-state") << e.dump();
    ASSERT_TRUE(e.contains("lock_state")) << e.dump();
    EXPECT_TRUE(states.count(e["lock_state"].get<std::string>())) << e.dump();
    if (!e.contains("timing_fallback")) {
      ++on_moment;
      // Never earlier than planned.
      EXPECT_GE(e["at_ms"].get<int64_t>(), s["plan"][e["step"].get<size_t>()]["at_ms"].get<int64_t>()) << e.dump();
    } else {
      EXPECT_TRUE(e["timing_fallback"].is_string()) << e.dump();
    }
  }
  ASSERT_GE(starts.size(), 2u) << s.dump();
  EXPECT_GE(on_moment, 1u) << "no fault met its moment: " << s.dump();
  // The history's start ops carry the same fields.
  size_t recorded = 0;
  for (const auto& op : read_history(o.run_dir + "/history.jsonl")) {
    if (op.process != kNemesis || op.is_invoke() || op.value.value("phase", "") != "start") continue;
    const json& d = op.value["detail"];
    EXPECT_EQ(d.value("timing", ""), "lock-state") << op.value.dump();
    EXPECT_TRUE(states.count(d.value("lock_state", ""))) << op.value.dump();
    ++recorded;
  }
  EXPECT_EQ(recorded, starts.size());

  // The replay: the same faults at the offsets they fired.
  const Schedule replay = read_schedule_file(o.run_dir + "/schedule.json");
  EXPECT_TRUE(replay.fired_offsets);
  RunOutcome r = run_test(c, out, &replay);
  ASSERT_FALSE(r.run_dir.empty()) << out.str();
  json rs = read_json(r.run_dir + "/schedule.json");
  EXPECT_EQ(rs["timing"], "random");
  json again = json::array();
  for (const auto& e : rs["executed"]) {
    if (e["phase"] == "start") again.push_back(e);
  }
  // A start applied close to the time limit may fall after the replay's end on a loaded machine: compare the
  // starts both runs reached.
  ASSERT_GE(again.size(), starts.size() - 1) << rs.dump();
  for (size_t i = 0; i < std::min(starts.size(), again.size()); ++i) {
    EXPECT_EQ(again[i]["f"], starts[i]["f"]);
    EXPECT_EQ(again[i]["targets"], starts[i]["targets"]);
    EXPECT_EQ(again[i]["timing"], "random");
    // The planned offset of the replay is the original's actual one (what it replays), and it was applied there.
    const int64_t planned = rs["plan"][again[i]["step"].get<size_t>()]["at_ms"].get<int64_t>();
    EXPECT_EQ(planned, starts[i]["at_ms"].get<int64_t>()) << i;
    EXPECT_NEAR(again[i]["at_ms"].get<int64_t>(), planned, 250) << i;
  }
}

}  // namespace
}  // namespace lockcheck
