// The docker backend against the real engine, beyond the contract every server kind keeps on it
// (tests/server_contract_test.cc): each kind's image, a missing image or engine, what Redis does in containers
// (persistence across a restart, the clock shim expiring keys, a cut between containers holding replication, the
// replicated and cluster topologies and their split brains), `lockcheck clean`, and etcd 3.4.3 shipped in an
// image. After each test nothing labelled with its run id is left. Skipped when no Docker engine answers, except
// under CI=true, where that fails.
#include "docker/docker_cluster.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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

#include "cluster/clock_shim.h"
#include "cluster/power_loss.h"
#include "docker/docker_cli.h"
#include "docker/node_image.h"
#include "harness/cluster_factory.h"
#include "harness/plan.h"
#include "servers/registry.h"
#include "sys/redis_conn.h"
#include "tests/support/ci.h"
#include "tests/support/etcd_test_cluster.h"
#include "tests/support/local_cluster.h"
#include "tests/support/zookeeper_test_cluster.h"

namespace lockcheck {
namespace {

namespace fs = boost::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

// One command on a fresh connection, with connect and reply timeouts.
struct Reply {
  std::string error;  // non-empty: no reply (connect failure, timeout, closed)
  int type = 0;
  std::string str;
  long long integer = 0;
  std::vector<std::string> elements;
  bool ok() const { return error.empty(); }
  bool is_nil() const { return ok() && type == REDIS_REPLY_NIL; }
};

Reply command(const Endpoint& ep, const std::vector<std::string>& argv, milliseconds timeout = milliseconds(1000)) {
  Reply out;
  timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  redisContext* c = redisConnectWithTimeout(ep.host.c_str(), ep.port, tv);
  if (c == nullptr || c->err) {
    out.error = c ? c->errstr : "oom";
    if (c) redisFree(c);
    return out;
  }
  redisSetTimeout(c, tv);
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (const auto& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(args.size()), args.data(), lens.data()));
  if (r == nullptr) {
    out.error = c->err ? c->errstr : "no reply";
  } else {
    out.type = r->type;
    if (r->str) out.str.assign(r->str, r->len);
    out.integer = r->integer;
    for (size_t i = 0; i < r->elements; ++i) {
      if (r->element[i]->str) out.elements.emplace_back(r->element[i]->str, r->element[i]->len);
    }
    freeReplyObject(r);
  }
  redisFree(c);
  return out;
}

bool pings(const Endpoint& ep, milliseconds timeout = milliseconds(1000)) {
  Reply r = command(ep, {"PING"}, timeout);
  return r.ok() && r.str == "PONG";
}

// Polls pred every 50 ms until it holds or limit passes.
template <typename Pred>
bool eventually(Pred pred, milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return pred();
}

// Seconds of the node's TIME reply.
long long node_time_s(const Endpoint& ep) {
  Reply r = command(ep, {"TIME"});
  if (!r.ok() || r.elements.size() != 2) return -1;
  return std::atoll(r.elements[0].c_str());
}

bool engine_available() {
  static const bool available = docker_engine_available();
  return available;
}

// Everything labelled with run_id that the engine still has, one line per object.
std::string leftovers(const std::string& run_id) {
  docker::DockerCli cli;
  const std::string filter = std::string("label=") + kDockerRunLabel + "=" + run_id;
  std::string all;
  for (auto args : std::vector<std::vector<std::string>>{{"ps", "--all", "--quiet", "--filter", filter},
                                                         {"network", "ls", "--quiet", "--filter", filter},
                                                         {"volume", "ls", "--quiet", "--filter", filter}}) {
    all += cli.check(args, seconds(30));
  }
  return all;
}

class DockerClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LOCKCHECK_NEED(engine_available(), "no Docker engine answered (`docker version`)");
    // A comma, a quote and a space: the folder's path goes into `--mount` values, which docker parses as CSV.
    run_dir_ = (fs::temp_directory_path() / fs::unique_path("lockcheck-docker-test, \"odd\" %%%%%%")).string();
  }
  void TearDown() override {
    if (cluster_) {
      cluster_->stop();
      EXPECT_EQ(leftovers(cluster_->run_id()), "") << "objects of run " << cluster_->run_id() << " remain";
      cluster_.reset();
    }
    if (!run_dir_.empty()) {
      boost::system::error_code ec;
      fs::remove_all(run_dir_, ec);
    }
  }

  // A cluster of the server kind (its options as given) on Docker, as a run makes it; started.
  DockerCluster& start(int nodes, const nlohmann::json& options = nlohmann::json::object(), int concurrency = 2,
                       const std::string& server = "redis", const std::string& version = "") {
    cluster_ = make(docker_config(nodes, options, concurrency, server, version), run_dir_);
    cluster_->start();
    return *cluster_;
  }

 public:
  static RunConfig docker_config(int nodes, const nlohmann::json& options = nlohmann::json::object(),
                                 int concurrency = 2, const std::string& server = "redis",
                                 const std::string& version = "") {
    RunConfig config;
    config.cluster = "docker";
    config.server = server;
    config.server_opts = options;
    config.server_version = version;
    config.nodes = nodes;
    config.nodes_given = true;
    config.concurrency = concurrency;
    config.seed = 7;
    return config;
  }
  static std::unique_ptr<DockerCluster> make(const RunConfig& config, const std::string& run_dir,
                                             DockerClusterOptions options = {}) {
    const Plan plan = resolve_server_plan(config);
    ClusterSetup setup;
    setup.run_dir = run_dir;
    setup.concurrency = config.concurrency;
    setup.seed = config.seed;
    setup.power_shim = plan.abilities.has(Ability::kPowerLoss);
    return std::make_unique<DockerCluster>(plan_server_run(plan), setup, options);
  }

 protected:

  std::string run_dir_;
  std::unique_ptr<DockerCluster> cluster_;
};

