// End to end on Docker: a 20 s redlock run under partitions is recorded and checked, and afterwards no
// container, network or volume with the run's label remains.
#include <gtest/gtest.h>

#include <sstream>

#include "docker/docker_cli.h"
#include "docker/docker_cluster.h"
#include "core/exit_codes.h"
#include "core/history.h"
#include "sys/process.h"
#include "harness/runner.h"
#include "tests/support/test_util.h"
#include "tests/support/ci.h"

namespace lockcheck {
namespace {

TEST(DockerRunTest, RedlockUnderPartitionsIsRecordedCheckedAndCleanedUp) {
  LOCKCHECK_NEED(docker_engine_available(), "no Docker engine answered (`docker version`)");
  TempDir dir;
  RunConfig c;
  c.cluster = "docker";
  c.lock = "redlock";
  c.nemesis = {"partition"};
  c.nemesis_interval_s = 2;
  c.time_limit_s = 20;
  c.concurrency = 4;
  c.ttl_ms = 1000;
  c.seed = 7;
  c.progress = false;
  c.results_dir = dir.str() + "/results";
  std::ostringstream out;
  RunOutcome o = run_test(c, out);
  ASSERT_FALSE(o.run_dir.empty()) << out.str();
  EXPECT_TRUE(o.exit_code == kExitValid || o.exit_code == kExitInvalid || o.exit_code == kExitUnknown) << out.str();
  History h = read_history(o.run_dir + "/history.jsonl");
  size_t acquires = 0, faults = 0;
  for (const auto& op : h) {
    acquires += op.f == "acquire" && op.is_ok();
    faults += op.process == kNemesis && op.is_invoke();
  }
  EXPECT_GT(acquires, 5u) << out.str();
  EXPECT_GT(faults, 2u) << out.str();
  EXPECT_TRUE(boost::filesystem::exists(o.run_dir + "/results.json"));
  // Nothing labelled by any lockcheck run is left on the engine (tests run one at a time).
  for (const char* kind : {"container", "network", "volume"}) {
    std::vector<std::string> argv = {"docker", kind, "ls", "-q", "--filter", std::string("label=") + kDockerRunLabel};
    if (std::string(kind) == "container") argv.push_back("--all");  // stopped ones count too
    CommandResult r = run_command(argv, std::chrono::seconds(30));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "") << kind << "s left behind";
  }
}

}  // namespace
}  // namespace lockcheck
