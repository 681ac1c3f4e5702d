// The ssh backend on the namespace test bed (scripts/ssh-testbed): the cluster's primitives, a redlock run under
// partitions and kill through the CLI, the same for --server etcd (five members, etcd's lock) and --server
// zookeeper (five JVMs, kazoo's lock), and nothing left afterwards (no namespace, no sshd, no iptables rule, no
// Redis, etcd or JVM, no remote folder). Needs root; skipped with a message otherwise, except under CI=true, where it fails.
#include "cluster/ssh_cluster.h"

#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <hiredis/hiredis.h>
#include <boost/filesystem.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "cluster/server_builds.h"
#include "core/exit_codes.h"
#include "harness/cli.h"
#include "sys/process.h"
#include "tests/support/ci.h"
#include "tests/support/etcd_remote_checks.h"
#include "tests/support/etcd_test_cluster.h"
#include "tests/support/test_util.h"
#include "tests/support/zookeeper_remote_checks.h"
#include "tests/support/zookeeper_test_cluster.h"

namespace lockcheck {
namespace {

namespace fs = boost::filesystem;
using std::chrono::seconds;

const std::string kTestbed = LOCKCHECK_SOURCE_DIR "/scripts/ssh-testbed";

std::string sh(const std::vector<std::string>& argv, int timeout_s = 60) {
  auto r = run_command(argv, seconds(timeout_s));
  return r.out + r.err;
}

class SshClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (::geteuid() != 0) return;
    state_ = new TempDir();
    ::setenv("LOCKCHECK_TESTBED_DIR", (state_->str() + "/bed").c_str(), 1);
    auto r = run_command({kTestbed, "up", "5"}, seconds(120));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    hosts_ = trim(r.out);
  }
  static void TearDownTestSuite() {
    if (::geteuid() != 0) return;
    auto r = run_command({kTestbed, "down"}, seconds(60));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    // Nothing of the bed is left.
    EXPECT_EQ(sh({"ip", "netns", "list"}).find("lcssh-h"), std::string::npos);
    EXPECT_EQ(sh({"ip", "link", "show"}).find("lcssh"), std::string::npos);
    EXPECT_EQ(sh({"iptables", "-S", "FORWARD"}).find("lockcheck-ssh-testbed"), std::string::npos);
    EXPECT_EQ(sh({"pgrep", "-af", "sshd_config"}).find(state_->str()), std::string::npos);
    delete state_;
    state_ = nullptr;
  }
  void SetUp() override {
    if (::geteuid() != 0) {
      if (testing_util::in_ci()) FAIL() << "the ssh test bed needs root, and CI=true: this test must run";
      GTEST_SKIP() << "the ssh test bed needs root (ip netns, iptables): skipped";
    }
    ASSERT_FALSE(hosts_.empty());
  }
  static std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }
  // What any of the bed's namespaces still has of lockcheck: iptables chains, processes besides sshd.
  static std::string leftovers() {
    std::string found;
    for (int k = 1; k <= 5; ++k) {
      const std::string ns = "lcssh-h" + std::to_string(k);
      std::string rules = sh({"ip", "netns", "exec", ns, "iptables", "-S"});
      if (rules.find("LC-") != std::string::npos) found += ns + " iptables: " + rules;
      for (const auto& pid : testing_util_split(sh({"ip", "netns", "pids", ns}))) {
        std::string comm = sh({"ps", "-o", "comm=", "-p", pid});
        if (comm.find("sshd") == std::string::npos && !trim(comm).empty()) found += ns + " process " + pid + " " + comm;
      }
    }
    return found;
  }
  static std::vector<std::string> testing_util_split(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    std::string w;
    while (in >> w) out.push_back(w);
    return out;
  }
  static TempDir* state_;
  static std::string hosts_;
};

TempDir* SshClusterTest::state_ = nullptr;
std::string SshClusterTest::hosts_;

std::string redis_call(const Endpoint& ep, const char* cmd) {
  timeval tv{1, 0};
  redisContext* c = redisConnectWithTimeout(ep.host.c_str(), ep.port, tv);
  if (c == nullptr || c->err) {
    std::string e = c ? c->errstr : "oom";
    if (c) redisFree(c);
    return "ERR " + e;
  }
  redisSetTimeout(c, tv);
  auto* r = static_cast<redisReply*>(redisCommand(c, cmd));
  std::string out;
  if (r == nullptr) {
    out = "ERR no reply";
  } else {
    if (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING) out.assign(r->str, r->len);
    if (r->type == REDIS_REPLY_ARRAY && r->elements > 0) out.assign(r->element[0]->str, r->element[0]->len);
    freeReplyObject(r);
  }
  redisFree(c);
  return out;
}

