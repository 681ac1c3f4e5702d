// The server kinds' registry (servers/registry.h) and what a plan makes of it, without servers (label unit):
// every kind's options make flags of their own; a lock runs only on a kind that serves the protocol it speaks, and
// the refusal says which would; every nemesis on every kind and backend is accepted exactly when the cluster has
// every ability it needs, and a refusal names the fault, the server and the backend; the fields earlier
// config.json files wrote at the top level still read.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <set>

#include "core/config.h"
#include "harness/plan.h"
#include "locks/lock_client.h"
#include "nemesis/nemesis.h"
#include "servers/registry.h"

namespace lockcheck {
namespace {

// The shipped adapters as scripts/build-clients built them (an adapter's plan checks that its program is there).
class ServerRegistry : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("LOCKCHECK_CLIENTS_DIR", LOCKCHECK_CLIENTS_DIR, 1); }
};

std::string refusal(const RunConfig& c) {
  try {
    resolve_plan(c);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// A lock that speaks what kind serves with its default options (a plan needs one).
std::string lock_for(const std::string& kind) {
  const ServerSpec& spec = server_spec(kind);
  const auto served = spec.protocols(resolve_server_options(spec, nlohmann::json::object()));
  for (const auto& a : lock_registry()) {
    if (std::find(served.begin(), served.end(), a.protocol) != served.end() && a.name != std::string("external")) {
      return a.name;
    }
  }
  return "";
}

TEST_F(ServerRegistry, EveryKindsOptionsAreFlagsOfTheirOwn) {
  std::set<std::string> flags, keys;
  for (const auto& f : config_fields()) {
    if (*f.flag) flags.insert(f.flag);
    keys.insert(f.key);
  }
  for (const auto& e : server_registry()) {
    EXPECT_EQ(e.spec->name(), e.name);
    EXPECT_FALSE(e.spec->test_label().empty()) << e.name;
    EXPECT_FALSE(e.spec->protocols(resolve_server_options(*e.spec, nlohmann::json::object())).empty()) << e.name;
    for (const auto& o : e.spec->options()) {
      EXPECT_TRUE(flags.insert(o.flag).second) << e.name << "'s --" << o.flag << " is taken";
      EXPECT_TRUE(keys.insert(o.key).second) << e.name << "'s " << o.key << " is taken";
      // Its default is a value it accepts.
      EXPECT_NO_THROW(check_server_option(o, o.default_value, o.flag)) << e.name << " " << o.key;
    }
  }
}

TEST_F(ServerRegistry, EveryLockIsServedBySomeKind) {
  for (const auto& a : lock_registry()) {
    if (std::string(a.protocol) == "*") continue;
    bool served = false;
    for (const auto& e : server_registry()) served = served || !e.spec->options_serving(a.protocol).is_null();
    EXPECT_TRUE(served) << a.name << " speaks " << a.protocol << ", which no server kind serves";
  }
}

TEST_F(ServerRegistry, ALockOnAKindThatDoesNotServeItsProtocolIsRefusedNamingOneThatDoes) {
  RunConfig c;
  c.lock = "single-failover";
  EXPECT_NE(refusal(c).find("--server redis --topology replicated"), std::string::npos) << refusal(c);
  c.lock = "etcd";
  EXPECT_NE(refusal(c).find("use --server etcd"), std::string::npos) << refusal(c);
  c.server = "zookeeper";
  c.lock = "single";
  EXPECT_NE(refusal(c).find("speaks resp"), std::string::npos) << refusal(c);
}

// The property: for every kind, backend and nemesis (and targeting), the plan refuses exactly when an ability the
// nemesis needs is missing, and says so in one message naming the fault, the server and the backend.
TEST_F(ServerRegistry, ANemesisRunsExactlyWhereTheClusterHasWhatItNeeds) {
  for (const auto& e : server_registry()) {
    const std::string lock = lock_for(e.name);
    ASSERT_FALSE(lock.empty()) << "no lock speaks what " << e.name << " serves";
    const Abilities kind = e.spec->abilities(resolve_server_options(*e.spec, nlohmann::json::object()));
    for (const std::string backend : {"local", "docker"}) {
      const Abilities a = kind.both(backend_abilities(backend));
      for (const auto& n : nemesis_registry()) {
        for (const std::string targeting : {"random", "holder"}) {
          RunConfig c;
          c.server = e.name;
          c.cluster = backend;
          c.lock = lock;
          c.nemesis = {n.name};
          c.nemesis_targeting = targeting;
          bool lacks = false;
          for (Ability need : make_nemesis(n.name)->needs(targeting == "holder")) lacks = lacks || !a.has(need);
          const std::string why = refusal(c);
          const std::string what = std::string(e.name) + " on " + backend + ", " + n.name + " " + targeting;
          if (!lacks) {
            // A machine without the kind's programs or the lock's adapter cannot say more.
            if (why.find("build on this machine") != std::string::npos || why.find("is not built") != std::string::npos) {
              continue;
            }
            EXPECT_EQ(why, "") << what;
            continue;
          }
          EXPECT_EQ(why.rfind("--nemesis " + std::string(n.name), 0), 0u) << what << ": " << why;
          EXPECT_NE(why.find(std::string(e.name) + " on the " + backend + " backend cannot"), std::string::npos) << what << ": " << why;
        }
      }
    }
  }
}

TEST_F(ServerRegistry, TheReasonsAreTheKindsOwn) {
  RunConfig c;
  c.server = "etcd";
  c.lock = "etcd";
  c.nemesis = {"clock"};
  EXPECT_NE(refusal(c).find("vDSO"), std::string::npos) << refusal(c);
  c.server = "zookeeper";
  c.lock = "kazoo";
  EXPECT_NE(refusal(c).find("nanoTime"), std::string::npos) << refusal(c);
  c.nemesis = {"clock:drift"};
  EXPECT_NE(refusal(c).find("nanoTime"), std::string::npos) << refusal(c);
  c.nemesis = {"failover"};
  EXPECT_NE(refusal(c).find("no primary that fails over"), std::string::npos) << refusal(c);
  c.nemesis = {"pause"};
  c.nemesis_targeting = "holder";
  EXPECT_NE(refusal(c).find("every member holds every node"), std::string::npos) << refusal(c);
  c.nemesis = {"client-pause", "client-crash"};  // a holder's own process: every kind
  EXPECT_EQ(refusal(c), "");
  c.server = "redis";
  c.lock = "single";
  c.nemesis = {"failover"};
  c.nemesis_targeting = "random";
  EXPECT_NE(refusal(c).find("--topology replicated or cluster"), std::string::npos) << refusal(c);
  c.cluster = "docker";
  c.nemesis = {"delay"};
  EXPECT_NE(refusal(c).find("tc netem"), std::string::npos) << refusal(c);
  c.nemesis = {"delay:client"};  // client links only: the fault proxy, on every backend
  EXPECT_EQ(refusal(c), "");
}

TEST_F(ServerRegistry, AKindsOptionsAreItsOwn) {
  RunConfig c;
  c.server = "etcd";
  c.lock = "etcd";
  c.server_opts["topology"] = "replicated";
  EXPECT_EQ(refusal(c), "--topology: an option of --server redis, not of --server etcd");
  c.server_opts = {{"colour", "blue"}};
  EXPECT_NE(refusal(c).find("'colour': neither a config field nor an option of --server etcd"), std::string::npos);
  c.server = "redis";
  c.lock = "single";
  c.server_opts = {{"topology", "ring"}};
  EXPECT_EQ(refusal(c), "--topology: 'ring' is not one of independent, replicated, cluster");
  c.server_opts = {{"sentinel_parallel_syncs", 3}};
  EXPECT_NE(refusal(c).find("only with --topology replicated"), std::string::npos) << refusal(c);
  c.server_opts = {{"topology", "cluster"}};
  c.lock = "cluster";
  c.nodes = 5;
  c.nodes_given = true;
  EXPECT_NE(refusal(c).find("Redis Cluster needs at least 6"), std::string::npos) << refusal(c);
  c.nodes_given = false;  // the kind's default then: 6
  const Plan p = resolve_plan(c);
  EXPECT_EQ(p.config.nodes, 6);
  EXPECT_TRUE(p.config.nodes_from_server);
}

// config.json of earlier versions: Redis' options (and WAIT) at the top level, whatever the server; they still
// read, a default of another kind's option is dropped, and wait_replicas is single-failover's lock option.
TEST_F(ServerRegistry, EarlierConfigFilesStillRead) {
  RunConfig c;
  from_json(nlohmann::json{{"server", "etcd"}, {"lock", "etcd"}, {"topology", "independent"}, {"persistence", "none"},
                           {"sentinel_parallel_syncs", 1}, {"wait_replicas", 0}, {"redis_server", "redis-server"}},
            c);
  EXPECT_EQ(refusal(c), "");
  EXPECT_TRUE(resolve_plan(c).config.server_opts.empty());
  RunConfig r;
  from_json(nlohmann::json{{"lock", "single-failover"}, {"topology", "replicated"}, {"nodes", 3}, {"wait_replicas", 1}},
            r);
  const Plan p = resolve_plan(r);
  EXPECT_EQ(p.config.server_opts, (nlohmann::json{{"topology", "replicated"}}));
  EXPECT_EQ(p.config.lock_opts, (nlohmann::json{{"wait_replicas", 1}}));
  EXPECT_EQ(p.server_options["persistence"], "none");
  nlohmann::json back;
  to_json(back, p.config);
  EXPECT_EQ(back["server_opts"], (nlohmann::json{{"topology", "replicated"}}));
  EXPECT_FALSE(back.contains("topology"));
}

}  // namespace
}  // namespace lockcheck
