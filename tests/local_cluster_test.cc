#include "cluster/local_cluster.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <boost/filesystem.hpp>

#include <hiredis/hiredis.h>

#include "cluster/local_members.h"
#include "sys/redis_conn.h"
#include "tests/support/test_util.h"

namespace lockcheck {
namespace {

namespace fs = boost::filesystem;

class LocalClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fs::unique_path("lockcheck-cluster-%%%%%%%%");
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  LocalClusterOptions options(int nodes, Persistence p = Persistence::kNone) {
    LocalClusterOptions o;
    o.nodes = nodes;
    o.persistence = p;
    o.nodes_dir = (dir_ / "nodes").string();
    return o;
  }

  static Reply cmd(const Endpoint& ep, const std::vector<std::string>& argv) {
    RedisConn c(ep, std::chrono::milliseconds(200), std::chrono::milliseconds(300));
    return c.command(argv);
  }

  static bool alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

  fs::path dir_;
};

TEST_F(LocalClusterTest, StartsNodesThatAnswerAndStopsThemAll) {
  std::vector<pid_t> pids;
  {
    LocalCluster c(options(5));
    c.start();
    ASSERT_EQ(c.nodes().size(), 5u);
    for (size_t n = 0; n < 5; ++n) {
      EXPECT_EQ(c.nodes()[n].name, "n" + std::to_string(n + 1));
      EXPECT_TRUE(cmd(c.nodes()[n].endpoint, {"PING"}).is_status("PONG"));
      EXPECT_TRUE(fs::exists(c.nodes()[n].log_path));
      pids.push_back(c.pid(n));
    }
    // Independent nodes: a key on one is not on another.
    EXPECT_TRUE(cmd(c.nodes()[0].endpoint, {"SET", "k", "v"}).is_status("OK"));
    EXPECT_TRUE(cmd(c.nodes()[1].endpoint, {"GET", "k"}).is_nil());
    c.stop();
    for (pid_t p : pids) EXPECT_FALSE(alive(p)) << p;
    c.stop();  // idempotent
  }
}

TEST_F(LocalClusterTest, DestructorStopsNodes) {
  pid_t pid;
  {
    LocalCluster c(options(1));
    c.start();
    pid = c.pid(0);
    ASSERT_TRUE(alive(pid));
  }
  EXPECT_FALSE(alive(pid));
}

TEST_F(LocalClusterTest, KillAndRestartWithoutPersistenceLosesData) {
  LocalCluster c(options(2));
  c.start();
  const Endpoint ep = c.nodes()[0].endpoint;
  ASSERT_TRUE(cmd(ep, {"SET", "k", "v"}).is_status("OK"));
  c.kill(0);
  EXPECT_FALSE(c.is_running(0));
  EXPECT_EQ(cmd(ep, {"PING"}).status, RedisStatus::kNotSent);  // refused: certainly not applied
  c.restart(0);
  EXPECT_TRUE(c.is_running(0));
  EXPECT_EQ(c.nodes()[0].endpoint, ep);  // same address
  EXPECT_TRUE(cmd(ep, {"GET", "k"}).is_nil());
}

TEST_F(LocalClusterTest, KillAndRestartWithAofKeepsData) {
  LocalCluster c(options(1, Persistence::kAofAlways));
  c.start();
  const Endpoint ep = c.nodes()[0].endpoint;
  ASSERT_TRUE(cmd(ep, {"SET", "k", "v"}).is_status("OK"));
  c.kill(0);
  c.restart(0);
  EXPECT_EQ(cmd(ep, {"GET", "k"}).str(), std::string("v"));
}

TEST_F(LocalClusterTest, PausedNodeTimesOutAndAnswersAfterResume) {
  LocalCluster c(options(1));
  c.start();
  const Endpoint ep = c.nodes()[0].endpoint;
  c.pause(0);
  auto t0 = std::chrono::steady_clock::now();
  Reply r = cmd(ep, {"SET", "k", "v"});
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.status, RedisStatus::kTimeout);  // info: it may yet be applied
  EXPECT_TRUE(r.indeterminate());
  EXPECT_LT(took, std::chrono::seconds(2));  // bounded, no hang
  c.resume(0);
  EXPECT_TRUE(cmd(ep, {"PING"}).is_status("PONG"));
  // The SET sent while it was paused was applied once it resumed: that is why a timeout is info, not fail.
  EXPECT_EQ(cmd(ep, {"GET", "k"}).str(), std::string("v"));
}

