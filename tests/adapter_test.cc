// The shipped lock-library adapters (clients/, locks/adapters.cc) against real redis-server: acquire, exclude,
// release and extend; a dead node (definite fail, nothing sent); a paused node (indeterminate: the request
// may have landed). Also the adapter registry (options to flags, unknown keys) and client-pause's SIGSTOP of an
// external client's process. An adapter that scripts/build-clients has not built is skipped with the reason,
// except with CI=true, where that is a failure.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/client_pauses.h"
#include "core/config.h"
#include "harness/cli.h"
#include "harness/matrix.h"
#include "harness/plan.h"
#include "harness/runner.h"
#include "locks/adapters.h"
#include "sys/process.h"
#include "tests/support/ci.h"
#include "tests/support/lock_test_util.h"
#include "tests/support/raw_adapter.h"

#ifndef LOCKCHECK_CLIENTS_DIR
#define LOCKCHECK_CLIENTS_DIR ""
#endif

namespace lockcheck {
namespace {

using std::chrono::milliseconds;
using testing_util::make_lock;
using testing_util::RawAdapter;
using testing_util::TestCluster;

// The adapter's LockOptions: every node of c, client_cmd from the registry.
LockOptions adapter_options(const TestCluster& c, const std::string& name, nlohmann::json opts = {}) {
  LockOptions o = c.options(milliseconds(300));
  // rueidislock's default of 20 ms per key's acquire is short on a loaded 2-core machine: a timeout there is a
  // definite fail, which would make "acquire succeeds" flaky here.
  if (name == "rueidislock" && !opts.contains("try_next_after_ms")) opts["try_next_after_ms"] = 250;
  o.extra["client_cmd"] = join_command_line(adapter_argv(*find_lock_adapter(name), opts));
  o.extra["client_startup_ms"] = 10000;
  return o;
}

class AdapterTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ::setenv("LOCKCHECK_CLIENTS_DIR", LOCKCHECK_CLIENTS_DIR, 1);
    const LockAdapter* a = find_lock_adapter(GetParam());
    ASSERT_NE(a, nullptr);
    std::ifstream probe(adapter_program(*a));
    if (!probe) {
      if (testing_util::in_ci())
        FAIL() << adapter_program(*a) << " is not built (CI=true: scripts/build-clients must build it)";
      GTEST_SKIP() << adapter_program(*a) << " is not built (scripts/build-clients; needs " << a->toolchain << ")";
    }
  }
  // redsync and symfony-combined are Redlock over 3 nodes; the others use one node.
  bool multi_node() const { return GetParam() == "redsync" || GetParam() == "symfony-combined"; }
  int nodes() const { return multi_node() ? 3 : 1; }
  // How many nodes must be down or paused before an acquire cannot succeed.
  int to_break() const { return multi_node() ? 2 : 1; }
  // The Redis keys the library writes for lock-0 (rueidislock: KeyMajority*2-1 prefixed keys; Laravel: its
  // connection's and cache store's prefixes).
  std::vector<std::string> redis_keys() const {
    if (GetParam() == "rueidislock") return {"rueidislock:0:lock-0", "rueidislock:1:lock-0", "rueidislock:2:lock-0"};
    if (GetParam() == "laravel") return {"laravel_database_laravel_cache:lock-0"};
    return {"lock-0"};
  }
  // Libraries that compute a validity for their caller (Redlock's Until(), Symfony's getRemainingLifetime()).
  bool reports_validity() const { return GetParam() == "redsync" || GetParam().rfind("symfony-", 0) == 0; }
};

