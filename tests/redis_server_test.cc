// The redis server kind (servers/redis.cc) on the local backend, beyond the contract every kind keeps
// (tests/server_contract_test.cc): what Redis itself does under the faults (independent masters, a restart without
// persistence forgets, AOF keeps, a paused node's timeout is indeterminate, the clock shim moves TIME and expires
// keys, a restarted node keeps its clock), and a missing program named.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>

#include <boost/filesystem.hpp>

#include <hiredis/hiredis.h>

#include "sys/redis_conn.h"
#include "tests/support/held_port.h"
#include "tests/support/local_cluster.h"
#include "tests/support/test_util.h"

namespace lockcheck {
namespace {

namespace fs = boost::filesystem;

class RedisServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fs::unique_path("lockcheck-cluster-%%%%%%%%");
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  testing_util::LocalClusterSpec options(int nodes, const std::string& persistence = "none") {
    testing_util::LocalClusterSpec o;
    o.nodes = nodes;
    o.options = {{"persistence", persistence}};
    return o;
  }
  std::unique_ptr<ServerCluster> make(const testing_util::LocalClusterSpec& o) {
    return testing_util::make_local_cluster(o, dir_.string());
  }

  static Reply cmd(const Endpoint& ep, const std::vector<std::string>& argv) {
    RedisConn c(ep, std::chrono::milliseconds(200), std::chrono::milliseconds(300));
    return c.command(argv);
  }

  static bool alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

  fs::path dir_;
};

TEST_F(RedisServerTest, StartsNodesThatAnswerAndStopsThemAll) {
  std::vector<pid_t> pids;
  {
    auto cp = make(options(5));
  ServerCluster& c = *cp;
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

std::string slurp(const fs::path& p) {
  std::ifstream in(p.string());
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST_F(RedisServerTest, ANodeWhosePortWasTakenStartsAgainOnAnotherWithItsConfigurationRewritten) {
  testing_util::HeldPort held;  // taken between the draw and the node's bind, as another run's server would
  ASSERT_GT(held.port, 0);
  int draws = 0;
  auto o = options(1);
  o.draw_port = [&] { return draws++ == 0 ? held.port : free_loopback_port(); };
  auto c = make(o);
  c->start();
  EXPECT_TRUE(cmd(c->nodes()[0].endpoint, {"PING"}).is_status("PONG"));
  const std::string log = slurp(c->nodes()[0].log_path);
  EXPECT_NE(log.find("ddress already in use"), std::string::npos) << "the first start did not meet the taken port";
  const std::string conf = slurp(dir_ / "nodes" / "n1" / "redis.conf");
  EXPECT_EQ(conf.find("port " + std::to_string(held.port) + "\n"), std::string::npos) << conf;
  c->stop();
}

TEST_F(RedisServerTest, TwoMembersNeverDrawTheSamePort) {
  // The source hands out one port twice: the second member must not take it.
  const int same = free_loopback_port();
  int draws = 0;
  auto o = options(2);
  o.draw_port = [&] { return draws++ < 2 ? same : free_loopback_port(); };
  auto c = make(o);
  c->start();
  for (size_t n = 0; n < 2; ++n) EXPECT_TRUE(cmd(c->nodes()[n].endpoint, {"PING"}).is_status("PONG"));
  for (const char* n : {"n1", "n2"}) {
    EXPECT_EQ(slurp(dir_ / "nodes" / (std::string(n) + ".log")).find("ddress already in use"), std::string::npos) << n;
  }
  c->stop();
}

TEST_F(RedisServerTest, DestructorStopsNodes) {
  pid_t pid;
  {
    auto cp = make(options(1));
  ServerCluster& c = *cp;
    c.start();
    pid = c.pid(0);
    ASSERT_TRUE(alive(pid));
  }
  EXPECT_FALSE(alive(pid));
}

TEST_F(RedisServerTest, KillAndRestartWithoutPersistenceLosesData) {
  auto cp = make(options(2));
  ServerCluster& c = *cp;
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

TEST_F(RedisServerTest, KillAndRestartWithAofKeepsData) {
  auto cp = make(options(1, "aof-always"));
  ServerCluster& c = *cp;
  c.start();
  const Endpoint ep = c.nodes()[0].endpoint;
  ASSERT_TRUE(cmd(ep, {"SET", "k", "v"}).is_status("OK"));
  c.kill(0);
  c.restart(0);
  EXPECT_EQ(cmd(ep, {"GET", "k"}).str(), std::string("v"));
}

TEST_F(RedisServerTest, PausedNodeTimesOutAndAnswersAfterResume) {
  auto cp = make(options(1));
  ServerCluster& c = *cp;
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

TEST_F(RedisServerTest, StopKillsPausedNodes) {
  pid_t pid;
  auto cp = make(options(1));
  ServerCluster& c = *cp;
  c.start();
  pid = c.pid(0);
  c.pause(0);
  c.stop();
  EXPECT_FALSE(alive(pid));
}

TEST_F(RedisServerTest, ClientsGoThroughTheProxyAndACutLinkHoldsOnlyThatLink) {
  auto cp = make(options(2));
  ServerCluster& c = *cp;
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

TEST_F(RedisServerTest, ClockOffsetMovesOneNodesTimeAndExpiresItsKeys) {
  auto cp = make(options(2));
  ServerCluster& c = *cp;
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
TEST_F(RedisServerTest, RestartedNodeKeepsItsClock) {
  auto cp = make(options(1));
  ServerCluster& c = *cp;
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

TEST_F(RedisServerTest, MissingBinaryIsAClearError) {
  auto o = options(1);
  o.options["redis_server"] = "/nonexistent/redis-server";
  try {
    make(o);
    FAIL() << "made a cluster without a binary";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no redis build on this machine"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--redis-server"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lockcheck
