// The nemesis schedule and the parts of the nemesis that need no Redis: the seeded generator (same seed, same
// schedule), the shapes each partition mode plans, ClientPauses, LinkFaults, HolderTracker.
#include "nemesis/schedule.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <thread>

#include "core/client_pauses.h"
#include "nemesis/fault_util.h"
#include "nemesis/holders.h"
#include "nemesis/link_faults.h"
#include "tests/support/temp_dir.h"

namespace lockcheck {
namespace {

using nlohmann::json;

RunConfig config(std::vector<std::string> nemesis, uint64_t seed = 7) {
  RunConfig c;
  c.nemesis = std::move(nemesis);
  c.seed = seed;
  c.time_limit_s = 60;
  c.nemesis_interval_s = 2;
  c.ttl_ms = 1000;
  c.concurrency = 4;
  return c;
}

PlanContext context(const RunConfig& c, int nodes = 5) {
  std::vector<std::string> names;
  for (int i = 1; i <= nodes; ++i) names.push_back("n" + std::to_string(i));
  return PlanContext::from(c, names, {});
}

std::vector<std::unique_ptr<Nemesis>> make_all(const RunConfig& c) {
  std::vector<std::unique_ptr<Nemesis>> v;
  for (const auto& n : c.nemesis) {
    v.push_back(make_nemesis(n));
    EXPECT_TRUE(v.back()) << n;
  }
  return v;
}

json plan_json(const RunConfig& c, int nodes = 5) {
  auto nemeses = make_all(c);
  return to_json(make_schedule(c, context(c, nodes), nemeses));
}

// Every registered nemesis: the contract suites iterate the registry, so a new nemesis is tested here without
// editing a list.
std::vector<std::string> all_nemeses() {
  std::vector<std::string> v;
  for (const auto& n : nemesis_registry()) v.push_back(n.name);
  return v;
}
const std::vector<std::string> kAll = all_nemeses();

// The contract of every registered nemesis, on its own: described, made by its factory under its name, and its
// plan a timeline of faults each followed by its stop, within the time limit, the same for the same seed.
TEST(NemesisContractTest, EveryRegisteredNemesisPlansFaultsEachWithItsStop) {
  ASSERT_GE(nemesis_registry().size(), 8u);
  for (const auto& info : nemesis_registry()) {
    SCOPED_TRACE(info.name);
    EXPECT_GT(std::string(info.description).size(), 10u);
    auto made = make_nemesis(info.name);
    ASSERT_TRUE(made);
    EXPECT_EQ(made->name(), info.name);
    RunConfig c = config({info.name});
    if (std::string(info.name) == "failover") c.server_opts["topology"] = "replicated";
    const json plan = plan_json(c);
    EXPECT_EQ(plan, plan_json(c));
    std::map<int64_t, int64_t> open;  // start step -> its at_ms
    size_t starts = 0;
    for (const auto& e : plan["plan"]) {
      EXPECT_LT(e["at_ms"].get<int64_t>(), 60000);
      if (e["phase"] == "start") {
        ++starts;
        EXPECT_FALSE(e["f"].get<std::string>().empty());
        open[e["step"].get<int64_t>()] = e["at_ms"].get<int64_t>();
      } else {
        auto it = open.find(e["start_step"].get<int64_t>());
        ASSERT_NE(it, open.end()) << e.dump();
        EXPECT_GE(e["at_ms"].get<int64_t>(), it->second);
        open.erase(it);
      }
    }
    EXPECT_GE(starts, 5u) << "a 60 s run with a 2 s interval plans several faults";
    EXPECT_LE(open.size(), 1u) << "only a fault still in force at the time limit has no planned stop";
  }
}

// Every registered nemesis's detail fields (DetailField) against what it plans: every planned fault passes the
// replay's check (so a run's own schedule.json always replays), and each declared field, and each common one,
// given a value of another type is refused naming the field (so an edited schedule.json is exit 2 before the run,
// not a fault that fails in its middle).
TEST(NemesisContractTest, EveryPlannedDetailPassesTheReplayCheckAndAWrongTypeIsNamed) {
  const json wrong_for[] = {"x", -1, 1.5, true, json::array({1, 2}), json::object()};
  for (const auto& info : nemesis_registry()) {
    SCOPED_TRACE(info.name);
    auto made = make_nemesis(info.name);
    ASSERT_TRUE(made);
    for (const std::string topology : {"independent", "replicated"}) {
      for (uint64_t seed = 1; seed <= 8; ++seed) {
        RunConfig c = config({info.name}, seed);
        c.server_opts["topology"] = topology;
        const Schedule s = schedule_from_json(plan_json(c), "plan");
        EXPECT_NO_THROW(check_schedule_nemeses(s, c.nemesis, "--schedule")) << seed;
      }
    }
    RunConfig c = config({info.name});
    if (std::string(info.name) == "failover") c.server_opts["topology"] = "replicated";
    const Schedule s = schedule_from_json(plan_json(c), "plan");
    ASSERT_FALSE(s.plan.empty());
    ASSERT_EQ(s.plan[0].phase, Phase::kStart);
    std::vector<DetailField> fields = made->detail_fields();
    fields.push_back({"mode", DetailType::kString});
    fields.push_back({"step", DetailType::kNonNegative});
    fields.push_back({"aimed", DetailType::kBool});
    for (const DetailField& f : fields) {
      int refused = 0;
      for (const json& bad : wrong_for) {
        Schedule edited = s;
        edited.plan[0].fault.detail[f.name] = bad;
        if (fault_detail_error(*made, edited.plan[0].fault.detail).empty()) continue;  // bad is of the right type
        ++refused;
        try {
          check_schedule_nemeses(edited, c.nemesis, "--schedule");
          ADD_FAILURE() << f.name << " = " << bad.dump() << " passed";
        } catch (const ConfigError& e) {
          EXPECT_NE(std::string(e.what()).find("--schedule: step 0 (" + std::string(info.name)), std::string::npos)
              << e.what();
          EXPECT_NE(std::string(e.what()).find(std::string("detail.") + f.name + " must be"), std::string::npos)
              << e.what();
        }
      }
      EXPECT_GE(refused, 4) << f.name << ": most values of other types are refused";
    }
  }
}

TEST(NemesisScheduleTest, SameSeedSameSchedule) {
  EXPECT_EQ(plan_json(config(kAll, 7)), plan_json(config(kAll, 7)));
  EXPECT_NE(plan_json(config(kAll, 7))["plan"], plan_json(config(kAll, 8))["plan"]);
}

TEST(NemesisScheduleTest, AddingANemesisKeepsTheOthersFaults) {
  // Each nemesis draws from its own stream: the partition faults are the same with or without clock.
  auto only = plan_json(config({"partition"}))["plan"];
  auto both = plan_json(config({"partition", "clock"}))["plan"];
  std::vector<json> a, b;
  for (const auto& e : only) a.push_back(e);
  for (const auto& e : both) {
    if (e["nemesis"] == "partition") {
      json x = e;
      x.erase("step");
      x.erase("start_step");
      b.push_back(x);
    }
  }
  for (auto& e : a) {
    e.erase("step");
    e.erase("start_step");
  }
  EXPECT_EQ(a, b);
}

TEST(NemesisScheduleTest, FaultThenHealInTimeOrderWithinTheTimeLimit) {
  RunConfig c = config(kAll);
  auto nemeses = make_all(c);
  Schedule s = make_schedule(c, context(c), nemeses);
  ASSERT_FALSE(s.plan.empty());
  std::map<size_t, bool> open;
  int64_t last = 0;
  for (size_t i = 0; i < s.plan.size(); ++i) {
    const auto& e = s.plan[i];
    EXPECT_EQ(e.step, static_cast<int64_t>(i));
    EXPECT_GE(e.at_ms, last);
    EXPECT_LT(e.at_ms, 60000);
    last = e.at_ms;
    if (e.phase == Phase::kStart) {
      EXPECT_FALSE(open[e.nemesis]) << "two faults of one nemesis at once, step " << i;
      open[e.nemesis] = true;
      EXPECT_FALSE(e.fault.f.empty());
      EXPECT_FALSE(e.fault.stop_f.empty());
    } else {
      EXPECT_TRUE(open[e.nemesis]);
      open[e.nemesis] = false;
      ASSERT_GE(e.start_step, 0);
      EXPECT_EQ(s.plan[static_cast<size_t>(e.start_step)].fault.stop_f, e.fault.f);
    }
  }
  // Every nemesis gets several faults in 60 s at a 2 s interval.
  for (size_t k = 0; k < kAll.size(); ++k) {
    int starts = 0;
    for (const auto& e : s.plan) starts += e.nemesis == k && e.phase == Phase::kStart;
    EXPECT_GE(starts, 5) << kAll[k];
  }
}

TEST(NemesisScheduleTest, KillRestartsAfterTheRestartDelay) {
  RunConfig c = config({"kill"});
  c.restart_delay_ms = 1500;
  auto nemeses = make_all(c);
  Schedule s = make_schedule(c, context(c), nemeses);
  ASSERT_GE(s.plan.size(), 2u);
  EXPECT_EQ(s.plan[0].fault.f, "kill");
  EXPECT_EQ(s.plan[1].fault.f, "restart");
  EXPECT_EQ(s.plan[1].at_ms - s.plan[0].at_ms, 1500);
}

// --delay-ms fixes the latency every delay fault adds; the draws stay the same, so the faults' times, modes and
// targets are those of the run without it.
TEST(NemesisScheduleTest, DelayMsFixesTheLatencyAndKeepsTheOtherDraws) {
  RunConfig c = config({"delay"});
  auto nemeses = make_all(c);
  const Schedule drawn = make_schedule(c, context(c), nemeses);
  c.delay_ms = 150;
  const Schedule fixed = make_schedule(c, context(c), nemeses);
  ASSERT_EQ(drawn.plan.size(), fixed.plan.size());
  ASSERT_FALSE(fixed.plan.empty());
  for (size_t i = 0; i < fixed.plan.size(); ++i) {
    EXPECT_EQ(fixed.plan[i].at_ms, drawn.plan[i].at_ms);
    if (fixed.plan[i].phase != Phase::kStart) continue;
    EXPECT_EQ(fixed.plan[i].fault.detail["delay_ms"], 150);
    EXPECT_EQ(fixed.plan[i].fault.targets, drawn.plan[i].fault.targets);
  }
}

// Lock-state timing plans the same faults as random timing, as many and with the same spacing, each nemesis's
// timeline slid so that its first window opens when the workload starts.
TEST(NemesisScheduleTest, LockStatePlansRandomsFaultsSlidToTheStart) {
  RunConfig c = config({"kill", "client-pause"});
  auto nemeses = make_all(c);
  const Schedule random = make_schedule(c, context(c), nemeses);
  c.nemesis_timing = "lock-state";
  const Schedule lock_state = make_schedule(c, context(c), nemeses);
  ASSERT_EQ(random.plan.size(), lock_state.plan.size());
  for (size_t k = 0; k < 2; ++k) {
    std::vector<const ScheduleEntry*> a, b;
    for (const auto& e : random.plan) if (e.nemesis == k) a.push_back(&e);
    for (const auto& e : lock_state.plan) if (e.nemesis == k) b.push_back(&e);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_FALSE(b.empty());
    EXPECT_EQ(b.front()->at_ms, 0) << k;
    const int64_t slide = a.front()->at_ms;
    EXPECT_GE(slide, c.nemesis_interval_s * 1000 / 2);
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(b[i]->at_ms, a[i]->at_ms - slide);
      EXPECT_EQ(b[i]->fault.f, a[i]->fault.f);
      EXPECT_EQ(b[i]->fault.targets, a[i]->fault.targets);
      EXPECT_EQ(b[i]->fault.duration_ms, a[i]->fault.duration_ms);
    }
  }
}

TEST(NemesisScheduleTest, UnknownNamesAndModes) {
  EXPECT_TRUE(make_nemesis("partition:client-split"));
  EXPECT_TRUE(make_nemesis("clock:strobe"));
  EXPECT_TRUE(make_nemesis("kill:majority"));
  EXPECT_FALSE(make_nemesis("partition:nonsense"));
  EXPECT_FALSE(make_nemesis("client-pause:x"));
  EXPECT_FALSE(make_nemesis("bogus"));
  for (const auto& n : kAll) EXPECT_TRUE(make_nemesis(n)) << n;
}

// The cut links of one planned partition of the given mode, as a set of sorted pairs.
std::set<std::pair<std::string, std::string>> cut_links(const std::string& mode, uint64_t seed,
                                                        json* detail = nullptr) {
  RunConfig c = config({"partition:" + mode}, seed);
  auto n = make_nemesis("partition:" + mode);
  std::mt19937_64 rng(seed);
  FaultPlan p = n->plan(context(c), rng);
  EXPECT_EQ(p.detail["mode"], mode);
  if (detail) *detail = p.detail;
  std::set<std::pair<std::string, std::string>> out;
  for (const auto& l : p.detail["links"]) out.insert(LinkFaults::pair(l[0], l[1]));
  return out;
}

// Which nodes party p reaches under the cut links.
std::set<std::string> reach(const std::set<std::pair<std::string, std::string>>& cut, const std::string& p) {
  std::set<std::string> r;
  for (int i = 1; i <= 5; ++i) {
    const std::string n = "n" + std::to_string(i);
    if (n == p || !cut.count(LinkFaults::pair(p, n))) r.insert(n);
  }
  return r;
}

TEST(NemesisPartitionTest, ClientSplitIsKleppmannsShape) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    json d;
    auto cut = cut_links("client-split", seed, &d);
    // Two groups of client slots; one reaches three nodes, the other three nodes, sharing exactly one.
    ASSERT_EQ(d["groups"].size(), 2u);
    const std::string x = d["groups"][0][0], y = d["groups"][1][0];
    auto rx = reach(cut, x), ry = reach(cut, y);
    EXPECT_EQ(rx.size(), 3u);
    EXPECT_EQ(ry.size(), 3u);
    std::vector<std::string> shared;
    std::set_intersection(rx.begin(), rx.end(), ry.begin(), ry.end(), std::back_inserter(shared));
    EXPECT_EQ(shared.size(), 1u) << "seed " << seed;
    // Node to node links stay.
    for (const auto& l : cut) EXPECT_EQ(l.first[0] == 'c' || l.second[0] == 'c', true);
  }
}