TEST_P(AdapterTest, AcquiresExcludesExtendsAndReleases) {
  TestCluster c(nodes());
  auto a = make_lock(GetParam(), adapter_options(c, GetParam()));
  auto b = make_lock(GetParam(), adapter_options(c, GetParam()));
  const auto t0 = std::chrono::steady_clock::now();
  LockResult r = a->acquire("lock-0", milliseconds(10000));
  ASSERT_EQ(r.outcome, OpType::kOk) << r.error;
  const auto took = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[ adapter  ] " << GetParam() << ": first acquire (start-up included) " << took << " ms\n";
  if (reports_validity()) {  // validity = TTL - elapsed (- 0.01 TTL for redsync), left at the end of the acquire
    ASSERT_TRUE(r.validity_ms.has_value());
    EXPECT_GT(*r.validity_ms, 9000);
    EXPECT_LE(*r.validity_ms, GetParam() == "redsync" ? 9900 : 10000);
  } else {
    EXPECT_FALSE(r.validity_ms.has_value());  // the library computes none
  }
  if (GetParam() == "rueidislock") {
    // It answers once KeyMajority (2) of its 3 keys are set and sets the third in the background (rueidislock's
    // try()): the majority at once, the third a moment later (under load, after the answer).
    auto keys_set = [&] {
      size_t n = 0;
      for (const auto& k : redis_keys()) n += c.exists(0, k) ? 1 : 0;
      return n;
    };
    EXPECT_GE(keys_set(), 2u);
    const auto until = std::chrono::steady_clock::now() + milliseconds(5000);
    while (keys_set() < redis_keys().size() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(milliseconds(20));
    }
  }
  for (int n = 0; n < nodes(); ++n) {
    for (const auto& k : redis_keys()) EXPECT_TRUE(c.exists(n, k)) << "node " << n << " key " << k;
  }
  EXPECT_EQ(r.keys, redis_keys());  // protocol 2: the library's own keys
  LockResult busy = b->acquire("lock-0", milliseconds(10000));
  EXPECT_EQ(busy.outcome, OpType::kFail) << busy.error;
  EXPECT_EQ(busy.reason, "held");
  EXPECT_EQ(b->release("lock-0").outcome, OpType::kFail);  // b never held it
  EXPECT_EQ(b->extend("lock-0", milliseconds(20000)).outcome, OpType::kFail);
  LockResult ext = a->extend("lock-0", milliseconds(20000));
  if (GetParam() == "laravel") {
    EXPECT_EQ(ext.outcome, OpType::kFail) << "Laravel 8's lock has no extend";
  } else {
    EXPECT_EQ(ext.outcome, OpType::kOk) << ext.error;
  }
  if (GetParam() == "rueidislock") {  // it extends in the background, by KeyValidity (the first TTL) each time
    for (const auto& k : redis_keys()) EXPECT_GT(c.conn(0)->command({"PTTL", k}).integer().value_or(0), 0) << k;
  } else if (GetParam() != "laravel") {
    EXPECT_GT(c.conn(0)->command({"PTTL", "lock-0"}).integer().value_or(0), 10000);
  }
  EXPECT_EQ(a->release("lock-0").outcome, OpType::kOk);
  for (int n = 0; n < nodes(); ++n) {
    for (const auto& k : redis_keys()) EXPECT_FALSE(c.exists(n, k)) << "node " << n << " key " << k;
  }
  EXPECT_EQ(a->release("lock-0").outcome, OpType::kFail);  // released already
  LockResult rb = b->acquire("lock-0", milliseconds(10000));
  EXPECT_EQ(rb.outcome, OpType::kOk) << rb.error;
  EXPECT_EQ(b->release("lock-0").outcome, OpType::kOk);
}

TEST_P(AdapterTest, ExtendAfterExpiryFails) {
  TestCluster c(nodes());
  nlohmann::json opts = nlohmann::json::object();
  if (GetParam() == "redsync")
    opts["timeout_factor"] = 0.5;  // a per-try context of 0.05 x 300 ms is too short under load
  auto a = make_lock(GetParam(), adapter_options(c, GetParam(), opts));
  LockResult r = a->acquire("lock-0", milliseconds(300));
  ASSERT_EQ(r.outcome, OpType::kOk) << r.error;
  if (GetParam() == "rueidislock") {
    // Its keys never expire while the process lives (background extension); it loses the lock when they go: the
    // keys' invalidation cancels its context, and the extend (the context's liveness) then fails.
    for (const auto& k : redis_keys()) c.conn(0)->command({"DEL", k});
  }
  std::this_thread::sleep_for(milliseconds(600));
  LockResult e = a->extend("lock-0", milliseconds(1000));
  EXPECT_EQ(e.outcome, OpType::kFail);
  if (GetParam() != "laravel") EXPECT_EQ(e.reason, "not_held") << e.error;  // laravel: no extend at all
  if (GetParam() == "rueidislock" || GetParam().rfind("symfony-", 0) == 0) {
    // The library had said it was gone (a cancelled context; a refused refresh): the release says not_held.
    EXPECT_EQ(a->release("lock-0").outcome, OpType::kFail);
  }
}

