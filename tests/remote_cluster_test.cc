// RemoteCluster (cluster/remote_cluster.h), the one implementation under the docker and ssh backends, on its
// Remote seam's local side: one host, this machine's loopback, so that its start, node faults, clocks, log
// fetching and teardown run with real redis-server processes and without root, Docker or sshd. Network faults
// between servers of one host are refused (rules are per host), which is checked too; cuts themselves are
// covered on real hosts by docker_cluster_test and ssh_cluster_test.
#include "cluster/remote_cluster.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <boost/filesystem.hpp>

#include "sys/process.h"
#include "tests/support/ci.h"
#include "tests/support/loopback_cluster.h"
#include "tests/support/redis_test_server.h"
#include "tests/support/temp_dir.h"

namespace lockcheck {
namespace {

namespace fs = boost::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

// One command on a fresh connection (tests/support's connect and command); "ERR <why>" when there is no reply.
std::string call(const Endpoint& ep, const std::vector<std::string>& argv, milliseconds timeout = milliseconds(1000)) {
  testing_support::RedisConn c = testing_support::connect(ep, timeout);
  if (!c || c->err) return "ERR " + std::string(c ? c->errstr : "oom");
  testing_support::Reply r = testing_support::command(c.get(), argv);
  if (!r) return std::string("ERR ") + (c->err ? c->errstr : "no reply");
  if (r->type == REDIS_REPLY_NIL) return "(nil)";
  if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 && r->element[0]->str) return r->element[0]->str;
  return r->str ? std::string(r->str, r->len) : "";
}

TEST(RemoteClusterTest, ServersOnALocalRemoteStartFaultAndAreRemovedAtStop) {
  const auto redis_server = find_program("redis-server");
  LOCKCHECK_NEED(redis_server.has_value(), "redis-server not found on PATH");
  TempDir dir("lockcheck-remote");
  const std::string run_dir = dir.str() + "/run", work_dir = dir.str() + "/host";
  RunConfig config;
  config.nodes = 2;
  config.concurrency = 1;
  LoopbackCluster c(config, run_dir, work_dir, *redis_server,
                    {testing_support::pick_free_port(), testing_support::pick_free_port()});
  c.start();
  const Endpoint n1 = c.nodes()[0].endpoint, n2 = c.nodes()[1].endpoint;
  EXPECT_EQ(n1.host, "127.0.0.1");
  EXPECT_EQ(call(n1, {"PING"}), "PONG");
  EXPECT_EQ(call(c.endpoint_for("c0", 1), {"PING"}), "PONG");  // through the fault proxy
  const std::string folder = work_dir + "/lockcheck-" + c.run_id();
  EXPECT_TRUE(fs::exists(folder + "/n1/redis.conf"));
  EXPECT_TRUE(fs::exists(folder + "/libclockshim.so"));

  // kill and restart: persistence none comes back empty; the proxy refuses while it is down.
  ASSERT_EQ(call(n1, {"SET", "k", "v"}), "OK");
  c.kill(0);
  EXPECT_FALSE(c.is_running(0));
  EXPECT_EQ(call(n1, {"PING"}, milliseconds(300)).rfind("ERR", 0), 0u);
  EXPECT_NE(call(c.endpoint_for("c0", 0), {"PING"}, milliseconds(500)).find("refused"), std::string::npos);
  c.restart(0);
  EXPECT_TRUE(c.is_running(0));
  EXPECT_EQ(call(n1, {"GET", "k"}), "(nil)");

  // pause and resume
  c.pause(1);
  EXPECT_EQ(call(n2, {"PING"}, milliseconds(300)).rfind("ERR", 0), 0u) << "a stopped node must not answer";
  c.resume(1);
  EXPECT_EQ(call(n2, {"PING"}), "PONG");

  // the clock: 40 s ahead on n1 only
  const long long before = std::atoll(call(n2, {"TIME"}).c_str());
  c.set_clock_offset(0, seconds(40));
  const long long ahead = std::atoll(call(n1, {"TIME"}).c_str()) - before;
  EXPECT_GE(ahead, 39);
  EXPECT_LE(ahead, 42);
  // a rate, written with dd like every remote clock write (the double-buffered slots: clock_shim.h): n1 runs
  // 50% fast from +40 s on without a jump, then steady again keeping what it gained
  c.set_clock_rate(0, 500000000);
  ASSERT_TRUE(c.clock_shift(0).has_value());
  EXPECT_NEAR(static_cast<double>(c.clock_shift(0)->count()), 40e9, 0.5e9) << "no jump when the rate changes";
  std::this_thread::sleep_for(milliseconds(2000));
  c.set_clock_rate(0, 0);
  const long long drifted = std::atoll(call(n1, {"TIME"}).c_str()) - std::atoll(call(n2, {"TIME"}).c_str());
  EXPECT_GE(drifted, 40);  // +40 s, plus half of 2 s and more
  EXPECT_LE(drifted, 43);
  EXPECT_NEAR(static_cast<double>(c.clock_shift(0)->count()), 41e9, 0.6e9);
  c.set_clock_offset(0, seconds(0));
  EXPECT_LE(std::abs(std::atoll(call(n1, {"TIME"}).c_str()) - std::atoll(call(n2, {"TIME"}).c_str())), 1);

  // Rules are per host: two servers of one host cannot be cut apart or delayed; unknown parties are named.
  EXPECT_THROW(c.cut("n1", "n2"), ClusterError);
  EXPECT_THROW(c.set_delay("n1", "n2", milliseconds(100), milliseconds(0)), ClusterError);
  EXPECT_THROW(c.cut("n1", "zz"), ClusterError);
  c.cut("c0", "n1");  // a client link: the proxy's
  EXPECT_EQ(call(c.endpoint_for("c0", 0), {"PING"}, milliseconds(300)).rfind("ERR", 0), 0u);
  c.heal_all();
  EXPECT_EQ(call(c.endpoint_for("c0", 0), {"PING"}), "PONG");

  c.stop();
  c.stop();  // idempotent
  EXPECT_EQ(call(n1, {"PING"}, milliseconds(300)).rfind("ERR", 0), 0u);
  EXPECT_EQ(call(n2, {"PING"}, milliseconds(300)).rfind("ERR", 0), 0u);
  EXPECT_FALSE(fs::exists(folder)) << "the remote folder must go";
  std::ifstream log(run_dir + "/nodes/n2.log");
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_NE(text.str().find("Ready to accept connections"), std::string::npos) << "the log is fetched at stop";
  EXPECT_THROW(c.kill(0), ClusterError);  // not running any more
}

TEST(RemoteClusterTest, AServerThatCannotStartIsAClearErrorAndNothingIsLeft) {
  TempDir dir("lockcheck-remote");
  RunConfig config;
  config.nodes = 1;
  LoopbackCluster c(config, dir.str() + "/run", dir.str() + "/host", "/nonexistent/redis-server",
                    {testing_support::pick_free_port()});
  try {
    c.start();
    ADD_FAILURE() << "start() succeeded without a server binary";
  } catch (const ClusterError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("loopback cluster: n1 on lo did not start"), std::string::npos) << m;
  }
  EXPECT_FALSE(fs::exists(dir.str() + "/host/lockcheck-" + c.run_id()));
}

}  // namespace
}  // namespace lockcheck