TEST(NemesisPartitionTest, IsolateCutsOneNodeFromEveryone) {
  json d;
  auto cut = cut_links("isolate", 3, &d);
  const std::string v = d["isolated"];
  EXPECT_EQ(cut.size(), 4u + 4u);  // 4 other nodes, 4 client slots
  for (const auto& l : cut) EXPECT_TRUE(l.first == v || l.second == v);
}

TEST(NemesisPartitionTest, MajorityRingEveryNodeSeesADifferentMajority) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    auto cut = cut_links("majority-ring", seed);
    std::set<std::set<std::string>> views;
    for (int i = 1; i <= 5; ++i) {
      auto r = reach(cut, "n" + std::to_string(i));
      EXPECT_EQ(r.size(), 3u);
      views.insert(r);
    }
    EXPECT_EQ(views.size(), 5u) << "seed " << seed;
  }
}

TEST(NemesisPartitionTest, BridgeNodeSeesBothSides) {
  json d;
  auto cut = cut_links("bridge", 5, &d);
  const std::string b = d["bridge"];
  EXPECT_EQ(reach(cut, b).size(), 5u);
  for (int i = 1; i <= 5; ++i) {
    const std::string n = "n" + std::to_string(i);
    if (n != b) EXPECT_EQ(reach(cut, n).size(), 3u) << n;
  }
}

