// Each fault takes effect and is undone, against a real local cluster: a partitioned node is unreachable
// through its proxy link and reachable after heal; a delayed link is slow, then not; a paused node answers
// after resume; a restarted node comes back empty (persistence none) or with its data (AOF); the clock nemesis
// moves a node's TIME and expires keys early; a client pause holds the process at its pause point; and the
// driver's teardown undoes every fault still in force.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <climits>
#include <fstream>
#include <set>
#include <thread>

#include "tests/support/local_cluster.h"
#include "core/client_pauses.h"
#include "nemesis/driver.h"
#include "nemesis/link_faults.h"
#include "nemesis/schedule.h"
#include "sys/redis_conn.h"
#include "tests/support/test_util.h"

namespace lockcheck {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

class NemesisFaultsTest : public ::testing::Test {
 protected:
  void start(int nodes, const std::string& persistence = "none") {
    cfg_.nodes = nodes;
    cfg_.server_opts["persistence"] = persistence;
    cfg_.concurrency = 2;
    cfg_.ttl_ms = 1000;
    testing_util::LocalClusterSpec o;
    o.nodes = nodes;
    o.concurrency = 2;
    o.options = {{"persistence", persistence}};
    cluster_ = testing_util::start_local_cluster(o, dir_.str());
    history_ = std::make_unique<HistoryWriter>(dir_.str() + "/history.jsonl", &clock_);
  }

  NemesisEnv env() {
    NemesisEnv e{NemesisOptions::from(cfg_), *cluster_, *history_};
    e.client_pauses = &pauses_;
    e.links = &links_;
    return e;
  }

  // Applies phase "start" of plan with nemesis n; returns the completion.
  Op start_fault(Nemesis& n, const FaultPlan& plan) {
    Op op;
    op.process = kNemesis;
    op.f = plan.f;
    op.value = {{"fault", n.name()}, {"phase", "start"}, {"targets", plan.targets}, {"detail", plan.detail}};
    NemesisEnv e = env();
    Op done = n.invoke(e, history_->record(op));
    history_->record(done);
    return done;
  }
  Op stop_fault(Nemesis& n, const std::string& f) {
    Op op;
    op.process = kNemesis;
    op.f = f;
    op.value = {{"fault", n.name()}, {"phase", "stop"}, {"targets", json::array()}};
    NemesisEnv e = env();
    Op done = n.invoke(e, history_->record(op));
    history_->record(done);
    return done;
  }

  static Reply cmd(const Endpoint& ep, const std::vector<std::string>& argv, milliseconds timeout = milliseconds(300)) {
    RedisConn c(ep, timeout, timeout);
    return c.command(argv);
  }
  bool answers(const Endpoint& ep, milliseconds timeout = milliseconds(300)) {
    return cmd(ep, {"PING"}, timeout).is_status("PONG");
  }
  Endpoint via(const std::string& party, size_t n) { return cluster_->endpoint_for(party, n); }
  Endpoint direct(size_t n) { return cluster_->nodes()[n].endpoint; }
  // The node's TIME in ms since the epoch.
  int64_t node_time_ms(size_t n) {
    Reply r = cmd(direct(n), {"TIME"});
    EXPECT_TRUE(r.ok());
    const redisReply* raw = r.raw();
    if (!raw || raw->elements != 2) return 0;
    return std::stoll(std::string(raw->element[0]->str, raw->element[0]->len)) * 1000 +
           std::stoll(std::string(raw->element[1]->str, raw->element[1]->len)) / 1000;
  }
  static int64_t wall_ms() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);  // this test process is not under the shim
    return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
  }
  // True once pid is stopped (state 'T'), within 2 s: a signal is delivered asynchronously.
  static bool becomes_stopped(pid_t pid) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (process_state(pid) != 'T') {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(milliseconds(5));
    }
    return true;
  }
  // 'T' when the process is stopped.
  static char process_state(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string s;
    std::getline(in, s);
    auto close = s.rfind(')');
    return close == std::string::npos || close + 2 >= s.size() ? '?' : s[close + 2];
  }

  TempDir dir_;
  RunConfig cfg_;
  MonotonicClock clock_;
  std::unique_ptr<ServerCluster> cluster_;
  std::unique_ptr<HistoryWriter> history_;
  ClientPauses pauses_{2};
  LinkFaults links_;
};

