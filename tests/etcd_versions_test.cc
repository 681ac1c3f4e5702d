// Server versions (--server-version: the etcd kind's builds, servers/etcd.cc) with etcd 3.4.3, the version Jepsen's etcd analysis tested, which
// scripts/build-clients builds from the Go module proxy into build/servers/etcd-3.4.3/ (label `etcd`): a 3.4.3
// cluster starts, takes faults (the leader paused, a member killed and restarted) and stops leaving no process and
// no data dir; every member answers 3.4.3 when asked; a run records the version its nodes answered (results.json,
// config.json, the report's versions line), the machine's by default; a version not on this machine exits 2
// naming it; the adapter's 3.4 client (clientv3 of the 3.4.3 module) and its Lock RPC keep the adapters'
// contract; the analysis's waiter (told it holds the lock after its lease expired while it waited), step by step.
// Skips without etcd, the 3.4.3 build or the adapters, except under CI=true.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "core/clock.h"
#include "core/config.h"
#include "core/history.h"
#include "harness/cli.h"
#include "harness/plan.h"
#include "harness/runner.h"
#include "locks/adapters.h"
#include "nemesis/nemesis.h"
#include "sys/process.h"
#include "tests/support/etcd_test_cluster.h"
#include "tests/support/lock_test_util.h"

#ifndef LOCKCHECK_BUILD_DIR
#define LOCKCHECK_BUILD_DIR ""
#endif

namespace lockcheck {
namespace {

using std::chrono::milliseconds;
using testing_util::EtcdTestCluster;
using testing_util::make_lock;

const std::string kServers = std::string(LOCKCHECK_BUILD_DIR) + "/servers";
const std::string kEtcd343 = kServers + "/etcd-3.4.3/etcd";
const std::string kEtcdctl343 = kServers + "/etcd-3.4.3/etcdctl";

bool etcd343_built() { return testing_util::etcd343_built(LOCKCHECK_BUILD_DIR); }

#define NEED_ETCD343()     \
  LOCKCHECK_NEED_ETCD();   \
  LOCKCHECK_NEED(etcd343_built(), "etcd 3.4.3 is not built (scripts/build-clients; needs go): " << kEtcd343)

#define NEED_ETCD343_AND_ADAPTER()                                                                            \
  NEED_ETCD343();                                                                                             \
  LOCKCHECK_NEED(std::ifstream(std::string(LOCKCHECK_BUILD_DIR) + "/clients/etcd-3.4").good(),              \
                 "the etcd adapter's 3.4 client is not built (scripts/build-clients; needs go)")

bool alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

std::optional<size_t> wait_for_leader(const Cluster& c, milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto l = c.leader()) return l;
    std::this_thread::sleep_for(milliseconds(200));
  }
  return std::nullopt;
}