TEST(NemesisPartitionTest, ClientCutLeavesTheOtherSlotsWhole) {
  json d;
  auto cut = cut_links("client-cut", 9, &d);
  const std::string s = d["slot"];
  EXPECT_EQ(reach(cut, s).size(), 3u);  // loses a minority (2 of 5)
  for (const auto& l : cut) EXPECT_TRUE(l.first == s || l.second == s);
}

TEST(NemesisAimTest, HolderTargetingHitsEnoughHoldersToBreakAQuorum) {
  EXPECT_EQ(nemesis_util::aimed_count(1, 1, 5), 1u);  // single: the one node that holds the key
  EXPECT_EQ(nemesis_util::aimed_count(1, 5, 5), 3u);  // redlock, held on all 5: 3 to leave it on 2
  EXPECT_EQ(nemesis_util::aimed_count(1, 3, 5), 1u);  // held on exactly a quorum: one breaks it
  EXPECT_EQ(nemesis_util::aimed_count(4, 3, 5), 3u);  // never more than hold it
  EXPECT_EQ(nemesis_util::aimed_count(1, 0, 5), 0u);
}

TEST(ClientPausesTest, AnArmedPauseIsTakenOnceByItsSlot) {
  ClientPauses p(3);
  std::atomic<bool> stop{false};
  EXPECT_EQ(p.pause_point(1, stop).count(), 0);  // nothing armed
  const int64_t id = p.arm({1}, std::chrono::milliseconds(50));
  EXPECT_EQ(p.pause_point(0, stop).count(), 0);   // another slot
  EXPECT_GE(p.pause_point(4, stop).count(), 45);  // process 4 runs in slot 1
  EXPECT_EQ(p.pause_point(4, stop).count(), 0);   // one arm, one pause
  auto fired = p.fired();
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].arm_id, id);
  EXPECT_EQ(fired[0].process, 4);
  EXPECT_TRUE(fired[0].lasted.has_value());
}

