// The zookeeper server kind (servers/zookeeper.cc) without an ensemble (label unit): the tickTime rule (a session
// of --ttl-ms is within [minSessionTimeout, maxSessionTimeout]), a member's zoo.cfg and command line (its own
// entry 0.0.0.0, its peers at the addresses the cluster gives), reading `srvr`, a manifest's Class-Path, and the
// jars a docker image of it gets.
#include "servers/zookeeper.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <set>

#include "servers/registry.h"
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

std::unique_ptr<Server> zookeeper_server(int64_t ttl_ms) {
  const ServerSpec& spec = server_spec("zookeeper");
  ServerSetup s;
  s.options = resolve_server_options(spec, nlohmann::json::object());
  s.ttl_ms = ttl_ms;
  s.nodes = 3;
  return spec.make(s);
}

TEST(ZooKeeperConfig, OwnEntryIsTheWildcardPeersAreTheirLinks) {
  const auto server = zookeeper_server(1000);
  MemberContext m;
  for (int k = 1; k <= 3; ++k) {
    MemberAddress a;
    a.name = "n" + std::to_string(k);
    a.advertised = {{"client", {"127.0.0.1", 4000 + k}},
                    {"quorum", {"127.0.0.1", 5000 + k}},
                    {"election", {"127.0.0.1", 6000 + k}}};
    m.members.push_back(a);
  }
  m.self = m.members[1];
  m.listen = {{"client", {"127.0.0.1", 4002}}, {"quorum", {"127.0.0.1", 7002}}, {"election", {"127.0.0.1", 8002}}};
  m.dir = "/r/nodes/n2";
  const auto files = server->files(m);
  ASSERT_EQ(files.size(), 2u);
  const std::string cfg = files[0].second;
  EXPECT_EQ(files[0].first, "zoo.cfg");
  EXPECT_EQ(files[1], (std::pair<std::string, std::string>{"data/myid", "2\n"}));
  for (const char* line : {"server.1=127.0.0.1:5001:6001\n", "server.2=0.0.0.0:7002:8002\n",
                           "server.3=127.0.0.1:5003:6003\n", "tickTime=500\n", "minSessionTimeout=1000\n",
                           "maxSessionTimeout=10000\n", "clientPort=4002\n", "clientPortAddress=127.0.0.1\n",
                           "admin.enableServer=false\n", "4lw.commands.whitelist=srvr,ruok,mntr,stat\n",
                           "dataDir=/r/nodes/n2/data\n"}) {
    EXPECT_NE(cfg.find(line), std::string::npos) << line << " in\n" << cfg;
  }
  const Launch l = server->launch(m);
  EXPECT_EQ(l.argv.front(), "java");
  EXPECT_EQ(l.argv.back(), "/r/nodes/n2/zoo.cfg");
  EXPECT_NE(std::find(l.argv.begin(), l.argv.end(), "-XX:-UsePerfData"), l.argv.end());
  EXPECT_NE(std::find(l.argv.begin(), l.argv.end(), "-Djava.net.preferIPv4Stack=true"), l.argv.end());
  // On hosts of their own, a member listens on ZooKeeper's usual ports.
  const auto ports = server->ports(NodeRole::kMaster);
  ASSERT_EQ(ports.size(), 3u);
  EXPECT_EQ(ports[0].default_port, 2181);
  EXPECT_EQ(ports[1].default_port, 2888);
  EXPECT_EQ(ports[2].default_port, 3888);
  EXPECT_FALSE(ports[0].peer);
  EXPECT_TRUE(ports[1].peer && ports[2].peer);
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

// With Debian's zookeeper here: the jars a docker image gets are those a member opens (measured in /proc/PID/fd of a
// local member): the classpath's two, zookeeper.jar's Class-Path that exists (zookeeper-jute, netty, jackson ...),
// nothing missing (jline.jar is named but not installed), and a Java runtime.
TEST(ZooKeeperClasspath, TheJarsAMemberOpensGoIntoItsImage) {
  const char* jar = "/usr/share/java/zookeeper.jar";
  const char* simple = "/usr/share/java/slf4j-simple.jar";
  if (!find_program("python3") || ::access(jar, R_OK) != 0 || ::access(simple, R_OK) != 0) {
    GTEST_SKIP() << "Debian's zookeeper or python3 is not installed";
  }
  const ImageNeeds needs = zookeeper_server(1000)->image();
  EXPECT_EQ(needs.repository, "lockcheck-zookeeper");
  EXPECT_EQ(needs.java, "java");
  const auto& jars = needs.files;
  auto has = [&](const std::string& j) { return std::find(jars.begin(), jars.end(), j) != jars.end(); };
  ASSERT_GE(jars.size(), 3u);
  EXPECT_EQ(jars[0], jar);
  EXPECT_TRUE(has(simple));
  EXPECT_TRUE(has("/usr/share/java/zookeeper-jute.jar"));
  EXPECT_TRUE(has("/usr/share/java/slf4j-api.jar"));
  for (const auto& j : jars) EXPECT_EQ(::access(j.c_str(), R_OK), 0) << j;
  EXPECT_EQ(std::set<std::string>(jars.begin(), jars.end()).size(), jars.size());
}

}  // namespace
}  // namespace lockcheck