TEST(EtcdVersions, Etcd343StartsTakesFaultsAndStopsLeavingNothing) {
  NEED_ETCD343();
  std::vector<pid_t> pids;
  std::string dir;
  {
    EtcdTestCluster c(5, true, "3.4.3");
    dir = c.dir.path();
    for (size_t n = 0; n < 5; ++n) pids.push_back(c.cluster->pid(n));
    // Asked of the members themselves, not of the program's name.
    testing_util::expect_members_say(*c.cluster, "3.4.3");
    // The leader paused: the others elect another; resumed, it rejoins.
    const auto leader = wait_for_leader(*c.cluster, milliseconds(10000));
    ASSERT_TRUE(leader.has_value());
    c.cluster->pause(*leader);
    const auto deadline = std::chrono::steady_clock::now() + milliseconds(15000);
    std::optional<size_t> next;
    while (std::chrono::steady_clock::now() < deadline && (!next || next == leader)) {
      next = c.cluster->leader();
      std::this_thread::sleep_for(milliseconds(200));
    }
    c.cluster->resume(*leader);
    EXPECT_TRUE(next.has_value() && next != leader) << "no new leader while the old one was paused";
    // A member killed and restarted rejoins as itself.
    const size_t victim = (*leader + 1) % 5;
    c.cluster->kill(victim);
    EXPECT_FALSE(c.cluster->is_running(victim));
    c.cluster->restart(victim);
    EXPECT_TRUE(c.cluster->is_running(victim));
    pids.push_back(c.cluster->pid(victim));
    // A restarted member listens before it answers a status query (it catches up with the leader first): ask
    // again for up to 10 s.
    std::string version;
    for (int i = 0; i < 20 && version.empty(); ++i) {
      version = c.cluster->node_versions()[victim];
      if (version.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    EXPECT_EQ(version, "3.4.3");
    c.cluster->stop();
    for (const auto& n : c.cluster->nodes()) {
      EXPECT_FALSE(std::filesystem::exists(dir + "/nodes/" + n.name + "/etcd")) << n.name;
    }
  }
  for (pid_t p : pids) EXPECT_FALSE(alive(p)) << p;
  EXPECT_FALSE(std::filesystem::exists(dir));
}

// pause:leader on etcd pauses the member the cluster names leader at that moment (Jepsen's "primaries").
TEST(EtcdVersions, PauseLeaderPausesTheMemberNamedLeader) {
  NEED_ETCD343();
  EtcdTestCluster c(5, true, "3.4.3");
  const auto leader = wait_for_leader(*c.cluster, milliseconds(10000));
  ASSERT_TRUE(leader.has_value());
  TempDir dir;
  MonotonicClock clock;
  HistoryWriter history(dir.path() + "/history.jsonl", &clock);
  RunConfig cfg;
  cfg.server = "etcd";
  NemesisEnv env{NemesisOptions::from(cfg), *c.cluster, history};
  auto n = make_nemesis("pause:leader");
  ASSERT_TRUE(n);
  PlanContext ctx;
  for (const auto& node : c.cluster->nodes()) ctx.nodes.push_back(node.name);
  std::mt19937_64 rng(3);
  const FaultPlan plan = n->plan(ctx, rng);
  Op op;
  op.process = kNemesis;
  op.f = plan.f;
  op.value = {{"fault", n->name()}, {"phase", "start"}, {"targets", plan.targets}, {"detail", plan.detail}};
  Op done = n->invoke(env, history.record(op));
  const std::string name = c.cluster->nodes()[*leader].name;
  EXPECT_EQ(done.value["targets"], nlohmann::json::array({name})) << done.value.dump();
  EXPECT_EQ(done.value["detail"]["leader"], name);
  Op stop;
  stop.process = kNemesis;
  stop.f = plan.stop_f;
  stop.value = {{"fault", n->name()}, {"phase", "stop"}, {"targets", nlohmann::json::array()}};
  EXPECT_TRUE(n->invoke(env, history.record(stop)).is_ok());
}

TEST(EtcdVersions, ListShowsTheBuildsAndAMissingVersionExits2NamingIt) {
  (void)etcd343_built();  // points LOCKCHECK_SERVERS_DIR at this build's servers/
  RunConfig c;
  c.server = "etcd";
  c.server_version = "3.4.99";
  try {
    (void)resolve_server_plan(c);
    FAIL() << "3.4.99 resolved";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--server-version 3.4.99"), std::string::npos) << e.what();
  }
  std::ostringstream out, err;
  const int rc = cli_main({"run", "--server", "etcd", "--lock", "etcd", "--server-version", "3.4.99", "--results",
                           "/nonexistent-lockcheck-results"},
                          out, err);
  EXPECT_EQ(rc, 2);
  EXPECT_NE((out.str() + err.str()).find("3.4.99"), std::string::npos) << out.str() << err.str();
  c.server = "redis";
  c.server_version = "0.0.1";
  EXPECT_THROW(resolve_plan(c), ConfigError);  // Redis has only the machine's build (--redis-server picks it)
  if (etcd343_built()) {
    std::ostringstream list;
    EXPECT_EQ(cli_main({"list"}, list, err), 0);
    EXPECT_NE(list.str().find("etcd 3.4.3"), std::string::npos) << list.str();
  }
}

// A short run: config.json says the version asked for, results.json the one every node answered.
nlohmann::json run_and_read(RunConfig cfg, const std::string& results_dir, std::string* version_line) {
  cfg.server = "etcd";
  cfg.lock = "etcd";
  cfg.time_limit_s = 3;
  cfg.ttl_ms = 2000;
  cfg.op_timeout_ms = 2000;
  cfg.concurrency = 2;
  cfg.seed = 1;
  cfg.progress = false;
  cfg.results_dir = results_dir;
  std::ostringstream out;
  RunOutcome o = run_test(cfg, out);
  EXPECT_EQ(o.exit_code, 0) << out.str();
  std::ifstream rj(o.run_dir + "/results.json"), cj(o.run_dir + "/config.json"), rep(o.run_dir + "/report.html");
  std::stringstream html;
  html << rep.rdbuf();
  const std::string h = html.str();
  const auto at = h.find("versions</th>");
  *version_line = at == std::string::npos ? "" : h.substr(at, 80);
  nlohmann::json both = {{"results", nlohmann::json::parse(rj)}, {"config", nlohmann::json::parse(cj)}};
  return both;
}

TEST(EtcdVersions, ARunRecordsTheVersionItsNodesAnswered) {
  NEED_ETCD343_AND_ADAPTER();
  TempDir results;
  std::string line;
  RunConfig cfg;
  cfg.server_version = "3.4.3";
  cfg.lock_opts = {{"client", "3.4"}, {"wait_ms", 2000}};
  auto j = run_and_read(cfg, results.path(), &line);
  EXPECT_EQ(j["config"]["server_version"], "3.4.3");
  EXPECT_EQ(j["results"]["versions"]["etcd"], "3.4.3");
  ASSERT_TRUE(j["results"]["node_versions"].is_object());
  for (const auto& [node, v] : j["results"]["node_versions"].items()) EXPECT_EQ(v, "3.4.3") << node;
  EXPECT_NE(line.find("etcd 3.4.3"), std::string::npos) << line;
  // The default is the machine's build, recorded as its members answered.
  RunConfig etcd;
  etcd.server = "etcd";
  const std::string machine = resolve_server_plan(etcd).build.version;  // the first build: the machine's
  auto d = run_and_read(RunConfig{}, results.path(), &line);
  EXPECT_EQ(d["config"]["server_version"], machine);
  EXPECT_EQ(d["results"]["versions"]["etcd"], machine);
}

// The adapters' contract (as etcd_lock_test's, for the 3.5 client) with the 3.4 client, its Mutex and the Lock RPC:
// acquire with a validity and a token, exclude, extend, release once, tokens that grow. Its Mutex has no TryLock,
// so a second client's acquire waits (wait_ms) and is not granted while the first holds the lock.
void contract(const nlohmann::json& opts) {
  EtcdTestCluster c(5, true, "3.4.3");
  auto options = [&](const std::string& slot) { return c.adapter_options(opts, slot, true); };
  auto a = make_lock("etcd", options("c0"));
  auto b = make_lock("etcd", options("c1"));
  LockResult r = a->acquire("lock-0", milliseconds(10000));
  ASSERT_EQ(r.outcome, OpType::kOk) << r.error;
  ASSERT_TRUE(r.validity_ms.has_value());
  EXPECT_GT(*r.validity_ms, 7000);
  EXPECT_LE(*r.validity_ms, 10000);
  ASSERT_TRUE(r.token.has_value());
  ASSERT_EQ(r.keys.size(), 1u);
  EXPECT_EQ(r.keys[0].rfind("lock-0/", 0), 0u) << r.keys[0];
  LockResult busy = b->acquire("lock-0", milliseconds(10000));
  EXPECT_NE(busy.outcome, OpType::kOk) << "granted while held";
  EXPECT_EQ(b->release("lock-0").outcome, OpType::kFail);
  LockResult ext = a->extend("lock-0", milliseconds(10000));
  EXPECT_EQ(ext.outcome, OpType::kOk) << ext.error;
  EXPECT_EQ(a->release("lock-0").outcome, OpType::kOk);
  EXPECT_EQ(a->release("lock-0").outcome, OpType::kFail);
  LockResult rb = b->acquire("lock-1", milliseconds(10000));
  ASSERT_EQ(rb.outcome, OpType::kOk) << rb.error;
  ASSERT_TRUE(rb.token.has_value());
  EXPECT_GT(*rb.token, *r.token);
  EXPECT_EQ(b->release("lock-1").outcome, OpType::kOk);
}

TEST(EtcdVersions, Client34KeepsTheAdapterContract) {
  NEED_ETCD343_AND_ADAPTER();
  contract({{"client", "3.4"}, {"wait_ms", 500}});
}

TEST(EtcdVersions, LockRpcKeepsTheAdapterContract) {
  NEED_ETCD343_AND_ADAPTER();
  contract({{"client", "3.4"}, {"wait_ms", 500}, {"lock_rpc", true}});
}

// The keys under prefix in c, asked of its members with the machine's etcdctl (get --prefix --keys-only); nullopt
// when etcdctl did not answer.
std::optional<std::vector<std::string>> etcd_keys(const Cluster& c, const std::string& prefix) {
  std::string list;
  for (const auto& n : c.nodes()) list += (list.empty() ? "" : ",") + n.endpoint.str();
  const CommandResult r = run_command({"etcdctl", "--endpoints=" + list, "--dial-timeout=2000ms",
                                       "--command-timeout=2000ms", "get", "--prefix", "--keys-only", prefix},
                                      milliseconds(8000), {{"ETCDCTL_API", "3"}});
  if (!r.ok()) return std::nullopt;
  std::vector<std::string> keys;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) keys.push_back(line);
  return keys;
}

// Asks the keys under prefix until done(keys) holds (true) or timeout passes (false).
bool wait_for_keys(const Cluster& c, const std::string& prefix, milliseconds timeout,
                   const std::function<bool(const std::vector<std::string>&)>& done) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  do {
    if (const auto keys = etcd_keys(c, prefix); keys && done(*keys)) return true;
    std::this_thread::sleep_for(milliseconds(100));
  } while (std::chrono::steady_clock::now() < deadline);
  return false;
}

