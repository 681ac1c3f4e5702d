// The ssh backend without SSH: hosts-file parsing and its errors, shell quoting, the ssh/scp command lines.
#include "cluster/ssh_hosts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "cluster/ssh_cluster.h"
#include "core/config.h"
#include "harness/cluster_factory.h"
#include "harness/plan.h"
#include "sys/process.h"
#include "tests/support/test_util.h"

namespace lockcheck {
namespace {

using nlohmann::json;

json one_host() {
  return json::parse(R"({"known_hosts": "/kh", "hosts": [
    {"name": "h1", "address": "10.0.0.1", "port": 2222, "user": "bob", "key": "/k/id", "work_dir": "/var/tmp/lc",
     "sudo": true, "servers": {"redis": {"programs": {"redis-server": "/opt/redis-server"}, "ports": {"client": 7000}},
                               "etcd": {"programs": {"etcd": "/opt/etcd"}, "ports": {"client": 12379, "peer": 12380}}}}]})");
}

SshHosts parse(const json& j, const std::string& path = "hosts.json") { return parse_ssh_hosts(j, path, ssh_hosts_schema()); }

// An ssh cluster as a run makes it (nothing started: no SSH here).
std::unique_ptr<ServerCluster> ssh_cluster(const RunConfig& c, const std::string& run_dir) {
  return make_cluster(resolve_server_plan(c), run_dir);
}

std::string error_of(const json& j) {
  try {
    parse(j);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(SshHostsTest, ParsesEveryField) {
  SshHosts h = parse(one_host());
  ASSERT_EQ(h.hosts.size(), 1u);
  EXPECT_EQ(h.known_hosts, "/kh");
  const SshHost& a = h.hosts[0];
  EXPECT_EQ(a.name, "h1");
  EXPECT_EQ(a.address, "10.0.0.1");
  EXPECT_EQ(a.port, 2222);
  EXPECT_EQ(a.user, "bob");
  EXPECT_EQ(a.key, "/k/id");
  EXPECT_EQ(a.work_dir, "/var/tmp/lc");
  EXPECT_EQ(a.servers.at("redis").programs.at("redis-server"), "/opt/redis-server");
  EXPECT_EQ(a.servers.at("redis").ports.at("client"), 7000);
  EXPECT_EQ(a.servers.at("etcd").programs.at("etcd"), "/opt/etcd");
  EXPECT_EQ(a.servers.at("etcd").ports.at("peer"), 12380);
  EXPECT_TRUE(a.sudo);
  EXPECT_TRUE(h.notes.empty());
}

// The per-host fields of older hosts files keep working, each read by the kind that names it, with a note saying
// what to write instead.
TEST(SshHostsTest, OlderFieldsStillReadWithANote) {
  const SshHosts h = parse(json::parse(R"({"hosts": [{"address": "a", "key": "/k", "work_dir": "/w",
    "redis_server": "/opt/redis-server", "redis_sentinel": "/opt/redis-sentinel", "base_port": 7000,
    "etcd": "/opt/etcd", "etcd_base_port": 12379, "java": "/opt/java", "zookeeper_base_port": 12181}]})"));
  const auto& s = h.hosts[0].servers;
  EXPECT_EQ(s.at("redis").programs.at("redis-server"), "/opt/redis-server");
  EXPECT_EQ(s.at("redis").programs.at("redis-sentinel"), "/opt/redis-sentinel");
  EXPECT_EQ(s.at("redis").ports.at("client"), 7000);
  EXPECT_EQ(s.at("etcd").programs.at("etcd"), "/opt/etcd");
  EXPECT_EQ(s.at("etcd").ports.at("client"), 12379);
  EXPECT_EQ(s.at("etcd").ports.at("peer"), 12380);
  EXPECT_EQ(s.at("zookeeper").programs.at("java"), "/opt/java");
  EXPECT_EQ(s.at("zookeeper").ports.at("client"), 12181);
  EXPECT_EQ(s.at("zookeeper").ports.at("quorum"), 12888);
  EXPECT_EQ(s.at("zookeeper").ports.at("election"), 13888);
  EXPECT_EQ(h.notes.size(), 7u);  // one per older field
  EXPECT_NE(h.notes[0].find("an older field; write \"servers\""), std::string::npos) << h.notes[0];
}