// redsync's WithSetNXOnExtend (--lock-opt setnx_on_extend=true): extend re-creates an expired lock with SET NX,
// the known defect (an extend "succeeds" on a lock that was lost). Without it the extend fails.
TEST(RedsyncOptions, SetNXOnExtendRecreatesAnExpiredLock) {
  ::setenv("LOCKCHECK_CLIENTS_DIR", LOCKCHECK_CLIENTS_DIR, 1);
  if (!std::ifstream(std::string(LOCKCHECK_CLIENTS_DIR) + "/redsync")) {
    if (testing_util::in_ci()) FAIL() << "redsync adapter not built (CI=true)";
    GTEST_SKIP() << "redsync adapter not built (scripts/build-clients; needs go)";
  }
  TestCluster c(3);
  auto a = make_lock("redsync", adapter_options(c, "redsync", {{"setnx_on_extend", true}, {"timeout_factor", 0.5}}));
  LockResult r = a->acquire("lock-0", milliseconds(300));
  ASSERT_EQ(r.outcome, OpType::kOk) << r.error;
  std::this_thread::sleep_for(milliseconds(600));
  for (int n = 0; n < 3; ++n) EXPECT_FALSE(c.exists(n, "lock-0"));
  LockResult ext = a->extend("lock-0", milliseconds(5000));
  EXPECT_EQ(ext.outcome, OpType::kOk) << ext.error;
  for (int n = 0; n < 3; ++n) EXPECT_TRUE(c.exists(n, "lock-0")) << "node " << n;
}

TEST_P(AdapterTest, DeadNodesAreADefiniteFail) {
  TestCluster c(nodes());
  // go-redis 9.23 dials in the background, 5 attempts 100 ms apart, while the command waits on its context: when
  // redsync's per-try context (0.05 x TTL) ends first, all it reports is "context deadline exceeded", which
  // cannot be told from a request in flight (indeterminate). With one dial attempt the refused dial itself is
  // reported: a definite fail.
  nlohmann::json opts = nlohmann::json::object();
  if (GetParam() == "redsync" || GetParam() == "redislock") opts["dialer_retries"] = 1;
  auto a = make_lock(GetParam(), adapter_options(c, GetParam(), opts));
  for (int n = 0; n < to_break(); ++n) c.cluster->kill(n);
  LockResult r = a->acquire("lock-0", milliseconds(5000));
  EXPECT_EQ(r.outcome, OpType::kFail) << r.error;  // connection refused: nothing was sent
  if (GetParam() == "redsync") {
    auto d = make_lock(GetParam(), adapter_options(c, GetParam()));  // go-redis's default retries
    LockResult rd = d->acquire("lock-1", milliseconds(5000));
    EXPECT_NE(rd.outcome, OpType::kOk) << rd.error;
    std::cout << "[ adapter  ] redsync, dead quorum, go-redis retries: " << to_string(rd.outcome) << " (" << rd.error
              << ")\n";
  }
  for (int n = 0; n < to_break(); ++n) c.cluster->restart(n);
  LockResult again = a->acquire("lock-0", milliseconds(5000));
  EXPECT_EQ(again.outcome, OpType::kOk) << again.error;
}

TEST_P(AdapterTest, PausedNodesAreIndeterminate) {
  TestCluster c(nodes());
  auto a = make_lock(GetParam(), adapter_options(c, GetParam()));
  ASSERT_EQ(a->acquire("warm-up", milliseconds(5000)).outcome, OpType::kOk);  // connections open
  for (int n = 0; n < to_break(); ++n) c.cluster->pause(n);
  LockResult r = a->acquire("lock-0", milliseconds(5000));
  for (int n = 0; n < to_break(); ++n) c.cluster->resume(n);
  if (GetParam() == "rueidislock" || GetParam() == "symfony-combined") {
    // Both clean up before they answer a failed acquire (rueidislock: compare-and-delete of each key it tried,
    // bounded by the key's deadline; CombinedStore: delete() on every store, queued behind the save on the same
    // connection), so their answer is a definite fail; when it comes after the harness's deadline, info.
    EXPECT_NE(r.outcome, OpType::kOk) << r.error;
    std::cout << "[ adapter  ] " << GetParam() << ", paused node: " << to_string(r.outcome) << " (" << r.error << ")\n";
  } else {
    EXPECT_EQ(r.outcome, OpType::kInfo) << r.error;  // sent, never answered: it may have happened
  }
}