// The waiter of Jepsen's etcd analysis, step by step: a holds the lock; b waits for it; b's client is stopped (SIGSTOP) until its
// lease has expired and the server has deleted b's key; a releases; c takes the lock; b resumes. Whether b is
// then told it holds the lock is the answer of the Mutex code that waited: the server's (the Lock RPC, run by
// the server on the client's lease) says yes on 3.4.3 and, measured here, still on Debian's 3.4.23; the 3.4
// client's own Mutex says yes on any server; the 3.5 client's reads its key after the wait and says no. Every
// client answers as its library did (trust_wait).
//
// Each step waits for what the server shows, not for a fixed time, so that a loaded machine (the CI runs the
// etcd, ZooKeeper, Docker and SSH tests side by side) changes only how long it takes: b is stopped once its key
// is in etcd, a releases once b's key is gone. Only b's lease is short (2 s, the server's minimum with the default
// election timeout); a's and c's are 10 s, so a keep-alive delayed by the load cannot end them (a 2 s lease for a
// did, once, in CI: a's release found its key gone). b waits up to 60 s, more than every bound here together.
bool waiter_told_it_holds(const std::string& version, nlohmann::json opts) {
  opts["wait_ms"] = 60000;
  opts["trust_wait"] = true;
  EtcdTestCluster c(5, true, version);
  auto options = [&](const std::string& slot) { return c.adapter_options(opts, slot, false, 75000); };
  auto a = make_lock("etcd", options("c0"));
  auto b = make_lock("etcd", options("c1"));
  auto w = make_lock("etcd", options("c2"));
  const milliseconds held_ttl(10000), waiter_ttl(2000);
  const LockResult first = a->acquire("k", held_ttl);
  EXPECT_EQ(first.outcome, OpType::kOk) << first.error;
  std::vector<std::string> a_keys;
  EXPECT_TRUE(wait_for_keys(*c.cluster, "k/", milliseconds(10000), [&](const auto& keys) {
    a_keys = keys;
    return keys.size() == 1;
  })) << "a's lock key is not in etcd";
  LockResult waited;
  std::thread waiter([&] { waited = b->acquire("k", waiter_ttl); });
  std::string b_key;
  EXPECT_TRUE(wait_for_keys(*c.cluster, "k/", milliseconds(20000), [&](const auto& keys) {
    for (const auto& k : keys)
      if (std::find(a_keys.begin(), a_keys.end(), k) == a_keys.end()) b_key = k;
    return !b_key.empty();
  })) << "b's key never appeared: b is not waiting";
  const auto pid = b->os_pid();
  EXPECT_TRUE(pid.has_value());
  if (pid) ::kill(*pid, SIGSTOP);
  // b's lease (2 s) is no longer renewed; the leader revokes it and deletes b's key.
  EXPECT_TRUE(wait_for_keys(*c.cluster, "k/", milliseconds(30000), [&](const auto& keys) {
    return std::find(keys.begin(), keys.end(), b_key) == keys.end();
  })) << "b's key " << b_key << " outlived its lease";
  const LockResult released = a->release("k");
  EXPECT_EQ(released.outcome, OpType::kOk) << released.error;
  const LockResult taken = w->acquire("k", held_ttl);
  EXPECT_EQ(taken.outcome, OpType::kOk) << taken.error;
  if (pid) ::kill(*pid, SIGCONT);
  waiter.join();
  return waited.outcome == OpType::kOk && taken.outcome == OpType::kOk;
}

