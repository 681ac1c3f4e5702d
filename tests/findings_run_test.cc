// Integration tests of the anomalies of the lock literature (each well under a minute, against real redis-server):
//   - the stuck lock: setnx-expire under client-crash:mid-acquire, a whole run, judged by liveness;
//   - livelock: a scripted scenario, the same crash, and an operator deletes the stuck key after a while: the
//     acquires that failed meanwhile with no holder are a livelock; a crash after an atomic SET NX PX is not;
//   - the resurrected lock: the renew workload with single-extend-setnx under client-pause, a whole run, judged
//     by renewal; the same with single's honest extend finds none.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "checkers/checker.h"
#include "tests/support/local_cluster.h"
#include "core/client_pauses.h"
#include "core/exit_codes.h"
#include "core/history.h"
#include "harness/runner.h"
#include "locks/lock_client.h"
#include "sys/redis_conn.h"
#include "tests/support/test_util.h"
#include "workloads/workload.h"

namespace lockcheck {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

json checker_result(const json& results, const std::string& name) {
  for (const auto& c : results["checkers"]) {
    if (c["checker"] == name) return c;
  }
  return json();
}

RunConfig short_run(const TempDir& dir, uint64_t seed) {
  RunConfig c;
  c.results_dir = dir.str() + "/results";
  c.progress = false;
  c.seed = seed;
  c.nemesis_targeting = "holder";
  c.nemesis_interval_s = 1;
  c.time_limit_s = 10;
  c.ttl_ms = 300;
  c.op_timeout_ms = 200;
  c.concurrency = 3;
  return c;
}

TEST(FindingsRunTest, StuckLockSetnxExpireClientCrashedBetweenItsCommands) {
  TempDir dir;
  RunConfig c = short_run(dir, 3);
  c.lock = "setnx-expire";
  c.nemesis = {"client-crash:mid-acquire"};
  std::ostringstream out;
  RunOutcome o = run_test(c, out);
  ASSERT_FALSE(o.run_dir.empty()) << out.str();
  json l = checker_result(read_json(o.run_dir + "/results.json"), "liveness");
  ASSERT_TRUE(l.is_object()) << out.str();
  EXPECT_EQ(l["valid"], "invalid") << out.str();
  ASSERT_FALSE(l["anomalies"].empty());
  EXPECT_EQ(l["anomalies"][0]["kind"], "stuck-lock") << l.dump();
  EXPECT_TRUE(l["anomalies"][0].contains("from_ns"));
  EXPECT_EQ(o.exit_code, kExitInvalid);
}

TEST(FindingsRunTest, ResurrectedLockExtendBySetNxUnderClientPause) {
  TempDir dir;
  RunConfig c = short_run(dir, 1);
  c.lock = "single-extend-setnx";
  c.workload = "renew";
  c.concurrency = 2;
  c.nemesis = {"client-pause"};
  c.time_limit_s = 15;
  std::ostringstream out;
  RunOutcome o = run_test(c, out);
  ASSERT_FALSE(o.run_dir.empty()) << out.str();
  json r = checker_result(read_json(o.run_dir + "/results.json"), "renewal");
  EXPECT_EQ(r["valid"], "invalid") << out.str();
  ASSERT_FALSE(r["anomalies"].empty());
  EXPECT_EQ(r["anomalies"][0]["kind"], "resurrected-lock");
  // The honest extend (compare-and-pexpire) fails instead: no resurrected lock.
  c.lock = "single";
  std::ostringstream out2;
  RunOutcome h = run_test(c, out2);
  json hr = checker_result(read_json(h.run_dir + "/results.json"), "renewal");
  EXPECT_EQ(hr["valid"], "valid") << out2.str();
  EXPECT_GT(hr["stats"]["failed_extends"].get<int64_t>(), 0) << hr.dump();
}

// The scripted livelock: process 0 crashes between SETNX and EXPIRE; processes 1 and 2 keep trying for ~2 s
// (the bound is 2 x 300 + 150 ms); then an operator deletes the key and process 1 gets it.
class LivelockScenario : public ::testing::Test {
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