// Whole runs (run_test, as `lockcheck run --lock NAME`): healthy is valid; kill with a fast restart (no
// persistence: the restarted node forgot the lock) aimed at the holder's nodes is found invalid within a few seeds.
int run_adapter(const std::string& lock, int nodes, bool kill, uint64_t seed, const std::string& results) {
  RunConfig cfg;
  cfg.lock = lock;
  cfg.nodes = nodes;
  cfg.time_limit_s = kill ? 8 : 4;
  // Healthy: a TTL that a loaded 2-core machine's scheduling delays cannot outlast (a release that arrives after
  // the expiry fails, and the timeless mutex model then sees the next acquire as a double grant).
  // Kill: the anomaly needs the holder to go on holding after its nodes came back empty, long enough for another
  // client's acquire to get through. Holds of 1.0-1.6 s under a 2 s TTL leave most of a second after the restart
  // (with holds of 0-0.4 s under 500 ms, a loaded machine's slow restart often came after the hold had ended).
  cfg.ttl_ms = kill ? 2000 : 3000;
  if (kill) cfg.hold_ms_min = 1000;
  cfg.concurrency = 4;
  cfg.seed = seed;
  cfg.progress = false;
  cfg.results_dir = results;
  if (kill) {
    cfg.nemesis = {"kill"};
    cfg.nemesis_targeting = "holder";
    cfg.restart_delay_ms = 0;
    cfg.nemesis_interval_s = 2;
  }
  resolve_lock(cfg);
  validate(cfg);
  std::ostringstream out;
  RunOutcome o = run_test(cfg, out);
  std::cout << "[ adapter  ] " << lock << (kill ? " kill-fast-restart" : " healthy") << " seed " << seed << ": exit "
            << o.exit_code << "\n";
  return o.exit_code;
}

TEST_P(AdapterTest, HealthyRunIsValid) {
  TempDir results;
  EXPECT_EQ(run_adapter(GetParam(), multi_node() ? 5 : 1, false, 1, results.path()), 0);
}

TEST_P(AdapterTest, KillWithFastRestartIsFoundInvalid) {
  TempDir results;
  int exit = -1;
  // Most seeds find it at once; a loaded machine (the parallel suite beside Docker and ssh tests) makes the
  // clients slower: up to 8 seeds before failing.
  for (uint64_t seed = 1; seed <= 8 && exit != 1; ++seed) {
    exit = run_adapter(GetParam(), multi_node() ? 5 : 1, true, seed, results.path());
    ASSERT_NE(exit, 3) << "harness failure";
  }
  EXPECT_EQ(exit, 1) << "no anomaly in 8 seeds";
}

nlohmann::json request(const std::string& op, const TestCluster& c, int nodes, int64_t ttl_ms, int protocol = 2) {
  nlohmann::json r = {{"op", op}, {"key", "lock-0"}, {"ttl_ms", ttl_ms}, {"op_timeout_ms", 300}, {"fencing", false}};
  r["nodes"] = nlohmann::json::array();
  for (int n = 0; n < nodes; ++n) r["nodes"].push_back(c.cluster->nodes().at(n).endpoint.str());
  if (protocol >= 2) r["protocol"] = protocol;
  return r;
}

bool adapter_built(const std::string& name) {
  ::setenv("LOCKCHECK_CLIENTS_DIR", LOCKCHECK_CLIENTS_DIR, 1);
  return std::ifstream(adapter_program(*find_lock_adapter(name))).good();
}

#define NEED_ADAPTER(name)                                                                   \
  do {                                                                                       \
    if (!adapter_built(name)) {                                                              \
      if (testing_util::in_ci()) FAIL() << name << " adapter not built (CI=true)";           \
      GTEST_SKIP() << name << " adapter not built (scripts/build-clients)";                  \
    }                                                                                        \
  } while (0)

