// The lock contract: every lock of the registry (the built-in algorithms and the shipped library adapters) on
// every server kind that serves the protocol it speaks (tests/support/contract_params.h), made as a run makes
// them (resolve_plan, make_cluster, run_lock_options) on the local backend, healthy: one client acquires; a second
// is refused while it holds, and can release nothing; the holder releases once; then the second acquires. Where
// the lock reports a validity it lies in (0, TTL]; where the run hands out fencing tokens, the second holder's is
// larger. So a new lock, or a new server kind that serves a protocol, is tested without a new test list: the
// kind-specific behaviours (blocking waits, session expiry, a library's own keys) stay in their own suites
// (adapter_test, etcd_lock_test, zookeeper_lock_test). Labels and resource locks come from the kinds' specs
// (tests/ctest_labels.cc). A lock or server this machine has not built is skipped with the reason, except under
// CI=true.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "harness/cluster_factory.h"
#include "harness/plan.h"
#include "locks/adapters.h"
#include "locks/lock_client.h"
#include "servers/registry.h"
#include "tests/support/ci.h"
#include "tests/support/contract_params.h"
#include "tests/support/temp_dir.h"

#ifndef LOCKCHECK_CLIENTS_DIR
#define LOCKCHECK_CLIENTS_DIR ""
#endif

namespace lockcheck {
namespace {

using std::chrono::milliseconds;

// Long enough that no lock lapses during the test on a loaded machine (ZooKeeper's session timeout, etcd's lease).
constexpr milliseconds kTtl{10000};

class LockContractTest : public ::testing::TestWithParam<testing_util::LockContractParam> {
 protected:
  void SetUp() override {
    const auto& p = GetParam();
    ::setenv("LOCKCHECK_CLIENTS_DIR", LOCKCHECK_CLIENTS_DIR, 1);
    const ServerSpec& spec = server_spec(p.kind);
    LOCKCHECK_NEED(!spec.builds(resolve_server_options(spec, p.server_opts)).empty(),
                   "no " + p.kind + " build on this machine (" + spec.install_hint() + ")");
    if (const LockAdapter* a = find_lock_adapter(p.lock)) {
      LOCKCHECK_NEED(std::ifstream(adapter_program(*a)).good(),
                     adapter_program(*a) + " is not built (scripts/build-clients; needs " + a->toolchain + ")");
    }
    RunConfig c;
    c.server = p.kind;
    c.server_opts = p.server_opts;
    c.lock = p.lock;
    c.concurrency = 2;
    c.seed = 11;
    c.ttl_ms = kTtl.count();
    c.op_timeout_ms = 2000;  // a first request of a fresh cluster on a loaded 2-core machine
    const LockAlgorithm* a = find_lock_algorithm(p.lock);
    c.fencing = a->hands_out_tokens && !*a->no_fencing;
    plan_ = resolve_plan(c);
  }

  // Process `process`'s client on client slot `slot`, as the runner makes it (a JVM adapter gets the start-up
  // allowance the ZooKeeper suite gives it).
  std::unique_ptr<LockClient> client(const Cluster& cluster, const std::string& slot, int process) {
    LockOptions o = run_lock_options(plan_, cluster, slot, process, run_.str() + "/p" + std::to_string(process) +
                                                                        ".stderr");
    o.extra["client_startup_ms"] = 20000;
    o.extra["client_timeout_ms"] = 15000;
    return plan_.lock->make(o);
  }

  TempDir run_;
  Plan plan_;
};

TEST_P(LockContractTest, ExcludesWhileHeldAndPassesOnAfterRelease) {
  auto cluster = make_cluster(plan_, run_.str());
  cluster->start();
  auto a = client(*cluster, "c0", 0);
  auto b = client(*cluster, "c1", 1);
  const std::string key = "contract-0";

  // A fresh cluster's first grant can take a while (a leader elected, a Sentinel's first look): what is checked is
  // that it comes, within a bound.
  LockResult first;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  do {
    first = a->acquire(key, kTtl);
    if (first.outcome == OpType::kOk) break;
    if (first.outcome == OpType::kInfo) a = client(*cluster, "c0", 2);  // indeterminate: a fresh client, as a run
    std::this_thread::sleep_for(milliseconds(500));
  } while (std::chrono::steady_clock::now() < deadline);
  ASSERT_EQ(first.outcome, OpType::kOk) << first.error;
  if (first.validity_ms) {
    EXPECT_GT(*first.validity_ms, 0);
    EXPECT_LE(*first.validity_ms, kTtl.count());
  }
  if (plan_.fencing) EXPECT_TRUE(first.token.has_value()) << "fencing is on: the grant carries a token";

  const LockResult busy = b->acquire(key, kTtl);
  EXPECT_EQ(busy.outcome, OpType::kFail) << "a second client must be refused while the lock is held: " << busy.error;
  EXPECT_NE(b->release(key).outcome, OpType::kOk) << "a client that never held the lock released it";

  const LockResult released = a->release(key);
  EXPECT_EQ(released.outcome, OpType::kOk) << released.error;
  EXPECT_NE(a->release(key).outcome, OpType::kOk) << "released twice";

  const LockResult second = b->acquire(key, kTtl);
  ASSERT_EQ(second.outcome, OpType::kOk) << "the lock must pass on after its release: " << second.error;
  if (first.token && second.token) EXPECT_GT(*second.token, *first.token) << "a fencing token only grows";
  EXPECT_EQ(b->release(key).outcome, OpType::kOk);
  a.reset();
  b.reset();
  cluster->stop();
}

INSTANTIATE_TEST_SUITE_P(Registry, LockContractTest, ::testing::ValuesIn(testing_util::lock_contract_params()),
                         [](const auto& info) { return testing_util::lock_contract_param_name(info.param); });

}  // namespace
}  // namespace lockcheck