TEST_F(LocalClusterTest, StopKillsPausedNodes) {
  pid_t pid;
  LocalCluster c(options(1));
  c.start();
  pid = c.pid(0);
  c.pause(0);
  c.stop();
  EXPECT_FALSE(alive(pid));
}

TEST_F(LocalClusterTest, ClientsGoThroughTheProxyAndACutLinkHoldsOnlyThatLink) {
  LocalCluster c(options(2));
  c.start();
  const Endpoint c0 = c.endpoint_for("c0", 0);
  const Endpoint c1 = c.endpoint_for("c1", 0);
  EXPECT_NE(c0, c.nodes()[0].endpoint);
  EXPECT_NE(c0, c1);
  EXPECT_EQ(c.endpoint_for("c0", 0), c0);  // one link per (party, node)
  EXPECT_TRUE(cmd(c0, {"PING"}).is_status("PONG"));
  c.cut("c0", "n1");
  EXPECT_EQ(cmd(c0, {"SET", "k", "v"}).status, RedisStatus::kTimeout);  // held, not refused: info
  EXPECT_TRUE(cmd(c1, {"PING"}).is_status("PONG"));
  EXPECT_TRUE(cmd(c.endpoint_for("c0", 1), {"PING"}).is_status("PONG"));
  c.heal_all();
  EXPECT_TRUE(cmd(c0, {"PING"}).is_status("PONG"));
}

TEST_F(LocalClusterTest, ClockOffsetMovesOneNodesTimeAndExpiresItsKeys) {
  LocalCluster c(options(2));
  c.start();
  auto time_of = [&](size_t n) {
    RedisConn conn(c.nodes()[n].endpoint, std::chrono::milliseconds(200), std::chrono::milliseconds(300));
    Reply r = conn.command({"TIME"});
    return std::stoll(std::string(r.raw()->element[0]->str, r.raw()->element[0]->len));
  };
  const Endpoint ep = c.nodes()[0].endpoint;
  ASSERT_TRUE(cmd(ep, {"SET", "lock-0", "t", "NX", "PX", "30000"}).is_status("OK"));
  const long long before = time_of(0);
  c.set_clock_offset(0, std::chrono::seconds(40));
  EXPECT_GE(time_of(0) - before, 39);
  EXPECT_LE(std::llabs(time_of(1) - before), 2);         // the other node's clock did not move
  EXPECT_EQ(cmd(ep, {"PTTL", "lock-0"}).integer(), -2);  // a 30 s lock expired at once
  c.set_clock_offset(0, std::chrono::nanoseconds(0));
  EXPECT_LE(std::llabs(time_of(0) - before), 2);
}

// A node restarted during a clock fault keeps the clock the nemesis gave it, as a host's clock outlives a
// process (regression: the local backend reset it to the real clock at every spawn, the remote ones kept it).
TEST_F(LocalClusterTest, RestartedNodeKeepsItsClock) {
  LocalCluster c(options(1));
  c.start();
  auto now_s = [&] {
    RedisConn conn(c.nodes()[0].endpoint, std::chrono::milliseconds(200), std::chrono::milliseconds(300));
    Reply r = conn.command({"TIME"});
    return std::stoll(std::string(r.raw()->element[0]->str, r.raw()->element[0]->len));
  };
  const long long before = now_s();
  c.set_clock_offset(0, std::chrono::seconds(100));
  c.kill(0);
  c.restart(0);
  EXPECT_GE(now_s() - before, 99);
  ASSERT_TRUE(c.clock_shift(0).has_value());
  EXPECT_GE(c.clock_shift(0)->count(), 99LL * 1000000000);
  c.set_clock_offset(0, std::chrono::nanoseconds(0));
  EXPECT_LE(std::llabs(now_s() - before), 2);
}