// --- runs with or without an engine ------------------------------------------------------------------------

TEST(DockerEngineTest, NoEngineIsAClearClusterError) {
  const char* old = std::getenv("DOCKER_HOST");
  std::string saved = old ? old : "";
  ::setenv("DOCKER_HOST", "unix:///nonexistent/lockcheck-test/docker.sock", 1);
  EXPECT_FALSE(docker_engine_available());
  const std::string dir = (fs::temp_directory_path() / fs::unique_path("lockcheck-docker-test-%%%%%%")).string();
  {
    auto made = DockerClusterTest::make(DockerClusterTest::docker_config(1), dir);
    DockerCluster& cluster = *made;
    try {
      cluster.start();
      ADD_FAILURE() << "start() succeeded without an engine";
    } catch (const ClusterError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("no Docker engine answered"), std::string::npos) << m;
      EXPECT_NE(m.find("docker"), std::string::npos) << m;
      EXPECT_NE(m.find("version"), std::string::npos) << m;  // names what was tried
    }
  }
  if (old) {
    ::setenv("DOCKER_HOST", saved.c_str(), 1);
  } else {
    ::unsetenv("DOCKER_HOST");
  }
  boost::system::error_code ec;
  fs::remove_all(dir, ec);
}

// --- the image --------------------------------------------------------------------------------------------

// What a server kind's image needs (its spec's Server::image), with its default options and build.
ImageNeeds needs_of(const std::string& kind) {
  const ServerSpec& spec = server_spec(kind);
  ServerSetup s;
  s.options = resolve_server_options(spec, nlohmann::json::object());
  const auto builds = spec.builds(s.options);
  if (!builds.empty()) s.build = builds.front();
  return spec.make(s)->image();
}

// `iptables -S` in node n's container.
std::string iptables_rules(const ServerCluster& c, size_t n) {
  return remote_check(c.host_remote(n), {"iptables", "-S"}, RemoteCall{true, "", std::chrono::seconds(30)}, "iptables");
}

