// The ZooKeeper lock adapters (clients/kazoo: kazoo's Lock; clients/curator: Curator's InterProcessMutex) against
// a real five-member ZooKeeper ensemble (label `zookeeper`), the contract of the other adapters (adapter_test,
// etcd_lock_test): acquire, exclude, release, extend (the adapters' session check); a dead majority and a paused
// majority (never ok); the lock node's czxid as a fencing token that grows; a holder stopped past its session
// timeout loses the lock to another client and is told so (a `lost` event) once it runs again, and its release is
// then not_held; a healthy `lockcheck run` is valid; and neither adapter runs against another server (exit 2).
// Skips without java and Debian's zookeeper, or without the built adapters (scripts/build-clients: python3-kazoo;
// javac and libcurator-recipes-java), except under CI=true.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/config.h"
#include "harness/plan.h"
#include "harness/runner.h"
#include "locks/adapters.h"
#include "tests/support/held_port.h"
#include "tests/support/lock_contract.h"
#include "tests/support/lock_test_util.h"
#include "tests/support/raw_adapter.h"
#include "tests/support/zookeeper_test_cluster.h"

#ifndef LOCKCHECK_CLIENTS_DIR
#define LOCKCHECK_CLIENTS_DIR ""
#endif

namespace lockcheck {
namespace {

using std::chrono::milliseconds;
using testing_util::make_lock;
using testing_util::RawAdapter;
using testing_util::ZooKeeperTestCluster;

const std::vector<std::string> kAdapters = {"kazoo", "curator"};

// The adapter's LockOptions for slot's client process: every member through that slot's proxy links.
LockOptions zk_options(const ZooKeeperTestCluster& c, const std::string& name, const nlohmann::json& opts = {},
                       const std::string& slot = "c0", bool fencing = false) {
  LockOptions o = c.options(milliseconds(2000), slot);
  o.extra["client_cmd"] = join_command_line(adapter_argv(*find_lock_adapter(name), opts));
  o.extra["client_startup_ms"] = 20000;  // a JVM on a loaded 2-core machine
  o.extra["client_timeout_ms"] = 15000;
  o.fencing = fencing;
  return o;
}

// A protocol-2 request as lockcheck writes it, to the members as slot c0 reaches them.
nlohmann::json request(const std::string& op, const ZooKeeperTestCluster& c, int64_t ttl_ms,
                       const std::string& key = "lock-0") {
  nlohmann::json r = {{"op", op},         {"key", key},      {"ttl_ms", ttl_ms},
                      {"op_timeout_ms", 2000}, {"fencing", false}, {"protocol", 2}};
  r["nodes"] = nlohmann::json::array();
  for (size_t n = 0; n < c.cluster->nodes().size(); ++n) r["nodes"].push_back(c.cluster->endpoint_for("c0", n).str());
  return r;
}

// An answer's fields, false / "" when there was no answer (null: the adapter said nothing in time).
bool is_ok(const nlohmann::json& a) { return a.is_object() && a.value("ok", false); }
std::string reason_of(const nlohmann::json& a) { return a.is_object() ? a.value("reason", "") : ""; }

class ZooKeeperLockTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    LOCKCHECK_NEED_ZOOKEEPER();
    ::setenv("LOCKCHECK_CLIENTS_DIR", LOCKCHECK_CLIENTS_DIR, 1);
    const LockAdapter* a = find_lock_adapter(GetParam());
    ASSERT_NE(a, nullptr);
    LOCKCHECK_NEED(std::ifstream(adapter_program(*a)).good(),
                   adapter_program(*a) << " is not built (scripts/build-clients; needs " << a->toolchain << ")");
  }
};

TEST_P(ZooKeeperLockTest, AcquiresExcludesExtendsAndReleases) {
  ZooKeeperTestCluster c(5, true, 2000);
  auto a = make_lock(GetParam(), zk_options(c, GetParam(), {}, "c0", true));
  auto b = make_lock(GetParam(), zk_options(c, GetParam(), {}, "c1", true));
  // The validity is the negotiated session timeout (2 s) less the time since the op's last answered request.
  testing_util::expect_lock_contract(*a, *b, milliseconds(2000), 1000, "the lock node's czxid");
}

TEST_P(ZooKeeperLockTest, BlockingModeWaitsForTheHolder) {
  ZooKeeperTestCluster c(5, true, 2000);
  auto a = make_lock(GetParam(), zk_options(c, GetParam()));
  auto b = make_lock(GetParam(), zk_options(c, GetParam(), {{"wait_ms", 8000}}, "c1"));
  ASSERT_EQ(a->acquire("lock-0", milliseconds(2000)).outcome, OpType::kOk);
  std::thread releaser([&] {
    std::this_thread::sleep_for(milliseconds(1000));
    a->release("lock-0");
  });
  LockResult r = b->acquire("lock-0", milliseconds(2000));
  releaser.join();
  EXPECT_EQ(r.outcome, OpType::kOk) << r.error;
  ASSERT_TRUE(r.validity_ms.has_value());
  EXPECT_GT(*r.validity_ms, 1000);  // counted from the read after the wait, not from the wait's start
}