TEST(EtcdVersions, WaiterBugTheLockRpcGrantsTheExpiredWaiterOn343And3423) {
  NEED_ETCD343_AND_ADAPTER();
  EXPECT_TRUE(waiter_told_it_holds("3.4.3", {{"client", "3.4"}, {"lock_rpc", true}}))
      << "3.4.3's Lock RPC did not grant the lock to a waiter whose lease had expired";
  EXPECT_TRUE(waiter_told_it_holds("", {{"client", "3.4"}, {"lock_rpc", true}}))
      << "3.4.23's Lock RPC refused the expired waiter (the fix reached the 3.4 line?)";
}

TEST(EtcdVersions, WaiterBugIsInThe34ClientsMutexAndNotThe35s) {
  NEED_ETCD343_AND_ADAPTER();
  EXPECT_TRUE(waiter_told_it_holds("", {{"client", "3.4"}}));
  EXPECT_FALSE(waiter_told_it_holds("", {{"client", "3.5"}}));
}

TEST(EtcdVersions, ClientOptionIsCheckedAndPicksTheProgram) {
  const LockAdapter& a = *find_lock_adapter("etcd");
  EXPECT_EQ(adapter_program(a, {{"client", "3.4"}}), adapters_dir() + "/etcd-3.4");
  EXPECT_EQ(adapter_program(a, {{"client", 3.5}}), adapters_dir() + "/etcd");
  EXPECT_EQ(adapter_program(a, nlohmann::json::object()), adapters_dir() + "/etcd");
  EXPECT_THROW(adapter_argv(a, {{"client", "3.3"}}), std::invalid_argument);
  EXPECT_THROW(adapter_argv(a, {{"client", "3.4"}}), std::invalid_argument);  // no TryLock: needs wait_ms
  EXPECT_THROW(adapter_argv(a, {{"lock_rpc", true}, {"wait_ms", 100}}), std::invalid_argument);  // 3.5: no stub
  EXPECT_THROW(adapter_argv(a, {{"client", "3.4"}, {"lock_rpc", "true"}}), std::invalid_argument);
  const auto argv = adapter_argv(a, {{"client", "3.4"}, {"wait_ms", 100}, {"lock_rpc", true}});
  EXPECT_EQ(argv, (std::vector<std::string>{adapters_dir() + "/etcd-3.4", "--lock-rpc", "--wait-ms", "100"}));
}

}  // namespace
}  // namespace lockcheck