TEST(SshHostsTest, DefaultsForOptionalFields) {
  SshHosts h = parse(json::parse(R"({"hosts": [{"address": "a", "key": "/k", "work_dir": "/w"},
                                                {"address": "b", "key": "/k", "work_dir": "/w"}]})"),
                     "f");
  ASSERT_EQ(h.hosts.size(), 2u);
  EXPECT_EQ(h.hosts[1].name, "h2");
  EXPECT_EQ(h.hosts[0].port, 22);
  EXPECT_TRUE(h.hosts[0].servers.empty());  // every kind's programs on its PATH, its usual ports
  EXPECT_FALSE(h.hosts[0].user.empty());
  EXPECT_FALSE(h.hosts[0].sudo);
  EXPECT_TRUE(h.known_hosts.empty());
}

TEST(SshHostsTest, ErrorsNameTheField) {
  EXPECT_NE(error_of(json::array()).find("must be a JSON object"), std::string::npos);
  EXPECT_NE(error_of(json::parse(R"({"hosts": []})")).find("hosts: must be a non-empty array"), std::string::npos);
  EXPECT_NE(error_of(json::parse(R"({"hosts": [1]})")).find("hosts[0]: must be an object"), std::string::npos);
  EXPECT_NE(error_of(json::parse(R"({"hostz": []})")).find("unknown field \"hostz\""), std::string::npos);
  struct Case {
    const char* field;
    json value;
    const char* message;
  };
  const Case cases[] = {
      {"address", nullptr, "hosts[0].address: required"},
      {"address", 5, "hosts[0].address: must be a non-empty string"},
      {"address", "-oProxyCommand=x", "hosts[0].address: must not start with '-'"},
      {"key", nullptr, "hosts[0].key: required"},
      {"work_dir", nullptr, "hosts[0].work_dir: required"},
      {"work_dir", "relative/dir", "hosts[0].work_dir: must be an absolute path"},
      {"work_dir", "/", "hosts[0].work_dir: must not be /"},
      {"port", 0, "hosts[0].port: must be an integer from 1 to 65535"},
      {"port", "22", "hosts[0].port: must be an integer"},
      {"base_port", 70000, "hosts[0].base_port: must be an integer"},
      {"etcd_base_port", 0, "hosts[0].etcd_base_port: must be an integer"},
      {"etcd", "", "hosts[0].etcd: must be a non-empty string"},
      {"servers", json{{"consul", json::object()}}, "hosts[0].servers.consul: not a server kind"},
      {"servers", json{{"redis", json{{"ports", json{{"client", 0}}}}}},
       "hosts[0].servers.redis.ports.client: must be an integer from 1 to 65000"},
      {"servers", json{{"redis", json{{"programs", json{{"redis-server", ""}}}}}},
       "hosts[0].servers.redis.programs.redis-server: must be a non-empty string"},
      {"servers", json{{"redis", json{{"binaries", json::object()}}}}, "unknown field \"binaries\" (programs, ports)"},
      {"user", "-x", "hosts[0].user: must be a user name"},
      {"name", "a b", "hosts[0].name: must be a non-empty string without blanks"},
      {"name", "a/b", "hosts[0].name: 'a/b' may hold only"},
      {"sudo", "yes", "hosts[0].sudo: must be true or false"},
      {"colour", "red", "hosts[0]: unknown field \"colour\""},
  };
  for (const auto& c : cases) {
    json j = one_host();
    if (c.value.is_null()) {
      j["hosts"][0].erase(c.field);
    } else {
      j["hosts"][0][c.field] = c.value;
    }
    const std::string err = error_of(j);
    EXPECT_NE(err.find(c.message), std::string::npos) << c.field << ": " << err;
    EXPECT_NE(err.find("--hosts hosts.json"), std::string::npos) << err;
  }
  json twice = one_host();
  twice["hosts"].push_back(twice["hosts"][0]);
  EXPECT_NE(error_of(twice).find("hosts[1].name: 'h1' given twice"), std::string::npos);
  json kh = one_host();
  kh["known_hosts"] = "";
  EXPECT_NE(error_of(kh).find("known_hosts: must be"), std::string::npos);
}

TEST(SshHostsTest, LoadReportsMissingAndBrokenFiles) {
  TempDir dir;
  EXPECT_THROW(load_ssh_hosts(dir.str() + "/none.json", ssh_hosts_schema()), ConfigError);
  EXPECT_THROW(load_ssh_hosts("", ssh_hosts_schema()), ConfigError);
  std::ofstream(dir.str() + "/bad.json") << "{not json";
  try {
    load_ssh_hosts(dir.str() + "/bad.json", ssh_hosts_schema());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
  }
}

