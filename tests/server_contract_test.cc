// The contract every server kind keeps on every backend (servers/ x local, docker, ssh), one parameterised test
// over the registry: a new kind is tested here without a line of test code. A cluster made as a run makes it
// (resolve_server_plan, make_cluster) starts with every node answering; a killed node stops answering and comes
// back on restart; a paused one likewise on resume; a client's link cut through the fault proxy holds that client's
// requests and only them; where the kind has a leader, cutting it from its peers elects another; where it has clock
// abilities, a step of one node's clock is what that node then reads; where it has power loss, a node loses power
// and comes back; and stop leaves nothing (no process, container, iptables chain or remote folder). Each test's
// ctest labels are the kind's (ServerSpec::test_label) and the backend's, written by tests/ctest_labels.cc.
// A backend or a kind this machine cannot run is skipped with the reason, except under CI=true, where it fails.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "docker/docker_cluster.h"
#include "harness/cluster_factory.h"
#include "harness/plan.h"
#include "servers/registry.h"
#include "sys/process.h"
#include "tests/support/ci.h"
#include "tests/support/contract_params.h"
#include "tests/support/ssh_testbed.h"
#include "tests/support/temp_dir.h"

namespace lockcheck {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Polls pred every 100 ms until it holds or bound passes; true when it held.
template <typename F>
bool eventually(F pred, milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (true) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(100));
  }
}

class ServerContractTest : public ::testing::TestWithParam<testing_util::ContractParam> {
 protected:
  void SetUp() override {
    const auto& p = GetParam();
    const ServerSpec& spec = server_spec(p.kind);
    LOCKCHECK_NEED(!spec.builds(resolve_server_options(spec, nlohmann::json::object())).empty(),
                   "no " + p.kind + " build on this machine (" + spec.install_hint() + ")");
    if (p.backend == "docker") LOCKCHECK_NEED(docker_engine_available(), "no Docker engine answered");
    if (p.backend == "ssh") {
      LOCKCHECK_NEED(::geteuid() == 0, "the ssh test bed needs root (ip netns, iptables)");
      bed_ = std::make_unique<testing_util::SshTestbed>(state_.str() + "/bed");
    }
    RunConfig c;
    c.server = p.kind;
    c.cluster = p.backend;
    c.nodes = 3;
    c.nodes_given = true;
    c.concurrency = 2;
    c.seed = 7;
    if (bed_) c.hosts = bed_->hosts_file();
    plan_ = resolve_server_plan(c);
    // Power loss where the kind has it: the power shim is preloaded only then.
    plan_.power_shim = plan_.abilities.has(Ability::kPowerLoss);
  }

  // Whether node n answers at `at` (its own address, or a client's link to it): the kind's version question.
  bool answers(const ServerCluster& c, size_t n, const Endpoint& at) const {
    MemberAddress m;
    m.name = c.nodes()[n].name;
    m.role = c.nodes()[n].role;
    m.admin = at;
    return !c.server().node_versions({m})[0].empty();
  }
  bool answers(const ServerCluster& c, size_t n) const { return answers(c, n, c.nodes()[n].own_endpoint()); }

  // What the backend still has of the run after stop: "" when nothing.
  std::string leftovers(const ServerCluster& c, const std::vector<int>& pids) const {
    std::string found;
    if (GetParam().backend == "local") {
      for (int pid : pids) {
        if (pid > 0 && ::kill(pid, 0) == 0) found += "process " + std::to_string(pid) + " still runs; ";
      }
    }
    if (GetParam().backend == "docker") {
      const auto r = run_command({"docker", "ps", "--all", "--quiet", "--filter", "label=lockcheck.run=" + c.run_id()},
                                 seconds(30));
      if (!r.out.empty()) found += "containers: " + r.out;
      const auto n = run_command({"docker", "network", "ls", "--quiet", "--filter",
                                  "label=lockcheck.run=" + c.run_id()},
                                 seconds(30));
      if (!n.out.empty()) found += "networks: " + n.out;
    }
    if (GetParam().backend == "ssh") found += bed_->leftovers();
    return found;
  }

  TempDir state_;
  TempDir run_;
  Plan plan_;
  std::unique_ptr<testing_util::SshTestbed> bed_;
};