TEST(ClientPausesTest, ReleaseAllAndStopEndAPauseEarly) {
  ClientPauses p(1);
  std::atomic<bool> stop{false};
  const int64_t id = p.arm({0}, std::chrono::seconds(60));
  std::thread t([&] { p.pause_point(0, stop); });
  ASSERT_TRUE(p.wait_fired(id, std::chrono::seconds(5)));
  p.release_all();
  t.join();  // would take 60 s without release_all
  const int64_t second = p.arm({0}, std::chrono::seconds(60));
  std::thread u([&] { p.pause_point(0, stop); });
  // The pause has begun before the stop (a fixed sleep here let a loaded machine set stop before the thread
  // reached its pause point, which then returned at once and left the arm in place).
  ASSERT_TRUE(p.wait_fired(second, std::chrono::seconds(5)));
  stop.store(true);
  u.join();  // would take 60 s without the stop
  EXPECT_FALSE(p.armed());
}

TEST(ClientPausesTest, DisarmKeepsNothingArmed) {
  ClientPauses p(2);
  std::atomic<bool> stop{false};
  p.arm({0, 1}, std::chrono::seconds(60));
  EXPECT_TRUE(p.armed());
  p.disarm_all();
  EXPECT_FALSE(p.armed());
  EXPECT_EQ(p.pause_point(0, stop).count(), 0);
  EXPECT_THROW(p.arm({2}, std::chrono::seconds(1)), std::invalid_argument);
}

