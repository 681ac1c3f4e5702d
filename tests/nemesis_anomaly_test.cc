// The known anomalies, reproduced as scripted scenarios: the nemesis and two lock clients are driven by hand
// against a real local cluster, every op is recorded in a history, and the mutex checker judges it. Each
// scenario takes a few seconds.
//   1. `single` under a client pause longer than the TTL (Kleppmann's GC pause) loses mutual exclusion.
//   2. Redlock under a clock jump (Kleppmann's first scenario): client A reaches n1,n2,n3 and client B
//      n3,n4,n5 (a client-split partition); A locks n1,n2,n3; n3's clock jumps past the TTL; B locks n3,n4,n5.
//   3. Redlock without persistence under a kill and fast restart of n3, same shape: B locks n3,n4,n5 while A
//      still holds. With a restart delay above the TTL (--restart-delay) mutual exclusion is kept.
//   4. `single-failover` under failover: the master acknowledges A's lock but its replicas lag behind (a large
//      write ahead of it in the replication stream), the master dies, Sentinel promotes a replica, B locks it.
// The Redlock and failover scenarios need the lock algorithms of branch `locks` (redlock, single-failover) and
// its replicated topology; where the build lacks them the test says so and skips.
#include <gtest/gtest.h>

#include <thread>

#include "checkers/checker.h"
#include "tests/support/local_cluster.h"
#include "core/client_pauses.h"
#include "harness/cluster_factory.h"
#include "locks/lock_client.h"
#include "nemesis/link_faults.h"
#include "nemesis/nemesis.h"
#include "sys/redis_conn.h"
#include "tests/support/test_util.h"
#include "workloads/workload.h"

namespace lockcheck {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

// One lock client process of a scenario, recording its ops like a workload process does.
struct Client {
  Process process;
  std::unique_ptr<LockClient> lock;
  std::unique_ptr<ProcessEnv> env;

  LockResult acquire(const std::string& key, milliseconds ttl) {
    return record_lock_op(*env, "acquire", key, [&] { return lock->acquire(key, ttl); });
  }
  LockResult release(const std::string& key) {
    return record_lock_op(*env, "release", key, [&] { return lock->release(key); });
  }
};

class AnomalyTest : public ::testing::Test {
 protected:
  // Starts a local cluster (cfg_ as set by the test) through the run's cluster factory.
  void start_cluster() {
    cfg_.concurrency = 2;
    cfg_.nodes_given = true;
    Plan plan = resolve_server_plan(cfg_);
    plan.power_shim = plan.abilities.has(Ability::kPowerLoss);
    cluster_ = make_cluster(plan, dir_.str());
    cluster_->start();
    history_ = std::make_unique<HistoryWriter>(dir_.str() + "/history.jsonl", &clock_);
  }

  Client client(const std::string& algo, Process p) {
    const LockAlgorithm* a = find_lock_algorithm(algo);
    if (!a) throw std::runtime_error("no lock algorithm " + algo);
    LockOptions o;
    const std::string slot = "c" + std::to_string(p % cfg_.concurrency);
    for (size_t n = 0; n < cluster_->nodes().size(); ++n) o.nodes.push_back(cluster_->endpoint_for(slot, n));
    for (const auto& n : cluster_->nodes()) o.node_addresses.push_back(n.endpoint);
    for (const auto& s : cluster_->sentinels()) o.sentinels.push_back(s.endpoint);
    o.op_timeout = milliseconds(150);
    o.connect_timeout = milliseconds(150);
    o.seed = static_cast<uint64_t>(p) + 1;
    o.extra = {{"wait_replicas", 0}};
    Client c{p, a->make(o), nullptr};
    c.env.reset(
        new ProcessEnv{p, *c.lock, *history_, std::mt19937_64(p), stop_, WorkloadOptions::from(cfg_), &pauses_});
    return c;
  }

  NemesisEnv env() {
    NemesisEnv e{NemesisOptions::from(cfg_), *cluster_, *history_};
    e.client_pauses = &pauses_;
    e.links = &links_;
    return e;
  }