bool has_entry(const docker::ImagePlan& p, const std::string& needle) {
  for (const auto& e : p.entries) {
    if (e.dest.find(needle) != std::string::npos) return true;
  }
  return false;
}

TEST_F(DockerClusterTest, ImageIsTaggedByItsInputsAndReused) {
  docker::NodeImageInputs inputs;
  inputs.clock_shim = clock_shim_library();
  inputs.server = needs_of("redis");
  docker::ImagePlan a = docker::plan_node_image(inputs);
  docker::ImagePlan b = docker::plan_node_image(inputs);
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_EQ(a.tag, "lockcheck-redis:" + a.hash.substr(0, 12));
  bool has_loader = false, has_server = false;
  for (const auto& e : a.entries) {
    has_loader |= e.dest.find("ld-linux") != std::string::npos;
    has_server |= e.dest == "/usr/bin/redis-server";
  }
  EXPECT_TRUE(has_loader);
  EXPECT_TRUE(has_server);

  docker::DockerCli cli;
  docker::ensure_node_image(cli, inputs);  // built or already there
  docker::NodeImage again = docker::ensure_node_image(cli, inputs);
  EXPECT_FALSE(again.built);  // cached: same inputs, same tag
  EXPECT_EQ(again.tag, a.tag);
}



TEST_F(DockerClusterTest, AGivenImageMustExistLocally) {
  DockerClusterOptions options;
  options.image = "lockcheck-test-no-such-image:0";
  auto made = make(docker_config(1), run_dir_, options);
  DockerCluster& c = *made;
  try {
    c.start();
    ADD_FAILURE() << "start() succeeded with a missing image";
  } catch (const ClusterError& e) {
    EXPECT_NE(std::string(e.what()).find("no image lockcheck-test-no-such-image:0"), std::string::npos) << e.what();
  }
  EXPECT_EQ(leftovers(c.run_id()), "");
}

// Each kind's image holds its own programs and no other's: Redis' has redis-server (Sentinel a symlink to it), etcd's
// etcd, ZooKeeper's a Java runtime (java a symlink into the JRE copied at its host path, libjvm, the runtime's
// modules, the zlib ldd names for java) and the jars a member opens. A program or java that is not here is an error
// naming it. (Planning only: no engine needed.)
TEST(DockerImageTest, EachKindsImageHoldsItsOwnPrograms) {
  docker::NodeImageInputs inputs;
  inputs.clock_shim = clock_shim_library();
  inputs.server = needs_of("redis");
  const docker::ImagePlan redis = docker::plan_node_image(inputs);
  EXPECT_EQ(redis.tag.rfind("lockcheck-redis:", 0), 0u);
  EXPECT_TRUE(has_entry(redis, "/usr/bin/redis-server"));
  EXPECT_TRUE(has_entry(redis, "/usr/bin/redis-sentinel"));
  EXPECT_FALSE(has_entry(redis, "/usr/bin/etcd"));
  EXPECT_FALSE(has_entry(redis, docker::kImageJava));
  EXPECT_FALSE(has_entry(redis, "libjvm.so"));
  if (testing_util::etcd_installed()) {
    inputs.server = needs_of("etcd");
    const docker::ImagePlan etcd = docker::plan_node_image(inputs);
    EXPECT_EQ(etcd.tag.rfind("lockcheck-etcd:", 0), 0u);
    EXPECT_TRUE(has_entry(etcd, "/usr/bin/etcd"));
    EXPECT_FALSE(has_entry(etcd, "/usr/bin/redis-server"));
  }
  if (testing_util::zookeeper_installed()) {
    inputs.server = needs_of("zookeeper");
    const docker::ImagePlan zk = docker::plan_node_image(inputs);
    EXPECT_EQ(zk.tag.rfind("lockcheck-zookeeper:", 0), 0u);
    EXPECT_GT(zk.total_bytes, redis.total_bytes);
    bool java_link = false;
    for (const auto& e : zk.entries) {
      if (e.dest == docker::kImageJava) {
        java_link = e.kind == docker::ImageEntry::Kind::kSymlink && e.source.find("/bin/java") != std::string::npos;
      }
      EXPECT_EQ(e.dest.find(".."), std::string::npos) << e.dest;
    }
    EXPECT_TRUE(java_link);
    EXPECT_TRUE(has_entry(zk, "/lib/server/libjvm.so"));
    EXPECT_TRUE(has_entry(zk, "/lib/modules"));
    EXPECT_TRUE(has_entry(zk, "libz.so"));
    EXPECT_TRUE(has_entry(zk, "/usr/share/java/zookeeper.jar"));
    EXPECT_TRUE(has_entry(zk, "/usr/share/java/slf4j-simple.jar"));
    EXPECT_TRUE(has_entry(zk, "/usr/share/java/zookeeper-jute.jar"));
    EXPECT_FALSE(has_entry(zk, "/usr/bin/redis-server"));
    EXPECT_FALSE(has_entry(zk, "/jmods/"));  // a JDK's, not a JRE's
    EXPECT_FALSE(has_entry(zk, "src.zip"));
  }
  inputs.server = needs_of("redis");
  inputs.server.programs[0].host_program = "/nonexistent/lockcheck-test/redis-server";
  try {
    docker::plan_node_image(inputs);
    ADD_FAILURE() << "an image was planned without its program";
  } catch (const ClusterError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/lockcheck-test/redis-server"), std::string::npos) << e.what();
  }
  inputs.server.programs.clear();
  inputs.server.java = "/nonexistent/lockcheck-test/java";
  try {
    docker::plan_node_image(inputs);
    ADD_FAILURE() << "an image was planned without java";
  } catch (const ClusterError& e) {
    EXPECT_NE(std::string(e.what()).find("default-jdk-headless"), std::string::npos) << e.what();
  }
}