TEST_F(NemesisFaultsTest, PartitionCutsTheLinksItPlannedAndHealHealsThem) {
  start(3);
  auto n = make_nemesis("partition:isolate");
  std::mt19937_64 rng(1);
  FaultPlan plan = n->plan(PlanContext::from(cfg_, {"n1", "n2", "n3"}, {}), rng);
  const std::string victim = plan.detail["isolated"];
  const size_t v = std::stoul(victim.substr(1)) - 1;
  const size_t other = (v + 1) % 3;
  ASSERT_TRUE(answers(via("c0", v)));
  Op done = start_fault(*n, plan);
  EXPECT_TRUE(done.is_ok()) << done.error;
  EXPECT_FALSE(answers(via("c0", v))) << victim << " still reachable through its proxy link";
  EXPECT_FALSE(answers(via("c1", v)));
  EXPECT_TRUE(answers(via("c0", other)));
  EXPECT_TRUE(answers(direct(v)));  // the node itself is fine: only the link is cut
  done = stop_fault(*n, "heal");
  EXPECT_TRUE(done.is_ok()) << done.error;
  EXPECT_TRUE(answers(via("c0", v), milliseconds(2000)));
  EXPECT_TRUE(answers(via("c1", v), milliseconds(2000)));
}

TEST_F(NemesisFaultsTest, ClientSplitGivesTwoClientsDifferentMajorities) {
  start(5);
  auto n = make_nemesis("partition:client-split");
  std::mt19937_64 rng(4);
  FaultPlan plan = n->plan(PlanContext::from(cfg_, {"n1", "n2", "n3", "n4", "n5"}, {}), rng);
  ASSERT_TRUE(start_fault(*n, plan).is_ok());
  for (const std::string slot : {"c0", "c1"}) {
    int reachable = 0;
    for (size_t i = 0; i < 5; ++i) reachable += answers(via(slot, i), milliseconds(150));
    EXPECT_EQ(reachable, 3) << slot;
  }
  ASSERT_TRUE(stop_fault(*n, "heal").is_ok());
  for (size_t i = 0; i < 5; ++i) EXPECT_TRUE(answers(via("c0", i), milliseconds(2000)));
}

TEST_F(NemesisFaultsTest, DelaySlowsTheLinkUntilHealed) {
  start(1);
  auto n = make_nemesis("delay:client");
  FaultPlan plan;
  plan.f = "delay";
  plan.targets = {"c0"};
  plan.detail = {
      {"mode", "client"}, {"delay_ms", 600}, {"jitter_ms", 0}, {"links", json::array({json::array({"c0", "n1"})})}};
  ASSERT_TRUE(answers(via("c0", 0)));
  ASSERT_TRUE(start_fault(*n, plan).is_ok());
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(answers(via("c0", 0), milliseconds(5000)));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(600));  // the injected delay, a lower bound
  EXPECT_TRUE(answers(via("c1", 0), milliseconds(5000)));               // another slot's link is not delayed
  ASSERT_TRUE(stop_fault(*n, "heal-delay").is_ok());
  t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(answers(via("c0", 0), milliseconds(5000)));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(600));
}

TEST_F(NemesisFaultsTest, PausedNodeAnswersAfterResume) {
  start(2);
  auto n = make_nemesis("pause");
  FaultPlan plan;
  plan.f = "pause";
  plan.targets = {"n2"};
  plan.detail = {{"mode", "one"}};
  ASSERT_TRUE(start_fault(*n, plan).is_ok());
  EXPECT_TRUE(becomes_stopped(cluster_->pid(1)));
  EXPECT_FALSE(answers(direct(1)));
  EXPECT_TRUE(answers(direct(0)));
  Op done = stop_fault(*n, "resume");
  EXPECT_TRUE(done.is_ok());
  EXPECT_EQ(done.value["targets"], json::array({"n2"}));
  EXPECT_TRUE(answers(direct(1), milliseconds(2000)));
  EXPECT_NE(process_state(cluster_->pid(1)), 'T');
}