TEST_P(ZooKeeperLockTest, DeadMajorityIsNeverOkAndRecovers) {
  ZooKeeperTestCluster c(5, true, 2000);
  auto a = testing_util::warmed_up_lock(GetParam(), zk_options(c, GetParam()), milliseconds(2000));
  ASSERT_TRUE(a);
  for (size_t n = 0; n < 3; ++n) c.cluster->kill(n);
  LockResult r = a->acquire("lock-0", milliseconds(2000));
  EXPECT_NE(r.outcome, OpType::kOk) << "no quorum, yet acquired";
  std::cout << "[ " << GetParam() << " ] dead majority: " << to_string(r.outcome) << " (" << r.error << ")\n";
  for (size_t n = 0; n < 3; ++n) c.cluster->restart(n);
  // An indeterminate answer retires the adapter (as a run does): a fresh client process then takes over.
  auto fresh = make_lock(GetParam(), zk_options(c, GetParam(), {}, "c1"));
  LockResult again;
  for (int i = 0; i < 20 && again.outcome != OpType::kOk; ++i) {
    again = fresh->acquire("lock-1", milliseconds(2000));
    if (again.outcome != OpType::kOk) {
      std::this_thread::sleep_for(milliseconds(1000));
      if (again.outcome == OpType::kInfo) fresh = make_lock(GetParam(), zk_options(c, GetParam(), {}, "c1"));
    }
  }
  EXPECT_EQ(again.outcome, OpType::kOk) << again.error;
}

TEST_P(ZooKeeperLockTest, PausedMajorityIsNeverOk) {
  ZooKeeperTestCluster c(5, true, 2000);
  auto a = testing_util::warmed_up_lock(GetParam(), zk_options(c, GetParam()), milliseconds(2000));
  ASSERT_TRUE(a);
  for (size_t n = 0; n < 3; ++n) c.cluster->pause(n);
  LockResult r = a->acquire("lock-0", milliseconds(2000));
  for (size_t n = 0; n < 3; ++n) c.cluster->resume(n);
  EXPECT_NE(r.outcome, OpType::kOk) << "no quorum, yet acquired";
  std::cout << "[ " << GetParam() << " ] paused majority: " << to_string(r.outcome) << " (" << r.error << ")\n";
}

// The holder's process is stopped (SIGSTOP, as client-pause does) for longer than its session timeout: the
// ensemble expires the session and deletes the lock node, another client takes the lock, and the stopped holder
// hears of it only when it runs again (`lost`); its release is then not_held although the library "released".
// lost_only moves the notice from SUSPENDED (the connection) to LOST (the session).
void expect_lost_after_stop(const std::string& name, bool lost_only) {
  ZooKeeperTestCluster c(5, true, 1000);
  const nlohmann::json opts = lost_only ? nlohmann::json{{"lost_only", true}} : nlohmann::json::object();
  RawAdapter a(name, opts), b(name);
  nlohmann::json ok;
  for (int i = 0; i < 5; ++i) {
    // On a loaded machine the first acquire (the session's first requests) can outlast a 1 s session: the
    // adapter then rightly answers not_held, and the holder tries again.
    a.send(request("acquire", c, 1000));
    ok = a.answer(milliseconds(30000));
    if (is_ok(ok) || reason_of(ok) != "not_held") break;
  }
  ASSERT_TRUE(is_ok(ok)) << ok;
  ASSERT_TRUE(ok.contains("keys") && ok["keys"].size() == 1u) << ok;
  EXPECT_EQ(ok["keys"][0].get<std::string>().rfind("/lockcheck/lock-0/", 0), 0u) << ok;
  b.send(request("acquire", c, 1000));
  nlohmann::json busy = b.answer(milliseconds(30000));
  EXPECT_EQ(reason_of(busy), "held") << busy;
  ASSERT_EQ(::kill(a.pid(), SIGSTOP), 0);
  std::this_thread::sleep_for(milliseconds(2500));  // > the 1 s session timeout, rounded up to ticks
  nlohmann::json taken = nlohmann::json::object();
  for (int i = 0; i < 10 && !is_ok(taken); ++i) {
    b.send(request("acquire", c, 1000));
    taken = b.answer();
    if (!is_ok(taken)) std::this_thread::sleep_for(milliseconds(500));
  }
  ::kill(a.pid(), SIGCONT);
  ASSERT_TRUE(is_ok(taken)) << "the stopped holder's session never expired: " << taken;
  EXPECT_NE(taken["keys"], ok["keys"]);
  ASSERT_TRUE(a.wait_event("lost", milliseconds(15000))) << "no lost event after the session expired";
  const nlohmann::json& lost = a.events.back();
  EXPECT_EQ(lost["key"], "lock-0");
  std::cout << "[ " << name << " ] lost: " << lost.dump() << "\n";
  EXPECT_NE(lost.value("detail", "").find(lost_only ? "LOST" : "SUSPENDED"), std::string::npos) << lost;
  std::this_thread::sleep_for(milliseconds(1500));  // the client makes its new session
  a.send(request("release", c, 1000));
  nlohmann::json rel = a.answer(milliseconds(15000));
  EXPECT_EQ(reason_of(rel), "not_held") << rel;
}