// --- the cluster ------------------------------------------------------------------------------------------


TEST_F(DockerClusterTest, KillAndRestartWithoutPersistenceLosesData) {
  DockerCluster& c = start(1);
  const Endpoint ep = c.nodes()[0].endpoint;
  ASSERT_EQ(command(ep, {"SET", "k", "v"}).str, "OK");
  c.kill(0);
  EXPECT_FALSE(c.is_running(0));
  EXPECT_FALSE(pings(ep, milliseconds(500)));
  // Through the proxy the dead node refuses (a definite failure), rather than accepting and closing.
  Reply refused = command(c.endpoint_for("c0", 0), {"PING"}, milliseconds(500));
  EXPECT_NE(refused.error.find("refused"), std::string::npos) << refused.error;
  c.restart(0);
  EXPECT_TRUE(c.is_running(0));
  EXPECT_TRUE(pings(ep));
  EXPECT_TRUE(command(ep, {"GET", "k"}).is_nil()) << "persistence none must come back empty";
  EXPECT_TRUE(pings(c.endpoint_for("c0", 0)));  // the proxy reaches the same address again
}

TEST_F(DockerClusterTest, KillAndRestartWithAofKeepsData) {
  DockerCluster& c = start(1, {{"persistence", "aof-always"}});
  const Endpoint ep = c.nodes()[0].endpoint;
  ASSERT_EQ(command(ep, {"SET", "k", "v"}).str, "OK");
  c.kill(0);
  EXPECT_FALSE(pings(ep, milliseconds(500)));
  c.restart(0);
  EXPECT_EQ(command(ep, {"GET", "k"}).str, "v") << "AOF (always) must keep an acknowledged write";
}