// A cluster that only records network calls (LinkFaults is pure bookkeeping over these).
class RecordingCluster : public Cluster {
 public:
  void start() override {}
  void stop() noexcept override {}
  const std::vector<NodeInfo>& nodes() const override { return nodes_; }
  void kill(size_t) override {}
  void restart(size_t) override {}
  void pause(size_t) override {}
  void resume(size_t) override {}
  void set_clock_offset(size_t, std::chrono::nanoseconds) override {}
  bool is_running(size_t) const override { return true; }
  Endpoint endpoint_for(const std::string&, size_t) const override { return {}; }
  void cut(const std::string& a, const std::string& b) override { calls.push_back("cut " + a + " " + b); }
  void heal(const std::string& a, const std::string& b) override { calls.push_back("heal " + a + " " + b); }
  void heal_all() override { calls.push_back("heal-all"); }
  void set_delay(const std::string& a, const std::string& b, std::chrono::milliseconds d,
                 std::chrono::milliseconds) override {
    calls.push_back("delay " + a + " " + b + " " + std::to_string(d.count()));
  }
  std::vector<std::string> calls;

 private:
  std::vector<NodeInfo> nodes_;
};

TEST(LinkFaultsTest, HealingAPartitionKeepsAnotherNemesissDelay) {
  RecordingCluster c;
  LinkFaults lf;
  lf.delay(c, "delay", "c0", "n1", std::chrono::milliseconds(100), std::chrono::milliseconds(0));
  lf.cut(c, "partition", "n1", "c0");
  lf.cut(c, "failover", "c0", "n1");
  c.calls.clear();
  lf.uncut_all(c, "partition");
  EXPECT_TRUE(c.calls.empty()) << "still cut by failover";
  EXPECT_EQ(lf.cut_pairs().size(), 1u);
  lf.uncut_all(c, "failover");
  EXPECT_EQ(c.calls, (std::vector<std::string>{"heal c0 n1", "delay c0 n1 100"}));
  c.calls.clear();
  lf.undelay_all(c, "delay");
  EXPECT_EQ(c.calls, (std::vector<std::string>{"delay c0 n1 0"}));
  EXPECT_TRUE(lf.cut_pairs().empty());
}