TEST_F(LocalClusterTest, MissingBinaryIsAClearError) {
  auto o = options(1);
  o.redis_server = "/nonexistent/redis-server";
  LocalCluster c(o);
  try {
    c.start();
    FAIL() << "started without a binary";
  } catch (const ClusterError& e) {
    EXPECT_NE(std::string(e.what()).find("redis-server binary not found"), std::string::npos) << e.what();
  }
}

// The member processes' seam (cluster/local_members.h) that LocalCluster and LocalEnsemble share, on `sleep`:
// start, pause (the process is stopped, state T), a restart of a paused member continues it rather than starting
// another, kill (reaped: nothing left), and the errors name what they concern.
TEST(LocalMembersTest, PausesContinuesAndKillsTheMembersProcesses) {
  auto state = [](pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string s;
    std::getline(in, s);
    const auto close = s.rfind(')');
    return close != std::string::npos && close + 2 < s.size() ? s[close + 2] : '?';
  };
  auto stopped_within = [&](pid_t pid, bool stopped) {
    for (int i = 0; i < 100; ++i) {
      if ((state(pid) == 'T') == stopped) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  LocalMembers m;
  m.resize(2);
  EXPECT_EQ(m.pid(0), -1);
  EXPECT_FALSE(m.running(0));
  EXPECT_FALSE(m.continue_if_running(0)) << "a member that never started must be started";
  try {
    m.pause(1, "n2");
    FAIL() << "paused a member that is down";
  } catch (const ClusterError& e) {
    EXPECT_STREQ(e.what(), "cannot pause n2: it is down");
  }
  m.resume(1);  // down: nothing to do

  ProcessSpec spec;
  spec.argv = {"sleep", "60"};
  const pid_t pid = m.start(0, spec, "node n1").pid();
  ASSERT_GT(pid, 0);
  EXPECT_EQ(m.pid(0), pid);
  EXPECT_TRUE(m.running(0));
  m.pause(0, "n1");
  EXPECT_TRUE(stopped_within(pid, true));
  EXPECT_TRUE(m.running(0)) << "paused is still up";
  EXPECT_TRUE(m.continue_if_running(0)) << "a restart of a paused member continues it";
  EXPECT_TRUE(stopped_within(pid, false));
  EXPECT_EQ(m.pid(0), pid) << "no second process";
  m.pause(0, "n1");
  EXPECT_TRUE(stopped_within(pid, true));
  m.resume(0);
  EXPECT_TRUE(stopped_within(pid, false));
  m.pause(0, "n1");
  m.kill(0);  // a paused member dies too (SIGCONT, SIGKILL, reaped)
  EXPECT_EQ(m.pid(0), -1);
  EXPECT_FALSE(testing_util::process_alive(pid));

  // A member that exited by itself is down for a restart, and its slot is emptied.
  spec.argv = {"true"};
  const pid_t short_lived = m.start(1, spec, "node n2").pid();
  for (int i = 0; i < 100 && m.running(1); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(m.continue_if_running(1));
  EXPECT_EQ(m.pid(1), -1);
  EXPECT_FALSE(testing_util::process_alive(short_lived));

  spec.argv = {"/nonexistent/redis-server"};
  try {
    m.start(1, spec, "node n2");
    FAIL() << "started a program that does not exist";
  } catch (const ClusterError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cannot start node n2: ", 0), 0u) << e.what();
  }
  EXPECT_EQ(m.pid(1), -1);

  const pid_t last = m.start(0, {{"sleep", "60"}}, "node n1").pid();
  m.resize(0);  // kills what ran
  EXPECT_FALSE(testing_util::process_alive(last));
}

}  // namespace
}  // namespace lockcheck