TEST_F(DockerClusterTest, ClockOffsetMovesTimeAndExpiresKeys) {
  DockerCluster& c = start(2);
  const Endpoint n1 = c.nodes()[0].endpoint, n2 = c.nodes()[1].endpoint;
  ASSERT_EQ(command(n1, {"SET", "lock", "me", "PX", "30000"}).str, "OK");
  long long before = node_time_s(n1) - node_time_s(n2);
  EXPECT_LE(std::llabs(before), 1);
  c.set_clock_offset(0, seconds(40));
  long long ahead = node_time_s(n1) - node_time_s(n2);
  EXPECT_GE(ahead, 39);
  EXPECT_LE(ahead, 41);
  EXPECT_TRUE(command(n1, {"GET", "lock"}).is_nil()) << "a 30 s key must expire when the clock jumps 40 s";
  c.set_clock_offset(0, seconds(0));
  EXPECT_LE(std::llabs(node_time_s(n1) - node_time_s(n2)), 1);
}

TEST_F(DockerClusterTest, NodeCutBlocksReplicationBetweenContainersUntilHealed) {
  DockerCluster& c = start(2);
  const NodeInfo& n1 = c.nodes()[0];
  const NodeInfo& n2 = c.nodes()[1];
  // Make n2 a replica of n1 so that the two containers talk to each other.
  ASSERT_EQ(command(n2.endpoint, {"REPLICAOF", n1.endpoint.host, "6379"}).str, "OK");
  ASSERT_TRUE(eventually(
      [&] {
        return command(n2.endpoint, {"INFO", "replication"}).str.find("master_link_status:up") != std::string::npos;
      },
      seconds(15)));
  ASSERT_EQ(command(n1.endpoint, {"SET", "a", "1"}).str, "OK");
  ASSERT_TRUE(eventually([&] { return command(n2.endpoint, {"GET", "a"}).str == "1"; }, seconds(5)));

  c.cut("n1", "n2");
  c.cut("n2", "n1");  // idempotent, symmetric
  EXPECT_NE(iptables_rules(c, 0).find("-s " + n2.endpoint.host + "/32 -j DROP"), std::string::npos);
  EXPECT_NE(iptables_rules(c, 1).find("-s " + n1.endpoint.host + "/32 -j DROP"), std::string::npos);
  ASSERT_EQ(command(n1.endpoint, {"SET", "b", "2"}).str, "OK");
  std::this_thread::sleep_for(milliseconds(1500));
  EXPECT_TRUE(command(n2.endpoint, {"GET", "b"}).is_nil()) << "the write crossed a cut link";
  // The host still reaches both: only n1 <-> n2 is cut.
  EXPECT_TRUE(pings(n1.endpoint));
  EXPECT_TRUE(pings(n2.endpoint));

  c.heal("n2", "n1");
  EXPECT_EQ(iptables_rules(c, 0).find("DROP"), std::string::npos);
  EXPECT_TRUE(eventually(
      [&] {
        return command(n2.endpoint, {"GET", "b"}).str == "2";
      },
      seconds(30)))
      << "held bytes must flow again after heal";

  // A cut outlives a restart of one side: the fresh namespace gets the rules again.
  c.cut("n1", "n2");
  c.kill(1);
  c.restart(1);
  EXPECT_NE(iptables_rules(c, 1).find("-s " + n1.endpoint.host + "/32 -j DROP"), std::string::npos);
  // ... and a pause: rules changed while frozen are applied on resume.
  c.pause(1);
  c.heal_all();
  c.resume(1);
  EXPECT_EQ(iptables_rules(c, 1).find("DROP"), std::string::npos);
  EXPECT_EQ(iptables_rules(c, 0).find("DROP"), std::string::npos);
}