TEST(SshHostsTest, RunConfigValidatesTheHostsFile) {
  RunConfig c;
  c.cluster = "ssh";
  EXPECT_THROW(validate(c), ConfigError);  // no --hosts
  c.cluster = "local";
  c.hosts = "/some/file";
  EXPECT_THROW(validate(c), ConfigError);  // --hosts without ssh
  nlohmann::json j;
  to_json(j, c);
  RunConfig back;
  from_json(j, back);
  EXPECT_EQ(back.hosts, "/some/file");
}

TEST(SshHostsTest, ShellQuoting) {
  EXPECT_EQ(shell_quote("plain/path-1.conf"), "plain/path-1.conf");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$(rm -rf /);`x`|&>"), "'$(rm -rf /);`x`|&>'");
  EXPECT_EQ(remote_command({"kill", "-s", "KILL", "42"}), "kill -s KILL 42");
  EXPECT_EQ(remote_command({"env", "A=/x y/z", "prog"}), "env 'A=/x y/z' prog");
}

TEST(SshHostsTest, ShellQuotingRoundTripsThroughAShell) {
  // What /bin/sh makes of the quoted command is the argv we meant.
  const std::vector<std::string> argv = {"printf", "%s\\n", "a b", "it's", "$HOME", "`id`", "x;y", "", "*"};
  auto r = run_command({"sh", "-c", remote_command(argv)}, std::chrono::seconds(10));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "a b\nit's\n$HOME\n`id`\nx;y\n\n*\n");
}

TEST(SshHostsTest, SshCommandLines) {
  SshHosts h = parse(one_host(), "f");
  SshCommands c(h.hosts[0], h.known_hosts, "/tmp/lcssh-x/0", std::chrono::seconds(7));
  EXPECT_EQ(c.destination(), "bob@10.0.0.1");
  auto run = c.run({"rm", "-rf", "--", "/var/tmp/lc/a b"});
  EXPECT_EQ(run.front(), "ssh");
  EXPECT_EQ(run.back(), "rm -rf -- '/var/tmp/lc/a b'");  // one quoted string for the remote shell
  EXPECT_EQ(run[run.size() - 2], "--");
  EXPECT_EQ(run[run.size() - 3], "bob@10.0.0.1");
  for (const char* o : {"BatchMode=yes", "ConnectTimeout=7", "ControlPath=/tmp/lcssh-x/0", "ControlMaster=auto",
                        "IdentitiesOnly=yes", "StrictHostKeyChecking=yes", "UserKnownHostsFile=/kh"}) {
    EXPECT_TRUE(contains(run, o)) << o;
  }
  EXPECT_TRUE(contains(run, "/k/id"));
  EXPECT_TRUE(contains(run, "2222"));
  // Privileged commands get sudo -n when the host says so.
  EXPECT_EQ(c.run({"iptables", "-S"}, true).back(), "sudo -n -- iptables -S");
  EXPECT_EQ(c.run({"iptables", "-S"}, false).back(), "iptables -S");

  auto m = c.master();
  EXPECT_TRUE(contains(m, "-N"));
  EXPECT_TRUE(contains(m, "ControlMaster=yes"));
  auto x = c.master_exit();
  EXPECT_EQ(x[x.size() - 3], "-O");
  EXPECT_EQ(x[x.size() - 2], "exit");

  auto up = c.upload("/local/f", "/remote/f");
  EXPECT_EQ(up.front(), "scp");
  EXPECT_TRUE(contains(up, "-P"));  // scp's port flag
  EXPECT_FALSE(contains(up, "-p"));
  EXPECT_EQ(up.back(), "bob@10.0.0.1:/remote/f");
  EXPECT_EQ(up[up.size() - 2], "/local/f");
  auto down = c.download("/remote/log", "/local/log");
  EXPECT_EQ(down[down.size() - 2], "bob@10.0.0.1:/remote/log");

  // No known_hosts file: new host keys are accepted once, never asked about.
  SshCommands open(h.hosts[0], "", "/tmp/s", std::chrono::seconds(3));
  EXPECT_TRUE(contains(open.run({"true"}), "StrictHostKeyChecking=accept-new"));
}