// rueidislock: its keys in `keys`, hello with a bound past the key validity, `held` for a second holder, and a
// `lost` event when its keys vanish (the invalidation cancels its context); extend and release then not_held.
TEST(Protocol2Adapters, RueidislockKeysHeldAndLost) {
  NEED_ADAPTER("rueidislock");
  TestCluster c(1);
  RawAdapter a("rueidislock", {{"try_next_after_ms", 250}}), b("rueidislock", {{"try_next_after_ms", 250}});
  a.send(request("acquire", c, 1, 2000));
  nlohmann::json ok = a.answer();
  ASSERT_EQ(ok.value("ok", false), true) << ok;
  EXPECT_EQ(ok["keys"], nlohmann::json({"rueidislock:0:lock-0", "rueidislock:1:lock-0", "rueidislock:2:lock-0"}));
  ASSERT_EQ(a.events.size(), 1u);
  EXPECT_EQ(a.events[0]["event"], "hello");
  EXPECT_GE(a.events[0]["max_call_ms"].get<int64_t>(), 2000);  // the key validity and more
  b.send(request("acquire", c, 1, 2000));
  nlohmann::json busy = b.answer();
  EXPECT_EQ(busy.value("ok", true), false) << busy;
  EXPECT_EQ(busy.value("reason", ""), "held") << busy;
  EXPECT_FALSE(busy.contains("indeterminate")) << busy;  // the library cleaned up before it answered
  for (const auto& k : ok["keys"]) c.conn(0)->command({"DEL", k.get<std::string>()});
  ASSERT_TRUE(a.wait_event("lost", milliseconds(3000))) << "no lost event after the keys were deleted";
  EXPECT_EQ(a.events.back()["key"], "lock-0");
  a.send(request("extend", c, 1, 2000));
  EXPECT_EQ(a.answer().value("reason", ""), "not_held");
  a.send(request("release", c, 1, 0));
  EXPECT_EQ(a.answer().value("reason", ""), "not_held");
}

// A protocol-1 request (no "protocol"): answers only, never an event line, even when the lock is lost.
TEST(Protocol2Adapters, NoEventsForAProtocol1Harness) {
  NEED_ADAPTER("rueidislock");
  TestCluster c(1);
  RawAdapter a("rueidislock", {{"try_next_after_ms", 250}});
  a.send(request("acquire", c, 1, 2000, 1));
  ASSERT_EQ(a.answer().value("ok", false), true);
  c.conn(0)->command({"DEL", "rueidislock:0:lock-0", "rueidislock:1:lock-0"});
  EXPECT_FALSE(a.wait_event("lost", milliseconds(1000)));
  EXPECT_TRUE(a.events.empty());
}

// Symfony: validity from getRemainingLifetime(), a `lost` event when isExpired() turns true between requests,
// then extend not_held and the release not_held (the library had said so).
TEST(Protocol2Adapters, SymfonyValidityAndExpiryNotice) {
  NEED_ADAPTER("symfony-lock");
  TestCluster c(1);
  RawAdapter a("symfony-lock");
  const auto t0 = std::chrono::steady_clock::now();
  a.send(request("acquire", c, 1, 400));
  nlohmann::json ok = a.answer();
  ASSERT_EQ(ok.value("ok", false), true) << ok;
  EXPECT_EQ(ok["keys"], nlohmann::json({"lock-0"}));
  EXPECT_LE(ok["validity_ms"].get<int64_t>(), 400);
  ASSERT_TRUE(a.wait_event("lost", milliseconds(3000))) << "no lost event at the end of the lifetime";
  EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(300));  // not before the lifetime ran out
  // The Key's lifetime starts before the request, the Redis key's TTL when the script runs: a refresh in between
  // still finds the key (and succeeds, rightly). Past the read timeout the key is gone on the node too.
  std::this_thread::sleep_for(milliseconds(400));
  a.send(request("extend", c, 1, 400));
  EXPECT_EQ(a.answer().value("reason", ""), "not_held");
  a.send(request("release", c, 1, 0));
  EXPECT_EQ(a.answer().value("reason", ""), "not_held");
}