  // Applies a fault (phase start) or its heal (phase stop) through nemesis n, recorded in the history.
  Op nemesis_op(Nemesis& n, const std::string& f, const std::string& phase, json targets,
                json detail = json::object()) {
    Op op;
    op.process = kNemesis;
    op.f = f;
    op.value = {{"fault", n.name()}, {"phase", phase}, {"targets", targets}, {"detail", detail}};
    NemesisEnv e = env();
    Op done = n.invoke(e, history_->record(op));
    return history_->record(done);
  }

  // Kleppmann's shape on 5 nodes: slot c0 reaches n1,n2,n3; slot c1 reaches n3,n4,n5.
  void split_clients(Nemesis& partition) {
    json links = json::array(
        {json::array({"c0", "n4"}), json::array({"c0", "n5"}), json::array({"c1", "n1"}), json::array({"c1", "n2"})});
    Op done = nemesis_op(partition, "partition", "start", {"n1", "n2", "n4", "n5", "c0", "c1"},
                         {{"mode", "client-split"}, {"links", links}});
    ASSERT_TRUE(done.is_ok()) << done.error;
  }

  CheckResult mutex_verdict() {
    auto c = make_checker("mutex");
    if (!c) {
      CheckResult r;
      r.valid = Validity::kUnknown;
      r.summary = "the mutex checker is not in this build (branch checkers)";
      return r;
    }
    return run_checker(*c, history_->snapshot(), CheckOptions{});
  }

  std::string history_text() {
    std::string s;
    for (const auto& op : history_->snapshot()) s += to_jsonl(op) + "\n";
    return s;
  }