TEST_F(SshClusterTest, PrimitivesOnTheTestbedAndNothingLeft) {
  TempDir run;
  RunConfig cfg;
  cfg.cluster = "ssh";
  cfg.hosts = hosts_;
  cfg.nodes = 3;
  cfg.concurrency = 2;
  std::string work_dir;
  {
    SshCluster c(cfg, run.str());
    const auto t0 = std::chrono::steady_clock::now();
    c.start();
    std::cerr << "3-node ssh cluster up in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s\n";
    work_dir = c.host_of(0).work_dir;
    ASSERT_EQ(c.nodes().size(), 3u);
    EXPECT_EQ(c.nodes()[1].endpoint.host, "10.213.0.12");
    for (size_t n = 0; n < 3; ++n) EXPECT_EQ(redis_call(c.nodes()[n].endpoint, "PING"), "PONG");
    // Clients go through the proxy on loopback.
    EXPECT_EQ(c.endpoint_for("c1", 0).host, "127.0.0.1");
    EXPECT_EQ(redis_call(c.endpoint_for("c1", 0), "PING"), "PONG");

    // node <-> node: DROP rules in the run's chain on both hosts.
    c.cut("n1", "n2");
    std::string rules = c.iptables_rules(0);
    EXPECT_NE(rules.find("-A " + c.chain() + " -s 10.213.0.12/32 -j DROP"), std::string::npos) << rules;
    EXPECT_NE(c.iptables_rules(1).find("10.213.0.11/32"), std::string::npos);
    auto blocked = run_command(
        {"ip", "netns", "exec", "lcssh-h1", "redis-cli", "-h", "10.213.0.12", "-p", "6379", "PING"}, seconds(3));
    EXPECT_EQ(blocked.out.find("PONG"), std::string::npos) << "n1 still reaches n2";
    c.heal("n1", "n2");
    EXPECT_EQ(c.iptables_rules(0).find("10.213.0.12/32"), std::string::npos);
    auto open = run_command({"ip", "netns", "exec", "lcssh-h1", "redis-cli", "-h", "10.213.0.12", "-p", "6379", "PING"},
                            seconds(10));
    EXPECT_NE(open.out.find("PONG"), std::string::npos) << open.out << open.err;

    // kill / restart / pause / resume.
    c.kill(1);
    EXPECT_FALSE(c.is_running(1));
    EXPECT_EQ(redis_call(c.nodes()[1].endpoint, "PING").rfind("ERR", 0), 0u);
    c.restart(1);
    EXPECT_TRUE(c.is_running(1));
    EXPECT_EQ(redis_call(c.nodes()[1].endpoint, "PING"), "PONG");
    c.pause(2);
    EXPECT_EQ(redis_call(c.nodes()[2].endpoint, "PING").rfind("ERR", 0), 0u);
    c.resume(2);
    EXPECT_EQ(redis_call(c.nodes()[2].endpoint, "PING"), "PONG");

    // Clock: an hour ahead on n1 only.
    const long before = std::atol(redis_call(c.nodes()[0].endpoint, "TIME").c_str());
    c.set_clock_offset(0, std::chrono::hours(1));
    const long after = std::atol(redis_call(c.nodes()[0].endpoint, "TIME").c_str());
    EXPECT_GE(after - before, 3590);
    EXPECT_LT(std::labs(std::atol(redis_call(c.nodes()[1].endpoint, "TIME").c_str()) - before), 60);

    // Delay between nodes: tc netem, or a clear message where the kernel lacks it.
    try {
      c.set_delay("n1", "n2", std::chrono::milliseconds(50), std::chrono::milliseconds(0));
      c.heal_all();
    } catch (const ClusterError& e) {
      EXPECT_NE(std::string(e.what()).find("delay not available on h"), std::string::npos) << e.what();
    }
    c.stop();
  }
  EXPECT_EQ(leftovers(), "");
  for (const char* n : {"n1", "n2", "n3"}) {
    std::ifstream log(run.str() + "/nodes/" + n + ".log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("Ready to accept connections"), std::string::npos) << n;
  }
  for (auto& e : fs::directory_iterator(work_dir)) ADD_FAILURE() << "left on the host: " << e.path();
}

TEST_F(SshClusterTest, RedlockUnderPartitionAndKillIsRecordedCheckedAndLeavesNothing) {
  // Seed 1 plans the first partition at 1.8 s and the first kill at 2.9 s. The driver applies steps one after
  // the other and drops those the run's end overtakes, and on a loaded machine one step over ssh can take
  // seconds: with seed 7 (a kill of three nodes first, the partition 60 ms later) slow restarts pushed the
  // partition past a 10 s run; with seed 1 and 10 s, a slow partition (two busy loops beside the -j5 suite)
  // pushed the kill past it. 20 s leaves the second step more than 17 s.
  TempDir results;
  std::ostringstream out, err;
  int code = cli_main(
      {"run", "--cluster", "ssh", "--hosts", hosts_, "--lock", "redlock", "--nemesis", "partition,kill",
       "--nemesis-interval", "2", "--time-limit", "20", "--seed", "1", "--no-progress", "--results", results.str()},
      out, err);
  EXPECT_TRUE(code == kExitValid || code == kExitInvalid) << code << "\n" << out.str() << err.str();
  std::string run_dir;
  for (auto& e : fs::directory_iterator(results.str())) {
    if (fs::is_directory(e.path())) run_dir = e.path().string();
  }
  ASSERT_FALSE(run_dir.empty());
  EXPECT_TRUE(fs::exists(run_dir + "/results.json"));
  std::ifstream h(run_dir + "/history.jsonl");
  std::string hist((std::istreambuf_iterator<char>(h)), std::istreambuf_iterator<char>());
  EXPECT_NE(hist.find("\"f\":\"partition\""), std::string::npos);
  EXPECT_NE(hist.find("\"f\":\"kill\""), std::string::npos);
  for (int n = 1; n <= 5; ++n) EXPECT_TRUE(fs::file_size(run_dir + "/nodes/n" + std::to_string(n) + ".log") > 0);
  EXPECT_EQ(leftovers(), "");
  // `lockcheck clean --hosts` finds nothing to remove.
  std::ostringstream cout_, cerr_;
  EXPECT_EQ(cli_main({"clean", "--hosts", hosts_}, cout_, cerr_), 0) << cout_.str() << cerr_.str();
  EXPECT_EQ(cout_.str().find("removed"), std::string::npos) << cout_.str();
}

TEST_F(SshClusterTest, FailoverSplitBrainRunsOnTheHosts) {
  // Master, one replica and three Sentinels: one host each of the five. The master stays cut for 8 s, well past
  // Sentinel's down-after (3 s), so that a promotion happens even on a loaded machine.
  TempDir results;
  std::ostringstream out, err;
  int code = cli_main({"run",
                       "--cluster",
                       "ssh",
                       "--hosts",
                       hosts_,
                       "--topology",
                       "replicated",
                       "--nodes",
                       "2",
                       "--lock",
                       "single-failover",
                       "--nemesis",
                       "failover:split-brain",
                       "--nemesis-interval",
                       "8",
                       "--time-limit",
                       "20",
                       "--seed",
                       "3",
                       "--no-progress",
                       "--results",
                       results.str()},
                      out, err);
  EXPECT_TRUE(code == kExitValid || code == kExitInvalid || code == kExitUnknown) << code << "\n"
                                                                                  << out.str() << err.str();
  std::string run_dir;
  for (auto& e : fs::directory_iterator(results.str())) {
    if (fs::is_directory(e.path())) run_dir = e.path().string();
  }
  ASSERT_FALSE(run_dir.empty());
  std::ifstream h(run_dir + "/history.jsonl");
  std::string hist((std::istreambuf_iterator<char>(h)), std::istreambuf_iterator<char>());
  EXPECT_NE(hist.find("\"type\":\"ok\",\"f\":\"failover\""), std::string::npos) << "no failover was made";
  bool promoted = false;
  for (const char* s : {"s1", "s2", "s3"}) {
    std::ifstream log(run_dir + "/nodes/" + s + ".log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    promoted = promoted || text.find("+switch-master") != std::string::npos;
  }
  EXPECT_TRUE(promoted) << "no Sentinel promoted the replica";
  EXPECT_EQ(leftovers(), "");
}

// Runs `lockcheck run --cluster ssh ... <extra>` under partitions, SIGKILLs it once a partition is in force,
// then `lockcheck clean --hosts` must remove everything (returns clean's output).
std::string clean_after_killed_run(const std::string& hosts, const std::vector<std::string>& extra,
                                   const std::function<std::string()>& leftovers) {
  TempDir results;
  ProcessSpec spec;
  spec.argv = {LOCKCHECK_BINARY, "run",  "--cluster",    "ssh", "--hosts",       hosts,    "--nemesis",
               "partition",      "--nemesis-interval", "1",   "--time-limit",  "60",     "--no-progress",
               "--results",      results.str()};
  spec.argv.insert(spec.argv.end(), extra.begin(), extra.end());
  spec.stdout_path = results.str() + "/out.log";
  spec.stderr_path = "=stdout";
  {
    ChildProcess child(spec);
    // Wait (bounded) until a partition is in force, then SIGKILL the harness: nothing is undone.
    const auto deadline = std::chrono::steady_clock::now() + seconds(60);
    while (std::chrono::steady_clock::now() < deadline && leftovers().find("iptables") == std::string::npos) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    child.kill_and_reap();
  }
  std::ostringstream out, err;
  int code = cli_main({"clean", "--hosts", hosts}, out, err);
  EXPECT_EQ(code, 0) << out.str() << err.str();
  EXPECT_NE(out.str().find("removed"), std::string::npos) << out.str();
  EXPECT_EQ(leftovers(), "") << out.str();
  // Nor the killed run's control-socket folder here.
  for (auto& e : fs::directory_iterator("/tmp")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("lcssh-", 0) != 0) continue;
    std::ifstream owner((e.path() / "owner").string());
    long pid = 0;
    if (owner >> pid) EXPECT_TRUE(::kill(static_cast<pid_t>(pid), 0) == 0) << "left: " << e.path();
  }
  return out.str();
}

TEST_F(SshClusterTest, CleanRemovesWhatAKilledRunLeft) {
  clean_after_killed_run(hosts_, {"--lock", "redlock"}, leftovers);
}

// The same with etcd members: clean finds them by etcd.pid and kills them.
TEST_F(SshClusterTest, CleanRemovesTheEtcdMembersOfAKilledRun) {
  LOCKCHECK_NEED_ETCD();
  LOCKCHECK_NEED(testing_util::etcd_adapter_built(LOCKCHECK_CLIENTS_DIR),
                 "the etcd adapter is not built (scripts/build-clients; needs go): " << LOCKCHECK_CLIENTS_DIR);
  const std::string out = clean_after_killed_run(hosts_, {"--server", "etcd", "--lock", "etcd"}, leftovers);
  EXPECT_NE(out.find("killed"), std::string::npos) << out;
}

// --server etcd on the hosts: one member per host (etcd from the host's package), the essentials of
// tests/support/etcd_remote_checks.h, the logs fetched, nothing left.
TEST_F(SshClusterTest, EtcdMembersStartFaultAndStopLeavingNothing) {
  LOCKCHECK_NEED_ETCD();
  TempDir run;
  RunConfig cfg;
  cfg.cluster = "ssh";
  cfg.server = ServerKind::kEtcd;
  cfg.hosts = hosts_;
  cfg.nodes = 5;
  cfg.concurrency = 2;
  std::string work_dir;
  {
    SshCluster c(cfg, run.str());
    auto t0 = std::chrono::steady_clock::now();
    c.start();
    std::cout << "[ etcd     ] ssh: 5 members started, leader elected, all healthy in "
              << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()
              << " ms\n";
    work_dir = c.host_of(0).work_dir;
    EXPECT_EQ(c.nodes()[1].endpoint.host, "10.213.0.12");
    EXPECT_EQ(c.nodes()[1].endpoint.port, kEtcdClientPort);
    testing_util::expect_members_say(c, "etcdctl", server_program_version(ServerKind::kEtcd, "etcd"));
    testing_util::check_remote_etcd_essentials(c);
    // A delay between members: tc netem on both hosts (or a clear message where the kernel lacks it); healed,
    // every member is healthy again.
    try {
      c.set_delay("n1", "n2", std::chrono::milliseconds(50), std::chrono::milliseconds(0));
      c.heal_all();
      EXPECT_EQ(testing_util::wait_etcd_ready(c, std::chrono::milliseconds(20000)), "");
    } catch (const ClusterError& e) {
      EXPECT_NE(std::string(e.what()).find("delay not available on h"), std::string::npos) << e.what();
    }
    t0 = std::chrono::steady_clock::now();
    c.stop();
    std::cout << "[ etcd     ] ssh: stopped in "
              << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()
              << " ms\n";
  }
  EXPECT_EQ(leftovers(), "");
  for (const char* n : {"n1", "n2", "n3", "n4", "n5"}) {
    std::ifstream log(run.str() + "/nodes/" + n + ".log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("starting an etcd server"), std::string::npos) << n;
  }
  for (auto& e : fs::directory_iterator(work_dir)) ADD_FAILURE() << "left on the host: " << e.path();
}

// --server-version 3.4.3 on the hosts: this machine's build (build/servers/etcd-3.4.3/etcd) is uploaded with each
// host's folder and run from there; every member says 3.4.3 when asked; nothing is left on the hosts.
TEST_F(SshClusterTest, Etcd343IsUploadedToTheHostsAndItsMembersSaySo) {
  LOCKCHECK_NEED_ETCD();
  LOCKCHECK_NEED(testing_util::etcd343_built(LOCKCHECK_BUILD_DIR),
                 "etcd 3.4.3 is not built (scripts/build-clients; needs go) in " << LOCKCHECK_BUILD_DIR << "/servers");
  TempDir run;
  RunConfig cfg;
  cfg.cluster = "ssh";
  cfg.server = ServerKind::kEtcd;
  cfg.server_version = "3.4.3";
  cfg.hosts = hosts_;
  cfg.nodes = 5;
  cfg.concurrency = 2;
  std::string work_dir;
  {
    SshCluster c(cfg, run.str());
    c.start();
    work_dir = c.host_of(0).work_dir;
    testing_util::expect_members_say(c, harness_etcdctl(cfg), "3.4.3");
    c.stop();
  }
  EXPECT_EQ(leftovers(), "");
  for (auto& e : fs::directory_iterator(work_dir)) ADD_FAILURE() << "left on the host: " << e.path();
}

// etcd's lock on the hosts through the CLI: healthy is valid; under member kills the run completes, every kill
// undone; nothing is left.
TEST_F(SshClusterTest, EtcdLockRunsOnTheHostsAndLeavesNothing) {
  LOCKCHECK_NEED_ETCD();
  LOCKCHECK_NEED(testing_util::etcd_adapter_built(LOCKCHECK_CLIENTS_DIR),
                 "the etcd adapter is not built (scripts/build-clients; needs go): " << LOCKCHECK_CLIENTS_DIR);
  for (const bool kill : {false, true}) {
    TempDir results;
    std::ostringstream out, err;
    std::vector<std::string> args = {"run",        "--server", "etcd",   "--cluster",      "ssh",
                                     "--hosts",    hosts_,     "--lock", "etcd",           "--time-limit",
                                     "8",          "--seed",   "7",      "--no-progress",  "--results",
                                     results.str()};
    if (kill) args.insert(args.end(), {"--nemesis", "kill", "--nemesis-interval", "2"});
    const int code = cli_main(args, out, err);
    if (kill) {
      EXPECT_TRUE(code == kExitValid || code == kExitInvalid || code == kExitUnknown) << code << "\n"
                                                                                      << out.str() << err.str();
      EXPECT_NE(out.str().find("faults        valid"), std::string::npos) << out.str() << err.str();
    } else {
      EXPECT_EQ(code, kExitValid) << out.str() << err.str();
    }
    EXPECT_EQ(leftovers(), "");
  }
}

// ZooKeeper: the same after a killed run: clean finds the members by zookeeper.pid (a java process) and kills them.
TEST_F(SshClusterTest, CleanRemovesTheZooKeeperMembersOfAKilledRun) {
  LOCKCHECK_NEED_ZOOKEEPER();
  LOCKCHECK_NEED(testing_util::kazoo_adapter_built(LOCKCHECK_CLIENTS_DIR),
                 testing_util::kNoKazoo << ": " << LOCKCHECK_CLIENTS_DIR);
  const std::string out = clean_after_killed_run(hosts_, {"--server", "zookeeper", "--lock", "kazoo"}, leftovers);
  EXPECT_NE(out.find("killed"), std::string::npos) << out;
}

// --server zookeeper on the hosts: one member per host (the hosts' java and Debian jars), the essentials of
// tests/support/zookeeper_remote_checks.h, each member's RSS printed, the logs fetched, nothing left.
TEST_F(SshClusterTest, ZooKeeperMembersStartFaultAndStopLeavingNothing) {
  LOCKCHECK_NEED_ZOOKEEPER();
  TempDir run;
  RunConfig cfg;
  cfg.cluster = "ssh";
  cfg.server = ServerKind::kZooKeeper;
  cfg.hosts = hosts_;
  cfg.nodes = 5;
  cfg.concurrency = 2;
  std::string work_dir;
  {
    SshCluster c(cfg, run.str());
    auto t0 = std::chrono::steady_clock::now();
    c.start();
    std::cout << "[ zk       ] ssh: 5 members started, one leader, all serving in "
              << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()
              << " ms\n";
    work_dir = c.host_of(0).work_dir;
    std::vector<Endpoint> all;
    for (const auto& n : c.nodes()) all.push_back(n.endpoint);
    EXPECT_EQ(c.nodes()[1].endpoint, (Endpoint{"10.213.0.12", kZooKeeperClientPort}));
    // Each member's JVM (the hosts are namespaces of this machine: their processes are in its /proc).
    for (size_t n = 0; n < all.size(); ++n) {
      const std::string k = std::to_string(n + 1);  // node nK on host hK
      std::ifstream pidf((fs::path(work_dir).parent_path().parent_path() / ("h" + k) / "work" /
                          ("lockcheck-" + c.run_id()) / ("n" + k) / "zookeeper.pid")
                             .string());
      std::string pid;
      std::ifstream status;
      if (pidf >> pid) status.open("/proc/" + pid + "/status");
      std::string line;
      while (std::getline(status, line)) {
        if (line.rfind("VmRSS:", 0) == 0) std::cout << "[ zk       ] ssh: n" << n + 1 << " " << line << "\n";
      }
    }
    const auto s = zookeeper_srvr(all[0], std::chrono::milliseconds(2000));
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->version, server_program_version(ServerKind::kZooKeeper, zookeeper_default_classpath()));
    testing_util::check_remote_zookeeper_essentials(c);
    t0 = std::chrono::steady_clock::now();
    c.stop();
    std::cout << "[ zk       ] ssh: stopped in "
              << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()
              << " ms\n";
  }
  EXPECT_EQ(leftovers(), "");
  for (const char* n : {"n1", "n2", "n3", "n4", "n5"}) {
    std::ifstream log(run.str() + "/nodes/" + n + ".log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("QuorumPeer"), std::string::npos) << n;
  }
  for (auto& e : fs::directory_iterator(work_dir)) ADD_FAILURE() << "left on the host: " << e.path();
}

// kazoo's lock on the hosts through the CLI: healthy is valid; under member kills and partitions the run
// completes, every fault undone; nothing is left.
TEST_F(SshClusterTest, ZooKeeperKazooRunsOnTheHostsAndLeavesNothing) {
  LOCKCHECK_NEED_ZOOKEEPER();
  LOCKCHECK_NEED(testing_util::kazoo_adapter_built(LOCKCHECK_CLIENTS_DIR),
                 testing_util::kNoKazoo << ": " << LOCKCHECK_CLIENTS_DIR);
  for (const bool faults : {false, true}) {
    TempDir results;
    std::ostringstream out, err;
    std::vector<std::string> args = {"run",    "--server", "zookeeper", "--cluster",     "ssh",       "--hosts",
                                     hosts_,   "--lock",   "kazoo",     "--time-limit",  "10",        "--ttl-ms",
                                     "2000",   "--seed",   "7",         "--no-progress", "--results", results.str()};
    if (faults) args.insert(args.end(), {"--nemesis", "kill,partition", "--nemesis-interval", "2"});
    const int code = cli_main(args, out, err);
    if (faults) {
      EXPECT_TRUE(code == kExitValid || code == kExitInvalid || code == kExitUnknown) << code << "\n"
                                                                                      << out.str() << err.str();
      EXPECT_NE(out.str().find("faults        valid"), std::string::npos) << out.str() << err.str();
    } else {
      EXPECT_EQ(code, kExitValid) << out.str() << err.str();
    }
    EXPECT_EQ(leftovers(), "");
  }
}

}  // namespace
}  // namespace lockcheck
