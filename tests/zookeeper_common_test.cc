// What the ZooKeeper backends share, without ZooKeeper (label unit): the tickTime rule (a session of --ttl-ms
// is within [minSessionTimeout, maxSessionTimeout]), a member's zoo.cfg (its own entry 0.0.0.0, its peers at the
// addresses given), reading `srvr`, what --server zookeeper refuses (exit 2), the Remote seam's port plan and the
// jars a member's JVM opens (manifests' Class-Path).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <set>

#include "cluster/zookeeper_common.h"
#include "core/config.h"
#include "harness/plan.h"
#include "sys/process.h"

namespace lockcheck {
namespace {

TEST(ZooKeeperTiming, ATtlIsASessionTimeoutTheEnsembleGrants) {
  for (const int64_t ttl : {200, 500, 1000, 1500, 2000, 4000, 10000, 40000}) {
    const auto t = zookeeper_timing(ttl);
    EXPECT_LE(t.min_session_ms, ttl) << ttl;
    EXPECT_GE(t.max_session_ms, ttl) << ttl;
    EXPECT_EQ(t.min_session_ms, 2 * t.tick_ms);
    EXPECT_EQ(t.max_session_ms, 20 * t.tick_ms);
    EXPECT_GE(t.init_limit_ticks * t.tick_ms, 10000);
    EXPECT_GE(t.sync_limit_ticks * t.tick_ms, 2500);
  }
  EXPECT_EQ(zookeeper_timing(1000).tick_ms, 500);
  EXPECT_EQ(zookeeper_timing(2000).tick_ms, 1000);
  EXPECT_EQ(zookeeper_timing(60000).tick_ms, 2000);  // ZooKeeper's default, at most
  EXPECT_EQ(zookeeper_timing(50).tick_ms, 100);      // at least
  EXPECT_EQ(describe(zookeeper_timing(1000)), "tickTime 500 ms, sessions 1000-10000 ms, initLimit 20 ticks, "
                                              "syncLimit 5 ticks");
}

TEST(ZooKeeperConfig, OwnEntryIsTheWildcardPeersAreTheirLinks) {
  ZooKeeperMemberConfig c;
  c.id = 2;
  c.data_dir = "/r/nodes/n2/data";
  c.client_listen = {"127.0.0.1", 4000};
  c.quorum = {{"127.0.0.1", 5001}, {"127.0.0.1", 5002}, {"127.0.0.1", 5003}};
  c.election = {{"127.0.0.1", 6001}, {"127.0.0.1", 6002}, {"127.0.0.1", 6003}};
  c.timing = zookeeper_timing(1000);
  const std::string cfg = zookeeper_zoo_cfg(c);
  for (const char* line : {"server.1=127.0.0.1:5001:6001\n", "server.2=0.0.0.0:5002:6002\n",
                           "server.3=127.0.0.1:5003:6003\n", "tickTime=500\n", "minSessionTimeout=1000\n",
                           "maxSessionTimeout=10000\n", "clientPort=4000\n", "clientPortAddress=127.0.0.1\n",
                           "admin.enableServer=false\n", "4lw.commands.whitelist=srvr,ruok,mntr,stat\n",
                           "dataDir=/r/nodes/n2/data\n"}) {
    EXPECT_NE(cfg.find(line), std::string::npos) << line << " in\n" << cfg;
  }
  const auto argv = zookeeper_member_argv("java", zookeeper_default_classpath(), "/r/nodes/n2/zoo.cfg");
  EXPECT_EQ(argv.front(), "java");
  EXPECT_EQ(argv.back(), "/r/nodes/n2/zoo.cfg");
  EXPECT_NE(std::find(argv.begin(), argv.end(), "-XX:-UsePerfData"), argv.end());
  EXPECT_NE(std::find(argv.begin(), argv.end(), "-Djava.net.preferIPv4Stack=true"), argv.end());
}

TEST(ZooKeeperSrvr, ParsesModeAndVersion) {
  const auto s = parse_zookeeper_srvr(
      "Zookeeper version: 3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC\nLatency min/avg/max: 0/0.0/0\n"
      "Received: 1\nSent: 0\nConnections: 1\nOutstanding: 0\nZxid: 0x100000000\nMode: follower\nNode count: 5\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->version, "3.8.0");
  EXPECT_EQ(s->mode, "follower");
  EXPECT_FALSE(parse_zookeeper_srvr("This ZooKeeper instance is not currently serving requests\n"));
}

std::string config_error(const RunConfig& c) {
  try {
    validate_fields(c);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ZooKeeperConfig, WhatZooKeeperRefuses) {
  EXPECT_EQ(server_from_string("zookeeper"), ServerKind::kZooKeeper);
  EXPECT_EQ(std::string(to_string(ServerKind::kZooKeeper)), "zookeeper");
  RunConfig c;
  c.server = ServerKind::kZooKeeper;
  nlohmann::json j;
  to_json(j, c);
  EXPECT_EQ(j["server"], "zookeeper");
  RunConfig back;
  from_json(j, back);
  EXPECT_EQ(back.server, ServerKind::kZooKeeper);
  EXPECT_EQ(config_error(c), "");
  // Every backend: the Docker and SSH ones through the Remote seam's ZooKeeper kind.
  c.cluster = "docker";
  EXPECT_EQ(config_error(c), "");
  c.cluster = "local";

  c.nemesis = {"clock"};
  EXPECT_NE(config_error(c).find("nanoTime"), std::string::npos) << config_error(c);
  c.nemesis = {"clock:drift"};
  EXPECT_NE(config_error(c).find("nanoTime"), std::string::npos) << config_error(c);
  c.nemesis = {"failover"};
  EXPECT_NE(config_error(c).find("Sentinel"), std::string::npos);
  c.nemesis = {"power-loss"};
  EXPECT_NE(config_error(c).find("--nemesis power-loss"), std::string::npos);
  c.nemesis = {"pause"};
  c.nemesis_targeting = "holder";
  EXPECT_NE(config_error(c).find("EXISTS"), std::string::npos);
  c.nemesis = {"client-pause"};
  EXPECT_EQ(config_error(c), "");  // a holder's own process: fine
  c.nemesis = {"pause", "kill", "partition", "leader-partition", "delay"};
  c.nemesis_targeting = "random";
  EXPECT_EQ(config_error(c), "");
  c.nemesis = {};
  c.topology = Topology::kReplicated;
  EXPECT_NE(config_error(c).find("--topology replicated"), std::string::npos);
  c.topology = Topology::kIndependent;
  c.persistence = Persistence::kAofAlways;
  EXPECT_NE(config_error(c).find("--persistence"), std::string::npos);
}

// On Docker and SSH a member's peer ports follow from its client port: ZooKeeper's defaults at 2181, one up for
// each further member on a host.
TEST(ZooKeeperRemote, PeerPortsFollowTheClientPort) {
  EXPECT_EQ(zookeeper_quorum_port(kZooKeeperClientPort), 2888);
  EXPECT_EQ(zookeeper_election_port(kZooKeeperClientPort), 3888);
  EXPECT_EQ(zookeeper_quorum_port(2182), 2889);
  EXPECT_EQ(zookeeper_election_port(2182), 3889);
}

// A manifest's Class-Path: continuation lines joined (72-byte lines split a path anywhere), absolute entries as
// they are, relative ones against the jar's folder; attributes after it and sections after the blank line are not
// read.
TEST(ZooKeeperClasspath, ManifestClassPathIsParsed) {
  const std::string manifest =
      "Manifest-Version: 1.0\r\n"
      "Class-Path: /usr/share/java/commons-cli.jar /usr/share/java/jackson-dat\r\n"
      " abind.jar lib/local.jar file:/opt/x.jar\r\n"
      "Created-By: Maven\r\n"
      "\r\n"
      "Name: other\r\n"
      "Class-Path: /not/this.jar\r\n";
  EXPECT_EQ(parse_manifest_class_path(manifest, "/usr/share/java"),
            (std::vector<std::string>{"/usr/share/java/commons-cli.jar", "/usr/share/java/jackson-databind.jar",
                                      "/usr/share/java/lib/local.jar", "/opt/x.jar"}));
  EXPECT_TRUE(parse_manifest_class_path("Manifest-Version: 1.0\n", "/x").empty());
}

// With Debian's zookeeper here: the jars a member opens (measured in /proc/PID/fd of a local member): the
// classpath's two, zookeeper.jar's Class-Path that exists (zookeeper-jute, netty, jackson ...), nothing missing
// (jline.jar is named but not installed). A classpath jar that is not here is a ClusterError naming it.
TEST(ZooKeeperClasspath, TheJarsAMemberOpens) {
  if (!find_program("python3") || ::access(kZooKeeperJar, R_OK) != 0 || ::access(kSlf4jSimpleJar, R_OK) != 0) {
    GTEST_SKIP() << "Debian's zookeeper or python3 is not installed";
  }
  const auto jars = zookeeper_classpath_jars(zookeeper_default_classpath());
  auto has = [&](const std::string& j) { return std::find(jars.begin(), jars.end(), j) != jars.end(); };
  ASSERT_GE(jars.size(), 3u);
  EXPECT_EQ(jars[0], kZooKeeperJar);
  EXPECT_TRUE(has(kSlf4jSimpleJar));
  EXPECT_TRUE(has("/usr/share/java/zookeeper-jute.jar"));
  EXPECT_TRUE(has("/usr/share/java/slf4j-api.jar"));
  for (const auto& j : jars) EXPECT_EQ(::access(j.c_str(), R_OK), 0) << j;
  EXPECT_EQ(std::set<std::string>(jars.begin(), jars.end()).size(), jars.size());
  try {
    zookeeper_classpath_jars(std::string(kZooKeeperJar) + ":/nonexistent/lockcheck.jar");
    ADD_FAILURE() << "a missing jar was accepted";
  } catch (const ClusterError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/lockcheck.jar"), std::string::npos) << e.what();
  }
}

// Every built-in lock speaks Redis: a ZooKeeper run with one is refused before anything starts.
TEST(ZooKeeperConfig, RedisLocksAreRefused) {
  RunConfig c;
  c.server = ServerKind::kZooKeeper;
  c.lock = "single";
  try {
    resolve_plan(c);
    FAIL() << "resolve_plan accepted --lock single with --server zookeeper";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("needs --server redis"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lockcheck