// Laravel: its prefixed key, and extend refused as unsupported (reason error), not as not_held.
TEST(Protocol2Adapters, LaravelKeysAndNoExtend) {
  NEED_ADAPTER("laravel");
  TestCluster c(1);
  RawAdapter a("laravel");
  a.send(request("acquire", c, 1, 1500));
  nlohmann::json ok = a.answer();
  ASSERT_EQ(ok.value("ok", false), true) << ok;
  EXPECT_EQ(ok["keys"], nlohmann::json({"laravel_database_laravel_cache:lock-0"}));
  EXPECT_TRUE(c.exists(0, "laravel_database_laravel_cache:lock-0"));
  // ceil(1500 / 1000) = 2 whole seconds: more than 1 s left.
  EXPECT_GT(c.conn(0)->command({"PTTL", "laravel_database_laravel_cache:lock-0"}).integer().value_or(0), 1000);
  a.send(request("extend", c, 1, 1500));
  EXPECT_EQ(a.answer().value("reason", ""), "error");
  a.send(request("release", c, 1, 0));
  EXPECT_EQ(a.answer().value("ok", false), true);
}

// The finding of the README ("CombinedStore over phpredis: a double grant after a node pause"), step by step:
// P's acquire while all nodes are paused times out on each store (CombinedStore swallows the exceptions, then
// deletes on every store, timing out again); phpredis keeps each connection with those replies still to come.
// After the resume Q takes the lock; P's next acquire reads the old replies (its saves' `true`s) as the answers
// to its new save and refresh, and Symfony grants P the lock Q holds.
TEST(Findings, SymfonyCombinedStaleRepliesGrantAHeldLock) {
  NEED_ADAPTER("symfony-combined");
  TestCluster c(3);
  RawAdapter p("symfony-combined"), q("symfony-combined");
  p.send(request("acquire", c, 3, 5000));
  ASSERT_EQ(p.answer().value("ok", false), true);
  p.send(request("release", c, 3, 0));
  ASSERT_EQ(p.answer().value("ok", false), true);
  for (int n = 0; n < 3; ++n) c.cluster->pause(n);
  p.send(request("acquire", c, 3, 5000));
  nlohmann::json during = p.answer();
  for (int n = 0; n < 3; ++n) c.cluster->resume(n);
  EXPECT_EQ(during.value("ok", true), false) << during;  // no quorum: "not acquired"
  std::this_thread::sleep_for(milliseconds(300));        // the queued saves and deletes run
  q.send(request("acquire", c, 3, 5000));
  nlohmann::json q_ok = q.answer();
  ASSERT_EQ(q_ok.value("ok", false), true) << q_ok;
  p.send(request("acquire", c, 3, 5000));
  nlohmann::json p_again = p.answer();
  std::cout << "[ finding  ] symfony-combined: Q holds lock-0; P's acquire after the pause: " << p_again.dump() << "\n";
  EXPECT_EQ(p_again.value("ok", false), true) << "P was not granted the held lock: phpredis or Symfony changed";
}

INSTANTIATE_TEST_SUITE_P(Shipped, AdapterTest, ::testing::ValuesIn(testing_util::adapter_names()),
                         [](const auto& info) { return testing_util::param_name(info.param); });

TEST(AdapterRegistry, OptionsBecomeFlagsAndUnknownKeysNameTheKnownOnes) {
  const LockAdapter* rs = find_lock_adapter("redsync");
  ASSERT_NE(rs, nullptr);
  auto argv =
      adapter_argv(*rs, {{"tries", 3}, {"drift_factor", "0.02"}, {"setnx_on_extend", true}, {"fail_fast", false}});
  std::string joined;
  for (const auto& a : argv) joined += a + " ";
  EXPECT_NE(joined.find("--tries 3"), std::string::npos) << joined;
  EXPECT_NE(joined.find("--drift-factor 0.02"), std::string::npos) << joined;
  EXPECT_NE(joined.find("--setnx-on-extend"), std::string::npos) << joined;
  EXPECT_EQ(joined.find("--fail-fast"), std::string::npos) << joined;
  try {
    adapter_argv(*rs, {{"retries", 3}});
    FAIL() << "an unknown key was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("retries"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("tries, retry_delay_ms, drift_factor"), std::string::npos) << e.what();
  }
  EXPECT_THROW(adapter_argv(*rs, {{"tries", "many"}}), std::invalid_argument);
  EXPECT_THROW(adapter_argv(*rs, {{"setnx_on_extend", 1}}), std::invalid_argument);
  const LockAdapter* py = find_lock_adapter("redis-py");
  ASSERT_NE(py, nullptr);
  EXPECT_EQ(adapter_argv(*py, {}).front(), "/usr/bin/python3");
  const LockAdapter* sf = find_lock_adapter("symfony-combined");
  ASSERT_NE(sf, nullptr);
  argv = adapter_argv(*sf, {{"initial_ttl_s", 30}, {"read_timeout_ms", 200}});
  EXPECT_EQ(argv.front(), "/usr/bin/php");
  EXPECT_NE(argv[1].find("php/symfony-combined.php"), std::string::npos) << argv[1];
  EXPECT_EQ(argv.size(), 6u);
  const LockAdapter* ru = find_lock_adapter("rueidislock");
  ASSERT_NE(ru, nullptr);
  joined.clear();
  for (const auto& a : adapter_argv(*ru, {{"key_majority", 3}, {"disable_cache", true}})) joined += a + " ";
  EXPECT_NE(joined.find("--key-majority 3 "), std::string::npos) << joined;
  EXPECT_NE(joined.find("--disable-cache"), std::string::npos) << joined;
}