TEST_F(DockerClusterTest, ClientCutAndDelayGoThroughTheProxy) {
  DockerCluster& c = start(2);
  const Endpoint c0 = c.endpoint_for("c0", 0), c1 = c.endpoint_for("c1", 0);
  ASSERT_TRUE(pings(c0));
  c.cut("c0", "n1");
  EXPECT_FALSE(pings(c0, milliseconds(500))) << "cut: no answer";
  EXPECT_TRUE(pings(c1)) << "another slot is not cut";
  EXPECT_TRUE(pings(c.endpoint_for("c0", 1))) << "another node is not cut";
  c.heal("n1", "c0");
  EXPECT_TRUE(pings(c0));

  c.set_delay("c0", "n1", milliseconds(300), milliseconds(0));
  const auto t0 = Clock::now();
  EXPECT_TRUE(pings(c0, milliseconds(3000)));
  EXPECT_GE(Clock::now() - t0, milliseconds(300));
  c.set_delay("c0", "n1", milliseconds(0), milliseconds(0));
  c.heal_all();

  EXPECT_THROW(c.set_delay("n1", "n2", milliseconds(100), milliseconds(0)), ClusterError);
  EXPECT_THROW(c.cut("n1", "zz"), ClusterError);
}

TEST_F(DockerClusterTest, ReplicatedTopologyHasAMasterReplicasAndSentinels) {
  DockerCluster& c = start(3, {{"topology", "replicated"}});
  ASSERT_EQ(c.nodes().size(), 3u);
  EXPECT_EQ(c.nodes()[0].role, NodeRole::kMaster);
  EXPECT_EQ(c.nodes()[1].role, NodeRole::kReplica);
  ASSERT_EQ(c.sentinels().size(), 3u);
  for (const auto& s : c.sentinels()) {
    EXPECT_EQ(s.role, NodeRole::kSentinel);
    EXPECT_TRUE(pings(s.endpoint)) << s.name;
    Reply master = command(s.endpoint, {"SENTINEL", "get-master-addr-by-name", kSentinelMasterName});
    ASSERT_EQ(master.elements.size(), 2u) << s.name << ": " << master.error << master.str;
    EXPECT_EQ(master.elements[0], c.nodes()[0].endpoint.host);
    EXPECT_EQ(master.elements[1], "6379");
  }
  ASSERT_EQ(command(c.nodes()[0].endpoint, {"SET", "k", "v"}).str, "OK");
  for (size_t n = 1; n < 3; ++n) {
    EXPECT_TRUE(eventually(
        [&] {
          return command(c.nodes()[n].endpoint, {"GET", "k"}).str == "v";
        },
        seconds(5)))
        << c.nodes()[n].name;
  }
}

// The split brain of the failover nemesis: the master cut from its replicas and every Sentinel (iptables in
// the master's namespace) while the host still reaches it; Sentinel promotes a replica; the old master keeps
// taking writes that never reach the new one.
TEST_F(DockerClusterTest, SplitBrainCutsTheMasterFromReplicasAndSentinels) {
  DockerCluster& c = start(3, {{"topology", "replicated"}});
  for (const char* peer : {"n2", "n3", "s1", "s2", "s3"}) c.cut("n1", peer);
  EXPECT_NE(iptables_rules(c, 0).find("-s " + c.sentinels()[0].endpoint.host + "/32 -j DROP"), std::string::npos);
  EXPECT_THROW(c.cut("s1", "s2"), ClusterError);
  const Endpoint s1 = c.sentinels()[0].endpoint;
  EXPECT_TRUE(eventually(
      [&] {
        Reply m = command(s1, {"SENTINEL", "get-master-addr-by-name", kSentinelMasterName});
        return m.elements.size() == 2 && m.elements[0] != c.nodes()[0].endpoint.host;
      },
      seconds(30)))
      << "Sentinel promoted no replica";
  ASSERT_EQ(command(c.nodes()[0].endpoint, {"SET", "split", "old-master"}).str, "OK");  // still a master
  std::this_thread::sleep_for(milliseconds(500));
  EXPECT_TRUE(command(c.nodes()[1].endpoint, {"GET", "split"}).is_nil());
  EXPECT_TRUE(command(c.nodes()[2].endpoint, {"GET", "split"}).is_nil());
  c.heal("s1", "n1");
  EXPECT_NE(iptables_rules(c, 0).find("DROP"), std::string::npos);  // the other cuts stay
  c.heal_all();
  EXPECT_EQ(iptables_rules(c, 0).find("DROP"), std::string::npos);
}