TEST_P(ZooKeeperLockTest, SessionExpiryIsLost) { expect_lost_after_stop(GetParam(), false); }
TEST_P(ZooKeeperLockTest, SessionExpiryIsLostOnLostOnly) { expect_lost_after_stop(GetParam(), true); }

TEST_P(ZooKeeperLockTest, HealthyRunIsValid) {
  TempDir results;
  RunConfig cfg;
  cfg.server = "zookeeper";
  cfg.lock = GetParam();
  cfg.time_limit_s = 8;
  cfg.ttl_ms = 2000;
  cfg.op_timeout_ms = 2000;
  cfg.concurrency = 3;
  cfg.seed = 1;
  cfg.fencing = true;
  cfg.progress = false;
  cfg.results_dir = results.path();
  resolve_lock(cfg);
  validate(cfg);
  std::ostringstream out;
  RunOutcome o = run_test(cfg, out);
  EXPECT_EQ(o.exit_code, 0) << out.str();
}

INSTANTIATE_TEST_SUITE_P(Shipped, ZooKeeperLockTest, ::testing::ValuesIn(kAdapters),
                         [](const auto& info) { return info.param; });

// Neither adapter runs against Redis or etcd: the plan refuses it before anything starts (exit 2).
TEST(ZooKeeperLockPlan, OtherServersAreRefused) {
  for (const std::string& name : kAdapters) {
    for (const std::string server : {"redis", "etcd"}) {
      RunConfig cfg;
      cfg.lock = name;
      cfg.server = server;
      try {
        resolve_plan(cfg);
        ADD_FAILURE() << name << " accepted --server " << server;
      } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("speaks zk"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("use --server zookeeper"), std::string::npos) << e.what();
      }
    }
  }
}

// A member whose drawn port another process took before the JVM bound it (its log: a BindException, then a stack
// trace and the JVM's exit lines) starts again on other ports, with its zoo.cfg written again.
TEST(ZooKeeperPorts, AMemberWhosePortWasTakenStartsAgainOnAnother) {
  LOCKCHECK_NEED_ZOOKEEPER();
  testing_util::HeldPort held;  // taken, as another run's server would
  ASSERT_GT(held.port, 0);
  const int held_port = held.port;
  TempDir dir{"lockcheck-zookeeper"};
  testing_util::LocalClusterSpec spec;
  spec.server = "zookeeper";
  spec.nodes = 3;  // an ensemble: QuorumPeerMain, whose BindException is followed by 12 more lines
  int draws = 0;
  spec.draw_port = [&] { return draws++ == 0 ? held_port : free_loopback_port(); };
  auto c = testing_util::start_local_cluster(spec, dir.path());
  std::ifstream log(c->nodes()[0].log_path);
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("ddress already in use"), std::string::npos) << "the first start did not meet the held port";
  std::ifstream cfg(dir.path() + "/nodes/n1/zoo.cfg");
  const std::string conf((std::istreambuf_iterator<char>(cfg)), std::istreambuf_iterator<char>());
  EXPECT_EQ(conf.find(":" + std::to_string(held_port) + "\n"), std::string::npos) << conf;
  EXPECT_EQ(conf.find("=" + std::to_string(held_port) + "\n"), std::string::npos) << conf;
  c->stop();
}

// A session asks for the TTL as its timeout; the ensemble's tickTime rule grants 1 s and 2 s as asked.
TEST(ZooKeeperSessions, SessionsOfTheTtlAreGrantedAsAsked) {
  LOCKCHECK_NEED_ZOOKEEPER();
  const bool kazoo = run_command({"/usr/bin/python3", "-c", "import kazoo"}, std::chrono::seconds(20)).ok();
  LOCKCHECK_NEED(kazoo, "Debian's python3-kazoo is not installed (apt-get install python3-kazoo)");
  for (const int64_t ttl : {1000, 2000}) {
    ZooKeeperTestCluster c(3, true, ttl);
    std::string hosts;
    for (const auto& e : c.options().nodes) hosts += (hosts.empty() ? "" : ",") + e.str();
    const auto r = run_command({"/usr/bin/python3", "-c",
                                "import sys\nfrom kazoo.client import KazooClient\n"
                                "k = KazooClient(hosts=sys.argv[1], timeout=float(sys.argv[2]) / 1000)\n"
                                "k.start(timeout=20)\nprint(k._session_timeout)\nk.stop()\n",
                                hosts, std::to_string(ttl)},
                               std::chrono::seconds(60));
    ASSERT_TRUE(r.ok()) << r.err;
    EXPECT_EQ(std::stoll(r.out), ttl) << c.cluster->server().describe_settings();
  }
}

}  // namespace
}  // namespace lockcheck
