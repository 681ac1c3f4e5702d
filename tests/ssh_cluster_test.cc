// The ssh backend on the namespace test bed (scripts/ssh-testbed), beyond the contract every server kind keeps on
// it (tests/server_contract_test.cc): runs through the CLI (redlock under partitions and kills, a Sentinel failover,
// etcd's and kazoo's locks), etcd 3.4.3 shipped to the hosts, `lockcheck clean` after a killed run, and nothing left
// afterwards (no namespace, no sshd, no iptables rule, no server process, no remote folder). Needs root; skipped with
// a message otherwise, except under CI=true, where it fails.
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

#include "core/exit_codes.h"
#include "harness/cli.h"
#include "sys/process.h"
#include "tests/support/ci.h"
#include "harness/cluster_factory.h"
#include "harness/plan.h"
#include "tests/support/etcd_test_cluster.h"
#include "tests/support/local_cluster.h"
#include "tests/support/test_util.h"
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

// The same with etcd members: clean finds them by their pid and program files and kills them.
TEST_F(SshClusterTest, CleanRemovesTheEtcdMembersOfAKilledRun) {
  LOCKCHECK_NEED_ETCD();
  LOCKCHECK_NEED(testing_util::etcd_adapter_built(LOCKCHECK_CLIENTS_DIR),
                 "the etcd adapter is not built (scripts/build-clients; needs go): " << LOCKCHECK_CLIENTS_DIR);
  const std::string out = clean_after_killed_run(hosts_, {"--server", "etcd", "--lock", "etcd"}, leftovers);
  EXPECT_NE(out.find("killed"), std::string::npos) << out;
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
  cfg.server = "etcd";
  cfg.server_version = "3.4.3";
  cfg.hosts = hosts_;
  cfg.nodes = 5;
  cfg.nodes_given = true;
  cfg.concurrency = 2;
  std::string work_dir;
  {
    const Plan plan = resolve_server_plan(cfg);
    EXPECT_TRUE(plan.ship_build);
    auto made = make_cluster(plan, run.str());
    SshCluster& c = dynamic_cast<SshCluster&>(*made);
    c.start();
    work_dir = c.host_of(0).work_dir;
    testing_util::expect_members_say(c, "3.4.3");
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

// ZooKeeper: the same after a killed run: clean finds the members (java processes) and kills them.
TEST_F(SshClusterTest, CleanRemovesTheZooKeeperMembersOfAKilledRun) {
  LOCKCHECK_NEED_ZOOKEEPER();
  LOCKCHECK_NEED(testing_util::kazoo_adapter_built(LOCKCHECK_CLIENTS_DIR),
                 testing_util::kNoKazoo << ": " << LOCKCHECK_CLIENTS_DIR);
  const std::string out = clean_after_killed_run(hosts_, {"--server", "zookeeper", "--lock", "kazoo"}, leftovers);
  EXPECT_NE(out.find("killed"), std::string::npos) << out;
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