TEST_P(ServerContractTest, StartsFaultsAndStopsLeavingNothing) {
  std::vector<int> pids;
  {
    auto c = make_cluster(plan_, run_.str());
    c->start();
    const Abilities a = c->abilities();
    const size_t n = c->nodes().size() - 1;  // the node the faults act on
    for (size_t k = 0; k < c->nodes().size(); ++k) {
      EXPECT_TRUE(answers(*c, k)) << c->nodes()[k].name << " did not answer after start()";
      pids.push_back(c->pid(k));
    }
    for (size_t k = 0; k < c->sentinels().size(); ++k) pids.push_back(c->sentinel_pid(k));
    const auto versions = c->node_versions();
    for (const auto& v : versions) EXPECT_FALSE(v.empty());
    if (!plan_.build.version.empty()) EXPECT_EQ(versions[0], plan_.build.version);
    if (a.has(Ability::kLeader)) EXPECT_TRUE(eventually([&] { return c->leader().has_value(); }, seconds(30)));

    // Kill and restart.
    c->kill(n);
    EXPECT_FALSE(c->is_running(n));
    EXPECT_FALSE(answers(*c, n)) << "a killed node answered";
    c->restart(n);
    EXPECT_TRUE(c->is_running(n));
    EXPECT_TRUE(eventually([&] { return answers(*c, n); }, seconds(30))) << "no answer after restart";

    // Pause and resume.
    c->pause(n);
    EXPECT_FALSE(answers(*c, n)) << "a paused node answered";
    c->resume(n);
    EXPECT_TRUE(eventually([&] { return answers(*c, n); }, seconds(30))) << "no answer after resume";

    // A client's link, through the fault proxy: cut holds that client's requests, not another's.
    const Endpoint c0 = c->endpoint_for("c0", n), c1 = c->endpoint_for("c1", n);
    EXPECT_TRUE(answers(*c, n, c0));
    c->cut("c0", c->nodes()[n].name);
    EXPECT_FALSE(answers(*c, n, c0)) << "a cut client link answered";
    EXPECT_TRUE(answers(*c, n, c1)) << "another client's link was cut too";
    c->heal_all();
    EXPECT_TRUE(eventually([&] { return answers(*c, n, c0); }, seconds(10))) << "the healed link stays cut";

    // The leader cut from its peers: the others elect another.
    if (a.has(Ability::kLeader) && a.has(Ability::kCutPeers)) {
      std::optional<size_t> old;
      ASSERT_TRUE(eventually([&] { return (old = c->leader()).has_value(); }, seconds(30)));
      LinkPairs cut;
      for (const auto& other : c->nodes()) {
        if (other.name != c->nodes()[*old].name) cut.push_back({c->nodes()[*old].name, other.name});
      }
      c->cut_links(cut);
      EXPECT_TRUE(eventually(
          [&] {
            const auto now = c->leader();
            return now && *now != *old;
          },
          seconds(60)))
          << "no other leader after cutting " << c->nodes()[*old].name;
      c->heal_all();
      EXPECT_TRUE(eventually([&] { return c->leader().has_value(); }, seconds(60)));
    }

    // A step of one node's clock is what that node reads; a kind without the ability refuses it.
    if (a.has(Ability::kClockStep)) {
      const auto before = c->server().wall_clock_ns([&] {
        MemberAddress m;
        m.admin = c->nodes()[n].own_endpoint();
        return m;
      }());
      c->set_clock_offset(n, std::chrono::hours(1));
      MemberAddress m;
      m.admin = c->nodes()[n].own_endpoint();
      const auto after = c->server().wall_clock_ns(m);
      if (before && after) EXPECT_GE(*after - *before, 3590LL * 1000000000LL) << "the step did not reach the server";
      const auto shift = c->clock_shift(n);
      ASSERT_TRUE(shift.has_value());
      EXPECT_NEAR(std::chrono::duration<double>(*shift).count(), 3600, 1);
      c->set_clock_offset(n, std::chrono::nanoseconds(0));
    } else {
      EXPECT_THROW(c->set_clock_offset(n, std::chrono::hours(1)), ClusterError);
    }

    // A power loss: down, then back on restart.
    if (a.has(Ability::kPowerLoss)) {
      const PowerLossReport r = c->power_loss(n);
      EXPECT_GT(r.records, 0) << "the power journal recorded nothing";
      EXPECT_FALSE(c->is_running(n));
      c->restart(n);
      EXPECT_TRUE(eventually([&] { return answers(*c, n); }, seconds(30)));
    } else {
      EXPECT_THROW(c->power_loss(n), ClusterError);
    }
    // Pids after the restarts, and stop.
    pids.clear();
    for (size_t k = 0; k < c->nodes().size(); ++k) pids.push_back(c->pid(k));
    for (size_t k = 0; k < c->sentinels().size(); ++k) pids.push_back(c->sentinel_pid(k));
    c->stop();
    EXPECT_EQ(leftovers(*c, pids), "");
    // Every node's log is in the run's folder.
    for (const auto& node : c->nodes()) {
      std::ifstream log(node.log_path);
      EXPECT_TRUE(log.good()) << node.log_path;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, ServerContractTest, ::testing::ValuesIn(testing_util::contract_params()),
                         [](const auto& info) { return testing_util::contract_param_name(info.param); });

}  // namespace
}  // namespace lockcheck
