// The `etcd` lock (clients/etcd: etcd's concurrency.Mutex over a Session) against a real five-member etcd
// cluster (label `etcd`), the contract of the other adapters (adapter_test): acquire, exclude, release, extend;
// a dead majority and a paused majority (never ok; paused: indeterminate, the request may have landed); the
// fencing token is the lock key's revision and grows; a healthy `lockcheck run` is valid. Skips without etcd or
// without the built adapter (scripts/build-clients), except under CI=true.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "core/config.h"
#include "harness/plan.h"
#include "harness/runner.h"
#include "locks/adapters.h"
#include "tests/support/etcd_test_cluster.h"
#include "tests/support/lock_contract.h"
#include "tests/support/lock_test_util.h"

#ifndef LOCKCHECK_CLIENTS_DIR
#define LOCKCHECK_CLIENTS_DIR ""
#endif

namespace lockcheck {
namespace {

using std::chrono::milliseconds;
using testing_util::EtcdTestCluster;
using testing_util::make_lock;

#define NEED_ETCD_AND_ADAPTER()                                                                           \
  LOCKCHECK_NEED_ETCD();                                                                                 \
  LOCKCHECK_NEED(testing_util::etcd_adapter_built(LOCKCHECK_CLIENTS_DIR), "the etcd adapter is not built (scripts/build-clients; needs go): " << \
                                      LOCKCHECK_CLIENTS_DIR << "/etcd")

LockOptions etcd_options(const EtcdTestCluster& c, const nlohmann::json& opts = nlohmann::json::object(),
                         const std::string& slot = "c0", bool fencing = false) {
  return c.adapter_options(opts, slot, fencing);
}

TEST(EtcdLock, AcquiresExcludesExtendsAndReleases) {
  NEED_ETCD_AND_ADAPTER();
  EtcdTestCluster c;
  auto a = make_lock("etcd", etcd_options(c, {}, "c0", true));
  auto b = make_lock("etcd", etcd_options(c, {}, "c1", true));
  // The validity is the lease's granted TTL (10 s) less the time the acquire took.
  testing_util::expect_lock_contract(*a, *b, milliseconds(10000), 7000, "the lock key's revision");
}

TEST(EtcdLock, ShortTtlIsRoundedUpToWholeSecondsAndReportedAsGranted) {
  NEED_ETCD_AND_ADAPTER();
  EtcdTestCluster c;
  auto a = make_lock("etcd", etcd_options(c));
  const auto start = std::chrono::steady_clock::now();
  LockResult r = a->acquire("lock-0", milliseconds(300));
  const auto took = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.outcome, OpType::kOk) << r.error;
  ASSERT_TRUE(r.validity_ms.has_value());
  // 300 ms is asked as a 1 s lease, which the server raises to its minimum (2 s with a 1 s election timeout). The
  // validity is the grant less the acquire's time, which a loaded machine stretches: the two together are the grant.
  std::cout << "[ etcd     ] --ttl-ms 300: validity " << *r.validity_ms << " ms, acquire " << took << " ms\n";
  EXPECT_GT(*r.validity_ms + took, 1000);
  EXPECT_LE(*r.validity_ms, 2000);
  EXPECT_EQ(a->release("lock-0").outcome, OpType::kOk);
}

TEST(EtcdLock, BlockingModeWaitsForTheHolder) {
  NEED_ETCD_AND_ADAPTER();
  EtcdTestCluster c;
  auto a = make_lock("etcd", etcd_options(c));
  auto b = make_lock("etcd", etcd_options(c, {{"wait_ms", 8000}}, "c1"));
  ASSERT_EQ(a->acquire("lock-0", milliseconds(10000)).outcome, OpType::kOk);
  std::thread releaser([&] {
    std::this_thread::sleep_for(milliseconds(1000));
    a->release("lock-0");
  });
  LockResult r = b->acquire("lock-0", milliseconds(10000));
  releaser.join();
  EXPECT_EQ(r.outcome, OpType::kOk) << r.error;
}

TEST(EtcdLock, DeadMajorityIsNeverOkAndRecovers) {
  NEED_ETCD_AND_ADAPTER();
  EtcdTestCluster c;
  auto a = testing_util::warmed_up_lock("etcd", etcd_options(c), milliseconds(10000));
  ASSERT_TRUE(a);
  for (size_t n = 0; n < 3; ++n) c.cluster->kill(n);
  LockResult r = a->acquire("lock-0", milliseconds(10000));
  EXPECT_NE(r.outcome, OpType::kOk) << "no quorum, yet acquired";
  std::cout << "[ etcd     ] dead majority: " << to_string(r.outcome) << " (" << r.error << ")\n";
  for (size_t n = 0; n < 3; ++n) c.cluster->restart(n);
  LockResult again;
  for (int i = 0; i < 10 && again.outcome != OpType::kOk; ++i) {
    again = a->acquire("lock-1", milliseconds(10000));
    if (again.outcome != OpType::kOk) std::this_thread::sleep_for(milliseconds(1000));
  }
  EXPECT_EQ(again.outcome, OpType::kOk) << again.error;
}

TEST(EtcdLock, PausedMajorityIsIndeterminate) {
  NEED_ETCD_AND_ADAPTER();
  EtcdTestCluster c;
  auto a = testing_util::warmed_up_lock("etcd", etcd_options(c), milliseconds(10000));
  ASSERT_TRUE(a);
  for (size_t n = 0; n < 5; ++n) c.cluster->pause(n);
  LockResult r = a->acquire("lock-0", milliseconds(10000));
  for (size_t n = 0; n < 5; ++n) c.cluster->resume(n);
  EXPECT_EQ(r.outcome, OpType::kInfo) << r.error;  // sent, never answered: it may have happened
}

TEST(EtcdLock, HealthyRunIsValid) {
  NEED_ETCD_AND_ADAPTER();
  TempDir results;
  RunConfig cfg;
  cfg.server = "etcd";
  cfg.lock = "etcd";
  cfg.time_limit_s = 6;
  cfg.ttl_ms = 3000;
  cfg.op_timeout_ms = 2000;
  cfg.concurrency = 4;
  cfg.seed = 1;
  cfg.progress = false;
  cfg.results_dir = results.path();
  resolve_lock(cfg);
  validate(cfg);
  std::ostringstream out;
  RunOutcome o = run_test(cfg, out);
  EXPECT_EQ(o.exit_code, 0) << out.str();
}

}  // namespace
}  // namespace lockcheck
