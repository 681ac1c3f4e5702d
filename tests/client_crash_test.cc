// The client-crash nemesis: its arms (core/client_crashes.h), its schedule, and the crash points of
// record_lock_op and setnx-expire against a real Redis (a crash between SETNX and EXPIRE leaves a key that never
// expires).
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <thread>

#include "tests/support/local_cluster.h"
#include "core/client_pauses.h"
#include "locks/lock_client.h"
#include "nemesis/nemesis.h"
#include "nemesis/schedule.h"
#include "sys/process.h"
#include "sys/redis_conn.h"
#include "tests/support/test_util.h"
#include "workloads/workload.h"

namespace lockcheck {
namespace {

using nlohmann::json;

TEST(ClientCrashes, OneArmOneCrashAtItsPointAndSlot) {
  ClientCrashes c(3);
  const int64_t id = c.arm({1}, "mid-acquire");
  EXPECT_TRUE(c.pending(id));
  EXPECT_FALSE(c.crash_point(0, "mid-acquire"));    // slot 0
  EXPECT_FALSE(c.crash_point(1, "after-acquire"));  // other point
  EXPECT_TRUE(c.crash_point(4, "mid-acquire"));     // process 4 runs in slot 1
  EXPECT_FALSE(c.crash_point(4, "mid-acquire"));    // used up
  EXPECT_FALSE(c.pending(id));
  auto f = c.fired();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].process, 4);
  EXPECT_EQ(f[0].slot, 1);
  EXPECT_EQ(f[0].point, "mid-acquire");
  EXPECT_TRUE(c.fired(id).empty());
}

TEST(ClientCrashes, WidenedArmFiresInAnySlotAndDisarmEndsIt) {
  ClientCrashes c(3);
  const int64_t id = c.arm({2}, "mid-release");
  EXPECT_TRUE(c.widen(id));
  EXPECT_TRUE(c.crash_point(0, "mid-release"));
  EXPECT_FALSE(c.widen(id));  // fired
  c.arm({0, 1, 2}, "after-acquire");
  c.disarm_all();
  EXPECT_FALSE(c.crash_point(0, "after-acquire"));
}

TEST(ClientCrashes, BadArmsAreRejected) {
  ClientCrashes c(2);
  EXPECT_THROW(c.arm({0}, "whenever"), std::invalid_argument);
  EXPECT_THROW(c.arm({2}, "mid-acquire"), std::invalid_argument);
  EXPECT_THROW(c.arm({}, "mid-acquire"), std::invalid_argument);
  EXPECT_THROW(ClientCrashes(0), std::invalid_argument);
}

TEST(ClientCrashNemesis, ModesPickThePointAndEveryFaultIsPlanned) {
  EXPECT_TRUE(make_nemesis("client-crash"));
  EXPECT_TRUE(make_nemesis("client-crash:mid-acquire"));
  EXPECT_FALSE(make_nemesis("client-crash:sometime"));
  RunConfig cfg;
  cfg.nemesis = {"client-crash:mid-release"};
  cfg.time_limit_s = 30;
  cfg.nemesis_interval_s = 3;
  cfg.seed = 5;
  std::vector<std::unique_ptr<Nemesis>> n;
  n.push_back(make_nemesis(cfg.nemesis[0]));
  Schedule s = make_schedule(cfg, PlanContext::from(cfg, {"n1"}, {}), n);
  ASSERT_GE(s.plan.size(), 4u);
  for (const auto& e : s.plan) {
    if (e.phase != Phase::kStart) continue;
    EXPECT_EQ(e.fault.f, "client-crash");
    EXPECT_EQ(e.fault.detail["point"], "mid-release");
    ASSERT_EQ(e.fault.targets.size(), 1u);
  }
}

class ClientCrashRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing_util::LocalClusterSpec o;
    o.nodes = 1;
    o.proxy = false;
    o.clock_shim = false;
    cluster_ = testing_util::start_local_cluster(o, dir_.str());
    history_ = std::make_unique<HistoryWriter>(dir_.str() + "/history.jsonl", &clock_);
  }
  void TearDown() override { cluster_->stop(); }

  std::unique_ptr<LockClient> client(const std::string& algo) {
    LockOptions o;
    o.nodes = {cluster_->nodes()[0].endpoint};
    return find_lock_algorithm(algo)->make(o);
  }
  // Runs the nemesis's start op (arming a crash at point for slot 0) as the driver would.
  void arm(Nemesis& n, const std::string& point) {
    NemesisEnv env{NemesisOptions::from(cfg_), *cluster_, *history_};
    env.client_pauses = &pauses_;
    Op op;
    op.process = kNemesis;
    op.f = "client-crash";
    op.value = {{"fault", "client-crash"}, {"phase", "start"}, {"targets", {"c0"}}, {"detail", {{"point", point}}}};
    Op done = n.invoke(env, history_->record(op));
    ASSERT_TRUE(done.is_ok()) << done.error;
  }
  json report(Nemesis& n) {
    NemesisEnv env{NemesisOptions::from(cfg_), *cluster_, *history_};
    env.client_pauses = &pauses_;
    Op op;
    op.process = kNemesis;
    op.f = "client-crash-report";
    op.value = {{"fault", "client-crash"}, {"phase", "stop"}, {"targets", json::array()}};
    return n.invoke(env, history_->record(op)).value["detail"];
  }

  TempDir dir_;
  RunConfig cfg_;
  MonotonicClock clock_;
  std::unique_ptr<ServerCluster> cluster_;
  std::unique_ptr<HistoryWriter> history_;
  ClientPauses pauses_{1};
  std::atomic<bool> stop_{false};
};