// pause:leader aims at the member the cluster names leader when the fault starts; a cluster without a leader
// (Redis) keeps the planned node and says the fault was not aimed. pause:leader-or-all draws either per fault.
TEST_F(NemesisFaultsTest, LeaderModeKeepsThePlannedNodeWhenNoLeaderIsNamed) {
  start(3);
  auto n = make_nemesis("pause:leader");
  ASSERT_TRUE(n);
  PlanContext ctx;
  ctx.nodes = {"n1", "n2", "n3"};
  std::mt19937_64 rng(1);
  FaultPlan plan = n->plan(ctx, rng);
  EXPECT_EQ(plan.detail["mode"], "leader");
  ASSERT_EQ(plan.targets.size(), 1u);
  Op done = start_fault(*n, plan);
  EXPECT_TRUE(done.is_ok());
  EXPECT_EQ(done.value["targets"], json::array({plan.targets[0]}));
  EXPECT_EQ(done.value["detail"].value("aimed", true), false) << done.value.dump();
  EXPECT_TRUE(stop_fault(*n, "resume").is_ok());
  auto either = make_nemesis("pause:leader-or-all");
  ASSERT_TRUE(either);
  std::set<std::string> modes;
  for (int i = 0; i < 40; ++i) {
    FaultPlan p = either->plan(ctx, rng);
    modes.insert(p.detail["mode"].get<std::string>());
    EXPECT_EQ(p.targets.size(), p.detail["mode"] == "all" ? 3u : 1u);
  }
  EXPECT_EQ(modes, (std::set<std::string>{"leader", "all"}));
  EXPECT_EQ(make_nemesis("pause:leaders"), nullptr);
}

TEST_F(NemesisFaultsTest, KillAndRestartWithoutPersistenceForgetsTheData) {
  start(1, "none");
  ASSERT_TRUE(cmd(direct(0), {"SET", "lock-0", "token"}).is_status("OK"));
  auto n = make_nemesis("kill");
  FaultPlan plan;
  plan.f = "kill";
  plan.targets = {"n1"};
  const pid_t before = cluster_->pid(0);
  ASSERT_TRUE(start_fault(*n, plan).is_ok());
  EXPECT_FALSE(cluster_->is_running(0));
  EXPECT_FALSE(testing_util::process_alive(before));
  ASSERT_TRUE(stop_fault(*n, "restart").is_ok());
  EXPECT_TRUE(answers(direct(0)));
  EXPECT_TRUE(cmd(direct(0), {"GET", "lock-0"}).is_nil());
}

TEST_F(NemesisFaultsTest, KillAndRestartWithAofAlwaysKeepsTheData) {
  start(1, "aof-always");
  ASSERT_TRUE(cmd(direct(0), {"SET", "lock-0", "token"}).is_status("OK"));
  auto n = make_nemesis("kill");
  FaultPlan plan;
  plan.f = "kill";
  plan.targets = {"n1"};
  ASSERT_TRUE(start_fault(*n, plan).is_ok());
  ASSERT_TRUE(stop_fault(*n, "restart").is_ok());
  Reply r = cmd(direct(0), {"GET", "lock-0"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.str().value_or(""), "token");
}

TEST_F(NemesisFaultsTest, ClockBumpMovesTimeAndExpiresKeysEarly) {
  start(2);
  ASSERT_TRUE(cmd(direct(0), {"SET", "lock-0", "t", "PX", "10000"}).is_status("OK"));
  ASSERT_TRUE(cmd(direct(1), {"SET", "lock-0", "t", "PX", "10000"}).is_status("OK"));
  auto n = make_nemesis("clock:bump");
  FaultPlan plan;
  plan.f = "clock-bump";
  plan.targets = {"n1"};
  plan.detail = {{"mode", "bump"}, {"delta_ms", 20000}};
  ASSERT_TRUE(start_fault(*n, plan).is_ok());
  EXPECT_NEAR(static_cast<double>(node_time_ms(0) - wall_ms()), 20000.0, 2000.0);
  EXPECT_NEAR(static_cast<double>(node_time_ms(1) - wall_ms()), 0.0, 2000.0);
  EXPECT_TRUE(cmd(direct(0), {"GET", "lock-0"}).is_nil()) << "a 10 s key survived a 20 s jump";
  EXPECT_FALSE(cmd(direct(1), {"GET", "lock-0"}).is_nil());
  ASSERT_TRUE(stop_fault(*n, "clock-reset").is_ok());
  EXPECT_NEAR(static_cast<double>(node_time_ms(0) - wall_ms()), 0.0, 2000.0);
}

TEST_F(NemesisFaultsTest, ClockStrobeFlipsUntilReset) {
  start(1);
  auto n = make_nemesis("clock:strobe");
  FaultPlan plan;
  plan.f = "clock-strobe";
  plan.targets = {"n1"};
  plan.detail = {{"mode", "strobe"}, {"delta_ms", 60000}, {"period_ms", 20}};
  ASSERT_TRUE(start_fault(*n, plan).is_ok());
  bool saw_shifted = false, saw_true = false;
  for (int i = 0; i < 200 && !(saw_shifted && saw_true); ++i) {
    const int64_t skew = node_time_ms(0) - wall_ms();
    saw_shifted |= skew > 30000;
    saw_true |= skew < 30000;
    std::this_thread::sleep_for(milliseconds(7));
  }
  EXPECT_TRUE(saw_shifted);
  EXPECT_TRUE(saw_true);
  Op done = stop_fault(*n, "clock-reset");
  ASSERT_TRUE(done.is_ok());
  EXPECT_GT(done.value["detail"]["strobe_flips"].get<int64_t>(), 0);
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(static_cast<double>(node_time_ms(0) - wall_ms()), 0.0, 2000.0);
    std::this_thread::sleep_for(milliseconds(30));
  }
}