// A backend that applies many links at once (the fault proxy's batch), and may fail a batch.
class BatchingCluster : public RecordingCluster {
 public:
  void cut_links(const LinkPairs& pairs) override {
    calls.push_back("cut-links " + std::to_string(pairs.size()));
    if (fail) throw ClusterError("the proxy thread did not answer");
  }
  void heal_links(const LinkPairs& pairs) override {
    std::string s = "heal-links";
    for (const auto& p : pairs) s += " " + p.first + "-" + p.second;
    calls.push_back(s);
  }
  bool fail = false;
};

TEST(LinkFaultsTest, APartitionIsOneBatchAndAFailedBatchIsStillHealed) {
  BatchingCluster c;
  LinkFaults lf;
  lf.cut_many(c, "partition", {{"n1", "c0"}, {"c1", "n1"}, {"n2", "n1"}});
  EXPECT_EQ(c.calls, (std::vector<std::string>{"cut-links 3"}));
  lf.delay(c, "delay", "n1", "n2", std::chrono::milliseconds(50), std::chrono::milliseconds(0));
  c.calls.clear();
  lf.uncut_all(c, "partition");
  // One batch of heals, then the delay another nemesis still wants on one of the pairs.
  EXPECT_EQ(c.calls, (std::vector<std::string>{"heal-links c0-n1 c1-n1 n1-n2", "delay n1 n2 50"}));
  // A batch that failed (a timed-out proxy call may still be applied later) is the owner's to heal.
  c.fail = true;
  c.calls.clear();
  EXPECT_THROW(lf.cut_many(c, "partition", {{"n3", "c2"}}), ClusterError);
  EXPECT_EQ(lf.cut_pairs().size(), 1u);
  c.calls.clear();
  lf.uncut_all(c, "partition");
  EXPECT_EQ(c.calls, (std::vector<std::string>{"heal-links c2-n3"}));
  EXPECT_TRUE(lf.cut_pairs().empty());
}