TEST(AdapterRegistry, CommandLinesSurviveSplitting) {
  std::vector<std::string> argv = {"/a b/c's", "--x", "1.5", ""};
  EXPECT_EQ(split_command_line(join_command_line(argv)), argv);
}

TEST(AdapterRegistry, EveryAdapterIsALockAndGoVersionsMatchGoMod) {
  std::ifstream in(std::string(LOCKCHECK_SOURCE_DIR) + "/clients/go.mod");
  std::stringstream mod;
  mod << in.rdbuf();
  for (const auto& a : lock_adapters()) {
    EXPECT_NE(find_lock_algorithm(a.name), nullptr) << a.name;
    if (std::string(a.toolchain) != "go") continue;
    std::string v = a.version;
    v = v.substr(0, v.find(' '));
    EXPECT_NE(mod.str().find(v), std::string::npos) << a.name << " " << v << " is not in clients/go.mod";
  }
}

TEST(LockOpts, ConfigValidationNamesTheKnownKeys) {
  RunConfig c;
  c.lock = "redlock";
  c.lock_opts = {{"retry_count", 1}};
  EXPECT_NO_THROW(validate(c));
  c.lock_opts = {{"retry_cnt", 1}};
  try {
    validate(c);
    FAIL() << "unknown key accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("retry_count, retry_delay_ms"), std::string::npos) << e.what();
  }
  c.lock = "single";
  c.lock_opts = {{"x", 1}};
  EXPECT_THROW(validate(c), ConfigError);
  c.lock = "redlock";
  c.lock_opts = {{"retry_count", 2}};
  nlohmann::json extra = lock_extra(c, "/tmp/p0.stderr");
  EXPECT_EQ(extra["retry_count"], 2);
  EXPECT_EQ(extra["client_stderr_path"], "/tmp/p0.stderr");
  ::setenv("LOCKCHECK_CLIENTS_DIR", LOCKCHECK_CLIENTS_DIR, 1);
  c.lock = "redsync";
  c.lock_opts = {{"tries", 2}};
  resolve_lock(c);
  EXPECT_NE(c.client_cmd.find("'--tries' '2'"), std::string::npos) << c.client_cmd;
  EXPECT_FALSE(lock_extra(c).contains("tries"));  // an adapter's options are flags, not extra
}