// The master of key's slot, as node `at` sees it in CLUSTER SLOTS (its address), or "".
std::string slot_master(const Endpoint& at, const std::string& key) {
  const long long slot = cluster_key_slot(key);
  timeval tv{1, 0};
  redisContext* c = redisConnectWithTimeout(at.host.c_str(), at.port, tv);
  if (c == nullptr || c->err) {
    if (c) redisFree(c);
    return "";
  }
  redisSetTimeout(c, tv);
  std::string out;
  auto* r = static_cast<redisReply*>(redisCommand(c, "CLUSTER SLOTS"));
  for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; ++i) {
    const redisReply* range = r->element[i];
    if (range->elements >= 3 && range->element[0]->integer <= slot && slot <= range->element[1]->integer) {
      out = std::string(range->element[2]->element[0]->str, range->element[2]->element[0]->len);
    }
  }
  if (r) freeReplyObject(r);
  redisFree(c);
  return out;
}

// --topology cluster: a Redis Cluster of containers (3 masters with the slots, 3 replicas, container addresses
// announced); the failover nemesis's split brain through iptables: the slot's master cut from every other node
// keeps answering the host until cluster-node-timeout, then refuses writes (CLUSTERDOWN); the majority promotes
// its replica, which takes writes; after the heal the old master rejoins as a replica.
TEST_F(DockerClusterTest, ClusterTopologyFormsARedisClusterAndASplitBrainPromotesTheReplica) {
  DockerCluster& c = start(6, {{"topology", "cluster"}});
  ASSERT_EQ(c.nodes().size(), 6u);
  for (size_t n = 0; n < 6; ++n) {
    EXPECT_EQ(c.nodes()[n].role, n < 3 ? NodeRole::kMaster : NodeRole::kReplica) << c.nodes()[n].name;
    Reply info = command(c.nodes()[n].endpoint, {"CLUSTER", "INFO"});
    EXPECT_NE(info.str.find("cluster_state:ok"), std::string::npos) << c.nodes()[n].name << ": " << info.str;
    EXPECT_NE(info.str.find("cluster_known_nodes:6"), std::string::npos) << c.nodes()[n].name;
  }
  const std::string key = "lock-0";
  const std::string old_ip = slot_master(c.nodes()[0].endpoint, key);
  size_t old = 6;
  for (size_t n = 0; n < 6; ++n) {
    if (c.nodes()[n].endpoint.host == old_ip) old = n;
  }
  ASSERT_LT(old, 3u) << "lock-0's slot is served by " << old_ip;
  const size_t replica = old + 3;  // replica k replicates master k - 3
  ASSERT_EQ(command(c.nodes()[old].endpoint, {"SET", key, "before"}).str, "OK");
  // The node-timeout runs from the first cut (each cut is a `docker exec`, slow on a loaded machine).
  const auto cut_at = Clock::now();
  for (size_t n = 0; n < 6; ++n) {
    if (n != old) c.cut(c.nodes()[old].name, c.nodes()[n].name);
  }
  EXPECT_NE(iptables_rules(c, old).find("-s " + c.nodes()[replica].endpoint.host + "/32 -j DROP"), std::string::npos);
  // Within node-timeout the cut-off master still takes writes from the host (they reach no replica) ...
  Reply early = command(c.nodes()[old].endpoint, {"SET", key, "old-master"});
  if (Clock::now() - cut_at < milliseconds(800)) EXPECT_EQ(early.str, "OK") << early.error;
  // ... the majority promotes the replica ...
  const size_t other = old == 0 ? 1 : 0;
  EXPECT_TRUE(eventually(
      [&] { return slot_master(c.nodes()[other].endpoint, key) == c.nodes()[replica].endpoint.host; }, seconds(30)))
      << "no promotion: " << slot_master(c.nodes()[other].endpoint, key);
  EXPECT_EQ(command(c.nodes()[replica].endpoint, {"SET", key, "new-master"}).str, "OK");
  // ... and the old master, alone, refuses writes once its node-timeout ran out.
  EXPECT_TRUE(eventually(
      [&] {
        return command(c.nodes()[old].endpoint, {"SET", "{lock-0}x", "v"}).str.rfind("CLUSTERDOWN", 0) == 0;
      },
      seconds(10)));
  c.heal_all();
  EXPECT_EQ(iptables_rules(c, old).find("DROP"), std::string::npos);
  EXPECT_TRUE(eventually(
      [&] {
        Reply role = command(c.nodes()[old].endpoint, {"ROLE"});
        return !role.elements.empty() && role.elements[0] == "slave";
      },
      seconds(30)))
      << "the old master did not rejoin as a replica";
  EXPECT_TRUE(eventually(
      [&] {
        return command(c.nodes()[old].endpoint, {"CLUSTER", "INFO"}).str.find("cluster_state:ok") != std::string::npos;
      },
      seconds(30)));
}