TEST_F(NemesisFaultsTest, ClientPauseHoldsTheProcessAtItsPausePoint) {
  start(1);
  auto n = make_nemesis("client-pause");
  FaultPlan plan;
  plan.f = "client-pause";
  plan.targets = {"c1"};
  plan.detail = {{"pause_ms", 300}};
  ASSERT_TRUE(start_fault(*n, plan).is_ok());
  std::atomic<bool> stop{false};
  EXPECT_EQ(pauses_.pause_point(2, stop).count(), 0);  // process 2 is in slot c0
  EXPECT_GE(pauses_.pause_point(3, stop).count(), 290);
  Op done = stop_fault(*n, "client-resume");
  ASSERT_TRUE(done.is_ok());
  EXPECT_EQ(done.value["targets"], json::array({"p3"}));
  EXPECT_EQ(done.value["detail"]["paused"][0]["process"], 3);
}

// The driver, stopped while faults are in force, undoes every one of them.
TEST_F(NemesisFaultsTest, DriverFinishUndoesEveryFaultInForce) {
  start(3);
  cfg_.nemesis = {"partition:isolate", "pause:all", "clock:bump"};
  cfg_.nemesis_interval_s = 3;
  cfg_.time_limit_s = 60;
  // A seed whose first three faults are all in force together for at least a second (the plan is data).
  std::vector<std::unique_ptr<Nemesis>> nemeses;
  for (const auto& name : cfg_.nemesis) nemeses.push_back(make_nemesis(name));
  const PlanContext ctx = PlanContext::from(cfg_, {"n1", "n2", "n3"}, {});
  int64_t all_from = 0;
  for (cfg_.seed = 1; cfg_.seed < 100; ++cfg_.seed) {
    Schedule s = make_schedule(cfg_, ctx, nemeses);
    int64_t last_start = 0, first_stop = INT64_MAX;
    for (size_t k = 0; k < 3; ++k) {
      for (const auto& e : s.plan) {
        if (e.nemesis != k) continue;
        if (e.phase == Phase::kStart) {
          last_start = std::max(last_start, e.at_ms);
        } else {
          first_stop = std::min(first_stop, e.at_ms);
          break;
        }
      }
    }
    if (first_stop - last_start >= 1000) {
      all_from = last_start;
      break;
    }
  }
  ASSERT_GT(all_from, 0);
  NemesisDriver d(cfg_, *cluster_, *history_, pauses_, nullptr);
  d.start(dir_.str() + "/schedule.json");
  // Wait until the three starts have been applied (bounded), then stop the driver mid-fault.
  const auto until = std::chrono::steady_clock::now() + milliseconds(all_from + 10000);
  while (d.executed().size() < 3 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(d.executed().size(), 3u) << d.executed().dump();
  for (const auto& e : d.executed()) EXPECT_EQ(e["phase"], "start");
  EXPECT_TRUE(becomes_stopped(cluster_->pid(0)));
  d.finish();
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NE(process_state(cluster_->pid(i)), 'T') << "n" << i + 1 << " left paused";
    EXPECT_TRUE(answers(via("c0", i), milliseconds(2000))) << "n" << i + 1 << " left cut";
    EXPECT_NEAR(static_cast<double>(node_time_ms(i) - wall_ms()), 0.0, 2000.0) << "n" << i + 1 << " clock left moved";
  }
  // The history closes every fault period: one final stop op per fault in force.
  History h = history_->snapshot();
  int finals = 0;
  for (const auto& op : h) finals += op.process == kNemesis && op.is_ok() && op.value["detail"].value("final", false);
  EXPECT_EQ(finals, 3);
  // schedule.json has the plan and what was executed.
  std::ifstream in(dir_.str() + "/schedule.json");
  json s = json::parse(in);
  EXPECT_FALSE(s["plan"].empty());
  EXPECT_EQ(s["executed"], d.executed());
}

}  // namespace
}  // namespace lockcheck