// A client op of process p for the holder tracker (time 1: a HistoryWriter without a clock records it as is).
Op client_op(Process p, OpType type, const std::string& f, const std::string& key) {
  Op o;
  o.process = p;
  o.type = type;
  o.f = f;
  o.key = key;
  o.time_ns = 1;
  return o;
}

TEST(HolderTrackerTest, FollowsAcquiresReleasesAndRetirements) {
  HolderTracker t;
  t.on_op(client_op(1, OpType::kInvoke, "acquire", "lock-0"));
  EXPECT_TRUE(t.current().empty());
  t.on_op(client_op(1, OpType::kOk, "acquire", "lock-0"));
  t.on_op(client_op(2, OpType::kOk, "acquire", "lock-1"));
  ASSERT_EQ(t.current().size(), 2u);
  EXPECT_EQ(t.current().back().process, 2);
  t.on_op(client_op(1, OpType::kInvoke, "release", "lock-0"));
  ASSERT_EQ(t.current().size(), 1u);
  t.on_op(client_op(2, OpType::kInfo, "read", "resource"));  // retired
  EXPECT_TRUE(t.current().empty());
  EXPECT_EQ(t.acquires_seen(), 2u);
  std::atomic<bool> stop{false};
  EXPECT_FALSE(t.wait_for_fresh(2, std::chrono::milliseconds(10), &stop).has_value());
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    t.on_op(client_op(3, OpType::kOk, "acquire", "lock-0"));
  });
  auto h = t.wait_for_fresh(2, std::chrono::seconds(5), &stop);
  later.join();
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->process, 3);
  EXPECT_EQ(slot_of(7, 5), "c2");
}

// Protocol 2: a holding keeps the Redis keys its client reported (the acquire's, then the last ok extend's), and
// a loss notice of the holder neither ends the holding nor retires the process.
TEST(HolderTrackerTest, KeepsTheReportedKeysAndIgnoresLossNotices) {
  HolderTracker t;
  Op a = client_op(1, OpType::kOk, "acquire", "lock-0");
  a.value = {{"keys", {"myprefix:{lock-0}"}}};
  t.on_op(a);
  ASSERT_EQ(t.current().size(), 1u);
  EXPECT_EQ(t.current()[0].keys, std::vector<std::string>{"myprefix:{lock-0}"});
  Op e = client_op(1, OpType::kOk, "extend", "lock-0");
  e.value = {{"keys", {"a:{lock-0}", "b:{lock-0}"}}};
  t.on_op(e);
  EXPECT_EQ(t.current()[0].keys, (std::vector<std::string>{"a:{lock-0}", "b:{lock-0}"}));
  t.on_op(client_op(1, OpType::kOk, "extend", "lock-0"));  // reported no keys: the last ones stay
  EXPECT_EQ(t.current()[0].keys.size(), 2u);
  t.on_op(client_op(1, OpType::kInfo, kLostF, "lock-0"));  // a loss notice
  EXPECT_EQ(t.current().size(), 1u);
  t.on_op(client_op(2, OpType::kOk, "acquire", "lock-1"));
  EXPECT_TRUE(t.current().back().keys.empty());
}