// --lock-opt on the command line: unknown keys, malformed pairs and --client-cmd with an adapter are exit 2.
TEST(LockOpts, CommandLineErrorsAreExit2NamingTheKnownKeys) {
  ::setenv("LOCKCHECK_CLIENTS_DIR", LOCKCHECK_CLIENTS_DIR, 1);
  auto run = [](std::vector<std::string> args, std::string* err_text) {
    std::ostringstream out, err;
    int code = cli_main(args, out, err);
    *err_text = err.str();
    return code;
  };
  std::string err;
  EXPECT_EQ(run({"run", "--lock", "redlock", "--lock-opt", "retries=2"}, &err), 2);
  EXPECT_NE(err.find("retry_count, retry_delay_ms"), std::string::npos) << err;
  EXPECT_EQ(run({"run", "--lock", "redsync", "--lock-opt", "tries"}, &err), 2);
  EXPECT_NE(err.find("KEY=VALUE"), std::string::npos) << err;
  EXPECT_EQ(run({"run", "--lock", "redsync", "--lock-opt", "triess=2"}, &err), 2);
  EXPECT_NE(err.find("tries, retry_delay_ms"), std::string::npos) << err;
  EXPECT_EQ(run({"run", "--lock", "redsync", "--client-cmd", "x"}, &err), 2);
  EXPECT_EQ(run({"run", "--lock", "redis-py", "--lock-opt", "sleep_s=abc"}, &err), 2);
  EXPECT_NE(err.find("not a number"), std::string::npos) << err;
}

// "lock_opts" in a matrix entry: resolved into the adapter's command line; an unknown key names the entry.
TEST(LockOpts, MatrixEntriesCarryLockOpts) {
  ::setenv("LOCKCHECK_CLIENTS_DIR", LOCKCHECK_CLIENTS_DIR, 1);
  LOCKCHECK_NEED(std::ifstream(std::string(LOCKCHECK_CLIENTS_DIR) + "/redsync").good(),
                 "the redsync adapter is not built");
  nlohmann::json m = {
      {"name", "t"},
      {"entries", {{{"name", "rs"}, {"lock", "redsync"}, {"lock_opts", {{"tries", 2}}}, {"expect", "valid"}}}}};
  Matrix parsed = parse_matrix(m, "/tmp");
  EXPECT_NE(parsed.entries[0].config.client_cmd.find("'--tries' '2'"), std::string::npos);
  m["entries"][0]["lock_opts"] = {{"bogus", 1}};
  try {
    parse_matrix(m, "/tmp");
    FAIL() << "unknown key accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("matrix entry 'rs'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bogus"), std::string::npos) << e.what();
  }
}

// An external client's stderr goes to client_stderr_path, its folder made if missing.
TEST(ExternalStderr, KeptWhereTheOptionSays) {
  ::setenv("LOCKCHECK_CLIENTS_DIR", LOCKCHECK_CLIENTS_DIR, 1);
  LOCKCHECK_NEED(std::ifstream(std::string(LOCKCHECK_CLIENTS_DIR) + "/redis-py.py").good(),
                 "the redis-py adapter is not built");
  TempDir tmp;
  LockOptions o;
  o.nodes.push_back(Endpoint{"127.0.0.1", 1});
  auto argv = adapter_argv(*find_lock_adapter("redis-py"), {});
  argv.push_back("--bogus-flag");  // argparse complains on stderr and exits 2
  o.extra["client_cmd"] = join_command_line(argv);
  const std::string path = tmp.path() + "/clients/p0.stderr";
  o.extra["client_stderr_path"] = path;
  auto c = make_lock("external", o);
  EXPECT_EQ(c->acquire("k", milliseconds(1000)).outcome, OpType::kInfo);  // argparse exits 2: info
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("unrecognized arguments"), std::string::npos) << text.str();
}

// client-pause stops an external client's whole OS process (its library's threads too), then resumes it.
TEST(ClientPauseProcess, StopsAndResumesTheClientProcess) {
  ProcessSpec spec;
  spec.argv = {"sleep", "30"};
  ChildProcess child(spec);
  ClientPauses pauses(1);
  pauses.arm({0}, milliseconds(400));
  std::atomic<bool> stop{false};
  std::thread t([&] { pauses.pause_point(0, stop, static_cast<int>(child.pid())); });
  ASSERT_TRUE(pauses.wait_fired(1, milliseconds(2000)));
  auto state = [&] {
    std::ifstream st("/proc/" + std::to_string(child.pid()) + "/stat");
    std::string pid, comm, s;
    st >> pid >> comm >> s;
    return s;
  };
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(state(), "T");  // stopped
  t.join();
  EXPECT_NE(state(), "T");  // continued
  auto fired = pauses.fired();
  ASSERT_EQ(fired.size(), 1u);
  ASSERT_TRUE(fired[0].os_pid.has_value());
  EXPECT_EQ(*fired[0].os_pid, static_cast<int>(child.pid()));
}

}  // namespace
}  // namespace lockcheck