// A run killed with SIGKILL leaves its containers; `lockcheck clean` (docker_clean) finds them by label.
TEST_F(DockerClusterTest, CleanRemovesWhatAKilledRunLeftBehind) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    int status = 1;
    try {
      DockerCluster* leaked = make(docker_config(2, nlohmann::json::object(), 1), run_dir_ + "/killed").release();
      // never destroyed
      leaked->start();
      std::string id = leaked->run_id() + "\n";
      if (::write(fds[1], id.data(), id.size()) == static_cast<ssize_t>(id.size())) status = 0;
      std::this_thread::sleep_for(seconds(120));  // the parent kills it long before
    } catch (...) {
    }
    ::_exit(status);
  }
  ::close(fds[1]);
  std::string run_id;
  pollfd pfd{fds[0], POLLIN, 0};
  if (::poll(&pfd, 1, 120000) == 1) {
    char buf[256];
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) run_id.assign(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  ::kill(child, SIGKILL);
  int wstatus = 0;
  ::waitpid(child, &wstatus, 0);
  while (!run_id.empty() && run_id.back() == '\n') run_id.pop_back();
  ASSERT_FALSE(run_id.empty()) << "the child did not start its cluster";
  EXPECT_NE(leftovers(run_id), "") << "SIGKILL should have left the containers";

  // A network brought up by hand (compose) has the run label but no owner label: clean leaves it.
  docker::DockerCli cli;
  const std::string manual_run = "manual-" + run_id;
  const std::string manual_net = "lockcheck-test-" + manual_run;
  cli.check({"network", "create", "--label", std::string(kDockerRunLabel) + "=" + manual_run, manual_net}, seconds(60));

  std::ostringstream out;
  EXPECT_EQ(docker_clean(out), 0) << out.str();
  EXPECT_NE(leftovers(manual_run), "") << out.str();
  cli.check({"network", "rm", manual_net}, seconds(60));
  EXPECT_NE(out.str().find("removed container"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("removed network"), std::string::npos) << out.str();
  EXPECT_EQ(leftovers(run_id), "");
}



// --server-version 3.4.3 on Docker: the build (build/servers/etcd-3.4.3) goes into an image of its own as
// /usr/bin/etcd, and every member says 3.4.3 when asked; stopped, nothing is left.
TEST_F(DockerClusterTest, Etcd343GoesIntoTheImageAndItsMembersSaySo) {
  LOCKCHECK_NEED_ETCD();
  LOCKCHECK_NEED(testing_util::etcd343_built(LOCKCHECK_BUILD_DIR),
                 "etcd 3.4.3 is not built (scripts/build-clients; needs go) in " << LOCKCHECK_BUILD_DIR << "/servers");
  start(5, nlohmann::json::object(), 2, "etcd", "3.4.3");
  testing_util::expect_members_say(*cluster_, "3.4.3");
  cluster_->stop();
}

}  // namespace
}  // namespace lockcheck