TEST(SshHostsTest, NodesAndSentinelsArePlacedRoundRobin) {
  TempDir dir;
  const std::string file = dir.str() + "/hosts.json";
  std::ofstream(file) << R"({"hosts": [{"address": "10.0.0.1", "key": "/k", "work_dir": "/w",
                                        "servers": {"redis": {"ports": {"client": 7000}}}},
                                       {"address": "10.0.0.2", "key": "/k", "work_dir": "/w"},
                                       {"address": "10.0.0.3", "key": "/k", "work_dir": "/w"}]})";
  RunConfig c;
  c.cluster = "ssh";
  c.hosts = file;
  c.nodes = 5;
  c.nodes_given = true;
  auto five_cluster = ssh_cluster(c, dir.str() + "/run");
  SshCluster& five = dynamic_cast<SshCluster&>(*five_cluster);
  ASSERT_EQ(five.nodes().size(), 5u);
  EXPECT_EQ(five.nodes()[0].endpoint, (Endpoint{"10.0.0.1", 7000}));
  EXPECT_EQ(five.nodes()[2].endpoint, (Endpoint{"10.0.0.3", 6379}));
  EXPECT_EQ(five.nodes()[3].endpoint, (Endpoint{"10.0.0.1", 7001}));  // second round: next port
  EXPECT_EQ(five.host_of(4).address, "10.0.0.2");
  EXPECT_TRUE(five.sentinels().empty());
  EXPECT_EQ(five.chain(), "LC-" + five.run_id());
  EXPECT_LE(five.chain().size(), 28u);  // iptables' limit on chain names

  c.server_opts["topology"] = "replicated";
  c.nodes = 2;
  auto replicated_cluster = ssh_cluster(c, dir.str() + "/run2");
  ServerCluster& replicated = *replicated_cluster;
  ASSERT_EQ(replicated.sentinels().size(), 3u);
  EXPECT_EQ(replicated.nodes()[1].role, NodeRole::kReplica);
  EXPECT_EQ(replicated.sentinels()[0].endpoint, (Endpoint{"10.0.0.3", 26379}));  // after the nodes
  EXPECT_EQ(replicated.sentinels()[1].endpoint, (Endpoint{"10.0.0.1", 26380}));
  EXPECT_EQ(replicated.sentinels()[2].endpoint, (Endpoint{"10.0.0.2", 26380}));
  // Not started: faults say so instead of reaching for a host.
  EXPECT_THROW(replicated.kill(0), ClusterError);
  EXPECT_THROW(replicated.cut("n1", "n2"), ClusterError);
}

// ZooKeeper members: round-robin as Redis nodes, client ports from zookeeper_base_port (the quorum and election
// ports follow from them); java and the base port are read from the file.
TEST(SshHostsTest, ZooKeeperMembersArePlacedRoundRobin) {
  TempDir dir;
  const std::string file = dir.str() + "/hosts.json";
  std::ofstream(file) << R"({"hosts": [{"address": "10.0.0.1", "key": "/k", "work_dir": "/w", "java": "/opt/jre/java",
                                        "zookeeper_base_port": 12181},
                                       {"address": "10.0.0.2", "key": "/k", "work_dir": "/w"}]})";
  const SshHosts parsed = load_ssh_hosts(file, ssh_hosts_schema());
  EXPECT_EQ(parsed.hosts[0].servers.at("zookeeper").programs.at("java"), "/opt/jre/java");
  EXPECT_EQ(parsed.hosts[0].servers.at("zookeeper").ports.at("client"), 12181);
  RunConfig c;
  c.cluster = "ssh";
  c.hosts = file;
  c.server = "zookeeper";
  c.nodes = 3;
  c.nodes_given = true;
  EXPECT_NO_THROW(validate_fields(c));
  auto three = ssh_cluster(c, dir.str() + "/run");
  ASSERT_EQ(three->nodes().size(), 3u);
  EXPECT_EQ(three->nodes()[0].endpoint, (Endpoint{"10.0.0.1", 12181}));
  EXPECT_EQ(three->nodes()[1].endpoint, (Endpoint{"10.0.0.2", 2181}));
  EXPECT_EQ(three->nodes()[2].endpoint, (Endpoint{"10.0.0.1", 12182}));
  EXPECT_EQ(three->describe(), "zookeeper on the ssh cluster");
  EXPECT_NE(error_of(json::parse(R"({"hosts": [{"address": "a", "key": "/k", "work_dir": "/w",
                                                "zookeeper_base_port": 64000}]})"))
                .find("hosts[0].zookeeper_base_port: must be an integer from 1 to 63000"),
            std::string::npos);
}

}  // namespace
}  // namespace lockcheck