  TempDir dir_;
  RunConfig cfg_;
  MonotonicClock clock_;
  std::unique_ptr<ServerCluster> cluster_;
  std::unique_ptr<HistoryWriter> history_;
  std::atomic<bool> stop_{false};
  ClientPauses pauses_{2};
  LinkFaults links_;
};

TEST_F(AnomalyTest, SingleLosesMutualExclusionUnderAClientPauseLongerThanTheTtl) {
  cfg_.nodes = 1;
  start_cluster();
  const milliseconds ttl(500);
  Client a = client("single", 0), b = client("single", 1);
  auto pause = make_nemesis("client-pause");
  Op armed = nemesis_op(*pause, "client-pause", "start", {"c0"}, {{"pause_ms", 2 * ttl.count()}});
  ASSERT_TRUE(armed.is_ok());
  // A acquires, then stops at its pause point (between acquire and use) for twice the TTL.
  std::thread holder([&] {
    EXPECT_EQ(a.acquire("lock-0", ttl).outcome, OpType::kOk);
    a.env->pause_point();
    a.release("lock-0");  // A carries on as if it held the lock, and releases it
  });
  ASSERT_TRUE(pauses_.wait_fired(armed.value["detail"]["arm"].get<int64_t>(), std::chrono::seconds(5)));
  std::this_thread::sleep_for(ttl + milliseconds(100));
  EXPECT_EQ(b.acquire("lock-0", ttl).outcome, OpType::kOk) << "the lock did not expire under the paused holder";
  holder.join();
  b.release("lock-0");
  Op resumed = nemesis_op(*pause, "client-resume", "stop", json::array());
  EXPECT_EQ(resumed.value["targets"], json::array({"p0"}));
  CheckResult r = mutex_verdict();
  EXPECT_EQ(r.valid, Validity::kInvalid) << r.summary << "\n" << history_text();
  ASSERT_FALSE(r.anomalies.empty());
  // The paused holder outlived its lease: named for what it is.
  EXPECT_EQ(r.anomalies[0]["kind"], "stale-holder") << r.anomalies[0].dump();
}

TEST_F(AnomalyTest, RedlockLosesMutualExclusionWhenAClockJumpsOnTheSharedNode) {
  ASSERT_NE(find_lock_algorithm("redlock"), nullptr);
  cfg_.nodes = 5;
  start_cluster();
  const milliseconds ttl(3000);
  Client a = client("redlock", 0), b = client("redlock", 1);
  auto partition = make_nemesis("partition");
  auto clock = make_nemesis("clock");
  split_clients(*partition);
  ASSERT_EQ(a.acquire("lock-0", ttl).outcome, OpType::kOk) << "A could not lock n1,n2,n3";
  // Control: with n3 held by A, B gets only n4,n5.
  EXPECT_NE(b.acquire("lock-0", ttl).outcome, OpType::kOk);
  Op jumped = nemesis_op(*clock, "clock-bump", "start", {"n3"}, {{"mode", "bump"}, {"delta_ms", 2 * ttl.count()}});
  ASSERT_TRUE(jumped.is_ok()) << jumped.error;
  EXPECT_EQ(b.acquire("lock-0", ttl).outcome, OpType::kOk) << "B could not lock n3,n4,n5 after n3's clock jump";
  a.release("lock-0");
  b.release("lock-0");
  nemesis_op(*clock, "clock-reset", "stop", json::array());
  nemesis_op(*partition, "heal", "stop", json::array());
  CheckResult r = mutex_verdict();
  EXPECT_EQ(r.valid, Validity::kInvalid) << r.summary << "\n" << history_text();
}

class RedlockRestartTest : public AnomalyTest {
 public:
  // Kill n3 while A holds n1,n2,n3; restart it after restart_delay; B tries to lock during A's hold, then
  // once more after A released. Returns the mutex checker's verdict.
  Validity run(milliseconds restart_delay) {
    cfg_.nodes = 5;
    cfg_.server_opts["persistence"] = "none";
    start_cluster();
    const milliseconds ttl(2000), hold(1000);
    Client a = client("redlock", 0), b = client("redlock", 1);
    auto partition = make_nemesis("partition");
    auto kill = make_nemesis("kill");
    split_clients(*partition);
    const auto t0 = std::chrono::steady_clock::now();
    LockResult got = a.acquire("lock-0", ttl);
    EXPECT_EQ(got.outcome, OpType::kOk);
    EXPECT_GT(got.validity_ms.value_or(0), hold.count());
    Op killed =
        nemesis_op(*kill, "kill", "start", {"n3"}, {{"mode", "one"}, {"restart_delay_ms", restart_delay.count()}});
    EXPECT_TRUE(killed.is_ok()) << killed.error;
    const auto killed_at = std::chrono::steady_clock::now();
    if (restart_delay.count() == 0) EXPECT_TRUE(nemesis_op(*kill, "restart", "stop", json::array()).is_ok());
    // B tries while A holds the lock (A's hold is well within its validity). A releases on time, on its own
    // thread: one of B's acquires (with Redlock's retries against a dead and two cut nodes) can outlast it.
    std::thread a_releases([&] {
      std::this_thread::sleep_until(t0 + hold);
      a.release("lock-0");
    });
    bool b_holds = false;
    while (!b_holds && std::chrono::steady_clock::now() < t0 + hold) {
      b_holds = b.acquire("lock-0", ttl).outcome == OpType::kOk;
      if (!b_holds) std::this_thread::sleep_for(milliseconds(100));
    }
    a_releases.join();
    if (restart_delay.count() > 0) {
      std::this_thread::sleep_until(killed_at + restart_delay);
      EXPECT_TRUE(nemesis_op(*kill, "restart", "stop", json::array()).is_ok());
    }
    if (b_holds) {
      b.release("lock-0");
    } else {
      // A released (and its keys expired long ago): B takes the lock now, legitimately.
      EXPECT_EQ(b.acquire("lock-0", ttl).outcome, OpType::kOk);
      b.release("lock-0");
    }
    nemesis_op(*partition, "heal", "stop", json::array());
    CheckResult r = mutex_verdict();
    summary_ = r.summary + "\n" + history_text();
    return r.valid;
  }
  std::string summary_;
};

TEST_F(RedlockRestartTest, WithoutPersistenceAFastRestartLosesMutualExclusion) {
  ASSERT_NE(find_lock_algorithm("redlock"), nullptr);
  EXPECT_EQ(run(milliseconds(0)), Validity::kInvalid) << summary_;
}

TEST_F(RedlockRestartTest, ARestartDelayAboveTheTtlKeepsMutualExclusion) {
  ASSERT_NE(find_lock_algorithm("redlock"), nullptr);
  EXPECT_EQ(run(milliseconds(2500)), Validity::kValid) << summary_;
}

TEST_F(AnomalyTest, SingleFailoverLosesMutualExclusionUnderFailover) {
  ASSERT_NE(find_lock_algorithm("single-failover"), nullptr);
  cfg_.nodes = 3;
  cfg_.server_opts["topology"] = "replicated";
  start_cluster();
  ASSERT_FALSE(cluster_->sentinels().empty());
  const milliseconds ttl(20000);
  Client a = client("single-failover", 0), b = client("single-failover", 1);
  auto pause = make_nemesis("pause");
  auto failover = make_nemesis("failover:kill");
  // Replication lag, without touching node-to-node links (they bypass the fault proxy on this backend): the
  // replicas stop for a moment (well under Sentinel's down-after) while the master takes a write larger than
  // the kernel's socket buffers, so that A's SET waits in the master's replication buffer behind it.
  ASSERT_TRUE(nemesis_op(*pause, "pause", "start", {"n2", "n3"}, {{"mode", "minority"}}).is_ok());
  {
    RedisConn master(cluster_->nodes()[0].endpoint, milliseconds(2000), milliseconds(10000));
    ASSERT_TRUE(master.command({"SET", "filler", std::string(size_t{48} << 20, 'x')}).is_status("OK"));
  }
  ASSERT_EQ(a.acquire("lock-0", ttl).outcome, OpType::kOk);
  // The master dies before its replicas have A's lock; they wake 300 ms later and Sentinel promotes one.
  // The resume runs beside the failover op, so it is not recorded: one process (the nemesis) has one op open at a
  // time in a history, and the history reader refuses a second (the checkers judge the clients' ops here).
  std::thread wake([&] {
    std::this_thread::sleep_for(milliseconds(300));
    Op op;
    op.process = kNemesis;
    op.f = "resume";
    op.value = {{"fault", pause->name()}, {"phase", "stop"}, {"targets", json::array()}, {"detail", json::object()}};
    NemesisEnv e = env();
    pause->invoke(e, op);
  });
  Op done = nemesis_op(*failover, "failover", "start", json::array(), {{"mode", "kill"}, {"wait_ms", 15000}});
  wake.join();
  ASSERT_TRUE(done.is_ok()) << done.error;
  ASSERT_EQ(done.value["detail"]["master"], "n1");
  ASSERT_TRUE(done.value["detail"]["promoted"].is_string()) << "Sentinel promoted no replica: " << done.value.dump();
  const std::string promoted = done.value["detail"]["promoted"];
  {
    RedisConn c(cluster_->nodes()[std::stoul(promoted.substr(1)) - 1].endpoint, milliseconds(500), milliseconds(500));
    ASSERT_EQ(c.command({"EXISTS", "lock-0"}).integer().value_or(-1), 0) << promoted << " got A's lock after all";
  }
  // B finds the new master through Sentinel and takes the lock A still holds.
  LockResult got;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    got = b.acquire("lock-0", ttl);
    if (got.outcome != OpType::kOk) std::this_thread::sleep_for(milliseconds(200));
  } while (got.outcome != OpType::kOk && std::chrono::steady_clock::now() < until);
  EXPECT_EQ(got.outcome, OpType::kOk) << "B could not lock the promoted master";
  a.release("lock-0");
  b.release("lock-0");
  nemesis_op(*failover, "failover-heal", "stop", json::array());
  CheckResult r = mutex_verdict();
  EXPECT_EQ(r.valid, Validity::kInvalid) << r.summary << "\n" << history_text();
}

}  // namespace
}  // namespace lockcheck