  struct Proc {
    std::unique_ptr<LockClient> lock;
    std::unique_ptr<ProcessEnv> env;
    LockResult acquire() {
      return record_lock_op(*env, "acquire", "lock-0", [&] { return lock->acquire("lock-0", milliseconds(300)); });
    }
  };
  Proc proc(const std::string& algo, Process p) {
    LockOptions o;
    o.nodes = {cluster_->nodes()[0].endpoint};
    o.op_timeout = milliseconds(150);
    Proc c{find_lock_algorithm(algo)->make(o), nullptr};
    c.env.reset(
        new ProcessEnv{p, *c.lock, *history_, std::mt19937_64(p), stop_, WorkloadOptions::from(cfg_), &pauses_});
    return c;
  }
  // Processes 1 and 2 try every 20 ms for `ms`; true when one got the lock.
  bool contend(Proc& a, Proc& b, int64_t ms) {
    const auto until = std::chrono::steady_clock::now() + milliseconds(ms);
    while (std::chrono::steady_clock::now() < until) {
      if (a.acquire().outcome == OpType::kOk || b.acquire().outcome == OpType::kOk) return true;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return false;
  }
  CheckResult liveness() {
    CheckOptions o;
    o.ttl_ms = 300;
    o.op_timeout_ms = 150;
    return run_checker(*make_checker("liveness"), history_->snapshot(), o);
  }

  TempDir dir_;
  RunConfig cfg_;
  MonotonicClock clock_;
  std::unique_ptr<ServerCluster> cluster_;
  std::unique_ptr<HistoryWriter> history_;
  ClientPauses pauses_{3};
  std::atomic<bool> stop_{false};
};

TEST_F(LivelockScenario, AcquiresFailingWithNoHolderUntilTheKeyIsDeletedAreALivelock) {
  Proc crasher = proc("setnx-expire", 0), p1 = proc("setnx-expire", 1), p2 = proc("setnx-expire", 2);
  pauses_.crashes().arm({0}, "mid-acquire");
  ASSERT_EQ(crasher.acquire().outcome, OpType::kInfo);
  EXPECT_FALSE(contend(p1, p2, 2000));  // stuck: the key has no expiry
  CheckResult stuck = liveness();
  ASSERT_EQ(stuck.valid, Validity::kInvalid) << stuck.summary;
  EXPECT_EQ(stuck.anomalies[0]["kind"], "stuck-lock");
  RedisConn admin(cluster_->nodes()[0].endpoint, milliseconds(500), milliseconds(500));
  ASSERT_EQ(admin.command({"DEL", "lock-0"}).integer(), 1);  // an operator clears it by hand
  ASSERT_TRUE(contend(p1, p2, 1000));
  CheckResult r = liveness();
  ASSERT_EQ(r.valid, Validity::kInvalid) << r.summary;
  ASSERT_EQ(r.anomalies.size(), 1u);
  EXPECT_EQ(r.anomalies[0]["kind"], "livelock") << r.anomalies[0].dump();
  EXPECT_GT(r.anomalies[0]["stretch_ms"].get<double>(), 1500.0);
}

TEST_F(LivelockScenario, ACrashAfterAnAtomicSetIsHeldOnlyUntilItsTtl) {
  Proc crasher = proc("set-nx-ex-del", 0), p1 = proc("set-nx-ex-del", 1), p2 = proc("set-nx-ex-del", 2);
  pauses_.crashes().arm({0}, "mid-acquire");
  ASSERT_EQ(crasher.acquire().outcome, OpType::kInfo);
  ASSERT_TRUE(contend(p1, p2, 2000));  // expired after its TTL
  CheckResult r = liveness();
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
}

}  // namespace
}  // namespace lockcheck
