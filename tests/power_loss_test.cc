// Power loss on a real redis-server (cluster/powershim.c, cluster/power_loss.h, ServerCluster::power_loss): a
// write acknowledged under appendfsync everysec and not yet synced is gone after it; one under always is kept.
#include <gtest/gtest.h>
#include <signal.h>

#include <boost/filesystem.hpp>

#include "cluster/power_loss.h"
#include "core/exit_codes.h"
#include "sys/process.h"
#include "sys/redis_conn.h"
#include "tests/support/ci.h"
#include "tests/support/local_cluster.h"
#include "tests/support/remote_loopback.h"
#include "tests/support/temp_dir.h"

namespace lockcheck {
namespace {

namespace fs = boost::filesystem;

testing_util::LocalClusterSpec one_node(const std::string& persistence) {
  testing_util::LocalClusterSpec o;
  o.nodes = 1;
  o.options = {{"persistence", persistence}};
  o.power_shim = true;
  return o;
}

Reply cmd(const Endpoint& ep, const std::vector<std::string>& argv) {
  RedisConn c(ep, std::chrono::milliseconds(500), std::chrono::milliseconds(1000));
  return c.command(argv);
}

bool alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

// Under everysec Redis fdatasyncs at most once per second of its clock (in a background thread), so a write
// right after another one is usually not yet synced: the first write of a second may be synced at once. Each
// attempt writes twice within a few ms and cuts the power at once; whether the second write survived must
// agree with what the power loss says it dropped. Returns the number of attempts (of at most 5) until one lost
// its write: 0 when none did.
int attempts_until_a_write_is_lost(Cluster& c) {
  const Endpoint ep = c.nodes()[0].endpoint;
  for (int attempt = 0; attempt < 5; ++attempt) {
    const std::string key = "k" + std::to_string(attempt);
    EXPECT_TRUE(cmd(ep, {"SET", "warm", "x"}).is_status("OK"));
    EXPECT_TRUE(cmd(ep, {"SET", key, "v"}).is_status("OK"));  // acknowledged
    const PowerLossReport r = c.power_loss(0);
    EXPECT_FALSE(c.is_running(0));
    c.restart(0);
    const bool gone = cmd(ep, {"GET", key}).is_nil();
    EXPECT_EQ(gone, r.bytes > 0) << "attempt " << attempt << ": dropped " << to_json(r).dump();
    EXPECT_GT(r.records, 0);  // the shim ran and its journal was replayed
    if (gone) {
      EXPECT_EQ(r.files.size(), 1u) << to_json(r).dump();
      if (!r.files.empty()) {
        EXPECT_NE(r.files[0].path.find("incr.aof"), std::string::npos) << r.files[0].path;
        EXPECT_FALSE(r.files[0].removed);
      }
      return attempt + 1;
    }
  }
  return 0;
}

TEST(PowerLoss, EverysecLosesAnAcknowledgedUnsyncedWrite) {
  TempDir dir("lockcheck-power");
  auto cp = testing_util::start_local_cluster(one_node("aof-everysec"), dir.str());
  ServerCluster& c = *cp;
  const pid_t first = c.pid(0);
  EXPECT_GT(attempts_until_a_write_is_lost(c), 0) << "no attempt of 5 lost its write: the power loss dropped nothing";
  const pid_t last = c.pid(0);
  c.stop();
  EXPECT_FALSE(alive(first));
  EXPECT_FALSE(alive(last));
}

// The same through the Remote seam (the docker and ssh backends' code) with this machine as its host: the shim
// uploaded with the run's folder, the journal named by one more `env`, the files stat'ed, truncated and the journal
// emptied by the host's shell scripts.
TEST(PowerLoss, EverysecLosesAnAcknowledgedUnsyncedWriteOnTheRemoteSeam) {
  LOCKCHECK_NEED(find_program("redis-server").has_value(), "redis-server not found on PATH");
  TempDir dir("lockcheck-power");
  fs::create_directories(dir.file("host"));
  {
    testing_util::RemoteLoopbackCluster c(one_node("aof-everysec"), dir.file("run"), dir.file("host"));
    c.start();
    EXPECT_TRUE(fs::exists(dir.file("host/lockcheck-" + c.run_id() + "/libpowershim.so")));
    EXPECT_GT(attempts_until_a_write_is_lost(c), 0) << "no attempt of 5 lost its write";
  }
  // stop() removed the host's folder.
  EXPECT_TRUE(fs::is_empty(dir.file("host")));
}

TEST(PowerLoss, AlwaysKeepsEveryAcknowledgedWrite) {
  TempDir dir("lockcheck-power");
  auto cp = testing_util::start_local_cluster(one_node("aof-always"), dir.str());
  ServerCluster& c = *cp;
  const Endpoint ep = c.nodes()[0].endpoint;
  for (int i = 0; i < 3; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_TRUE(cmd(ep, {"SET", key, "v"}).is_status("OK"));
    const PowerLossReport r = c.power_loss(0);
    EXPECT_EQ(r.bytes, 0) << to_json(r).dump();
    EXPECT_GT(r.records, 0);  // the shim ran and was replayed
    c.restart(0);
    for (int k = 0; k <= i; ++k) EXPECT_EQ(cmd(ep, {"GET", "k" + std::to_string(k)}).str(), std::string("v"));
  }
}

TEST(PowerLoss, NeedsTheShim) {
  TempDir dir("lockcheck-power");
  testing_util::LocalClusterSpec o = one_node("aof-always");
  o.power_shim = false;
  auto cp = testing_util::start_local_cluster(o, dir.str());
  ServerCluster& c = *cp;
  EXPECT_THROW(c.power_loss(0), ClusterError);
  EXPECT_TRUE(c.is_running(0));  // refused before anything was done
}

TEST(PowerLoss, BadOptionsExit2) {
  const std::vector<std::vector<std::string>> bad = {
      {"--nemesis", "power-loss:some"},
      {"--nemesis", "power-loss", "--restart-delay", "-1"},
      {"--nemesis", "power-loss", "--server", "etcd", "--lock", "etcd"},
  };
  for (const auto& args : bad) {
    std::vector<std::string> argv = {LOCKCHECK_BINARY, "run", "--time-limit", "1"};
    argv.insert(argv.end(), args.begin(), args.end());
    const CommandResult r = run_command(argv, std::chrono::milliseconds(20000));
    EXPECT_EQ(r.exit_code, kExitUsage) << describe_argv(argv) << "\n" << r.err << r.out;
  }
}

}  // namespace
}  // namespace lockcheck