TEST(HolderTrackerTest, AHoldingIsOverWhenItsReleaseCompletesOrItsProcessRetires) {
  HolderTracker t;
  std::atomic<bool> stop{false};
  const auto short_wait = std::chrono::milliseconds(10);
  t.on_op(client_op(1, OpType::kOk, "acquire", "lock-0"));
  t.on_op(client_op(2, OpType::kOk, "acquire", "lock-1"));
  const Holding first = t.current().front(), second = t.current().back();
  EXPECT_FALSE(t.wait_until_released(first, short_wait, &stop)) << "still held";
  t.on_op(client_op(1, OpType::kInvoke, "release", "lock-0"));
  EXPECT_TRUE(t.current().size() == 1u && t.current().front().process == 2) << "no longer held in its belief";
  EXPECT_FALSE(t.wait_until_released(first, short_wait, &stop))
      << "its release has not completed: the DEL may not have run";
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    t.on_op(client_op(1, OpType::kFail, "release", "lock-0"));  // any outcome ends it
  });
  EXPECT_TRUE(t.wait_until_released(first, std::chrono::seconds(5), &stop));
  later.join();
  // Another process's release of the same key does not end it; the holder's retirement does.
  t.on_op(client_op(3, OpType::kOk, "release", "lock-1"));
  EXPECT_FALSE(t.wait_until_released(second, short_wait, &stop));
  t.on_op(client_op(2, OpType::kInvoke, "release", "lock-1"));
  t.on_op(client_op(2, OpType::kInfo, "release", "lock-1"));
  EXPECT_TRUE(t.wait_until_released(second, short_wait, &stop));
  // A stop ends the wait early.
  t.on_op(client_op(4, OpType::kOk, "acquire", "lock-0"));
  stop = true;
  EXPECT_FALSE(t.wait_until_released(t.current().back(), std::chrono::seconds(5), &stop));
}

// on_release: the action runs once, inside the record of the op that ends the holding (so no other op is
// recorded, and no client sends a command, until it returns), before wait_until_released says it is over.
TEST(HolderTrackerTest, AReleaseActionRunsInsideTheRecordOfTheReleaseBeforeAnyOtherOp) {
  TempDir dir;
  HistoryWriter history(dir.path() + "/history.jsonl", nullptr);
  auto t = HolderTracker::attach(history);
  std::atomic<bool> stop{false};
  history.record(client_op(1, OpType::kOk, "acquire", "lock-0"));
  const Holding h = t->current().back();
  std::atomic<int> runs{0};
  std::atomic<bool> running{false};
  ASSERT_TRUE(t->on_release(h, [&] {
    running = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ++runs;
    running = false;
  }));
  history.record(client_op(2, OpType::kOk, "release", "lock-0"));  // another process's release: not h's
  history.record(client_op(1, OpType::kInvoke, "release", "lock-0"));
  EXPECT_EQ(runs, 0);
  std::thread releaser([&] { history.record(client_op(1, OpType::kOk, "release", "lock-0")); });
  for (int i = 0; i < 500 && !running; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(running.load());
  // The next client's invoke waits for the action: it is recorded (and so sent) only after the action returned.
  const Op next = history.record(client_op(3, OpType::kInvoke, "acquire", "lock-0"));
  EXPECT_EQ(runs, 1);
  releaser.join();
  EXPECT_EQ(next.index, 4) << "recorded after the release";
  EXPECT_TRUE(t->wait_until_released(h, std::chrono::seconds(5), &stop));
  EXPECT_TRUE(t->cancel_on_release(h)) << "it ran";
  EXPECT_FALSE(t->on_release(h, [] {})) << "the holding is over";
  EXPECT_EQ(runs, 1);

  // Cancelled before the release: never runs. A retirement (info) ends a holding and runs its action.
  history.record(client_op(4, OpType::kOk, "acquire", "lock-0"));
  const Holding second = t->current().back();
  ASSERT_TRUE(t->on_release(second, [&] { ++runs; }));
  EXPECT_FALSE(t->cancel_on_release(second));
  history.record(client_op(4, OpType::kInvoke, "release", "lock-0"));
  history.record(client_op(4, OpType::kOk, "release", "lock-0"));
  EXPECT_EQ(runs, 1);
  history.record(client_op(5, OpType::kOk, "acquire", "lock-0"));
  const Holding third = t->current().back();
  ASSERT_TRUE(t->on_release(third, [&] {
    ++runs;
    throw std::runtime_error("swallowed");
  }));
  history.record(client_op(5, OpType::kInfo, "acquire", "lock-1"));
  EXPECT_EQ(runs, 2);
  EXPECT_TRUE(t->wait_until_released(third, std::chrono::milliseconds(10), &stop));
  EXPECT_TRUE(t->current().empty());
}

}  // namespace
}  // namespace lockcheck