TEST_F(ClientCrashRedisTest, SetnxExpireCrashedBetweenItsCommandsLeavesAKeyWithoutExpiry) {
  auto n = make_nemesis("client-crash");
  arm(*n, "mid-acquire");
  auto lock = client("setnx-expire");
  ProcessEnv env{0, *lock, *history_, std::mt19937_64(1), stop_, WorkloadOptions::from(cfg_), &pauses_};
  LockResult r =
      record_lock_op(env, "acquire", "lock-0", [&] { return lock->acquire("lock-0", std::chrono::milliseconds(500)); });
  EXPECT_EQ(r.outcome, OpType::kInfo);
  EXPECT_NE(r.error.find("between SETNX and EXPIRE"), std::string::npos) << r.error;
  RedisConn c(cluster_->nodes()[0].endpoint, std::chrono::milliseconds(500), std::chrono::milliseconds(500));
  EXPECT_EQ(c.command({"PTTL", "lock-0"}).integer(), -1);  // exists, never expires
  json d = report(*n);
  ASSERT_EQ(d["crashed"].size(), 1u);
  EXPECT_EQ(d["crashed"][0]["point"], "mid-acquire");
  EXPECT_EQ(d["crashed"][0]["process"], 0);
  EXPECT_FALSE(d.contains("pending"));
}

TEST_F(ClientCrashRedisTest, SingleCrashesAfterItsAcquireTookEffectAndMidRelease) {
  auto n = make_nemesis("client-crash");
  arm(*n, "mid-acquire");
  auto lock = client("single");
  ProcessEnv env{0, *lock, *history_, std::mt19937_64(1), stop_, WorkloadOptions::from(cfg_), &pauses_};
  auto acquire = [&] {
    return record_lock_op(env, "acquire", "lock-0",
                          [&] { return lock->acquire("lock-0", std::chrono::milliseconds(800)); });
  };
  EXPECT_EQ(acquire().outcome, OpType::kInfo);  // it took the lock, then died
  RedisConn c(cluster_->nodes()[0].endpoint, std::chrono::milliseconds(500), std::chrono::milliseconds(500));
  auto pttl = c.command({"PTTL", "lock-0"}).integer();
  ASSERT_TRUE(pttl);
  EXPECT_GT(*pttl, 0);  // held until its TTL
  c.command({"DEL", "lock-0"});
  // mid-release: the release never reaches the node.
  arm(*n, "mid-release");
  auto other = client("single");
  ProcessEnv env2{1, *other, *history_, std::mt19937_64(2), stop_, WorkloadOptions::from(cfg_), &pauses_};
  auto take = [&] { return other->acquire("lock-1", std::chrono::milliseconds(800)); };
  ASSERT_EQ(record_lock_op(env2, "acquire", "lock-1", take).outcome, OpType::kOk);
  EXPECT_EQ(record_lock_op(env2, "release", "lock-1", [&] { return other->release("lock-1"); }).outcome, OpType::kInfo);
  EXPECT_EQ(c.command({"EXISTS", "lock-1"}).integer(), 1);
}

// An external client (a subprocess) is killed with SIGKILL at the crash point: its release never happens.
TEST_F(ClientCrashRedisTest, AnExternalClientIsKilledAtTheCrashPoint) {
#ifndef LOCKCHECK_PYTHON
  GTEST_SKIP() << "python3 not found at configure time";
#else
  LockOptions o;
  o.nodes = {cluster_->nodes()[0].endpoint};
  o.extra = {{"client_cmd", std::string(LOCKCHECK_PYTHON) + " " + LOCKCHECK_TEST_CLIENTS + "/example_client.py"},
             {"client_startup_ms", 10000}};
  auto lock = find_lock_algorithm("external")->make(o);
  ASSERT_TRUE(lock->os_pid().has_value());
  const int pid = *lock->os_pid();
  auto n = make_nemesis("client-crash");
  arm(*n, "mid-release");
  ProcessEnv env{0, *lock, *history_, std::mt19937_64(1), stop_, WorkloadOptions::from(cfg_), &pauses_};
  auto take = [&] { return lock->acquire("lock-0", std::chrono::milliseconds(5000)); };
  ASSERT_EQ(record_lock_op(env, "acquire", "lock-0", take).outcome, OpType::kOk);
  LockResult r = record_lock_op(env, "release", "lock-0", [&] { return lock->release("lock-0"); });
  EXPECT_EQ(r.outcome, OpType::kInfo);
  // Killed (a zombie until the client is destroyed and reaps it), and the lock is still there.
  std::string state;
  for (int i = 0; i < 100 && state != "Z"; ++i) {  // SIGKILL takes effect asynchronously
    std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
    std::string pid_s, comm;
    st >> pid_s >> comm >> state;
    if (state != "Z") std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(state, "Z");
  RedisConn c(cluster_->nodes()[0].endpoint, std::chrono::milliseconds(500), std::chrono::milliseconds(500));
  EXPECT_EQ(c.command({"EXISTS", "lock-0"}).integer(), 1);
  lock.reset();
  EXPECT_NE(::kill(pid, 0), 0);  // reaped
#endif
}

}  // namespace
}  // namespace lockcheck
