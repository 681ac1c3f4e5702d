// The "test your own lock" examples (examples/*/): each example's adapter run end to end by the lockcheck binary
// the way its README says (`lockcheck run --lock external --client-cmd ... --nodes 1 --nemesis FAULT`), a few
// seconds each, asserting the verdicts the README claims: healthy VALID; a holder paused past its TTL is a double
// grant the mutex checker finds while no two leases overlap (the lock reports its validity); with the Go lock's
// fencing token the resource refuses the paused holder's writes (fencing and lost-updates valid).
// The Python example needs /usr/bin/python3 with redis-py (python3-redis), the Go one the adapter
// scripts/build-clients builds into build/examples/go-redis-lock/: without them a test skips with the reason,
// except under CI=true, where that is a failure.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "locks/adapters.h"
#include "sys/process.h"
#include "tests/support/ci.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

#ifndef LOCKCHECK_PYTHON
#define LOCKCHECK_PYTHON "/usr/bin/python3"
#endif

namespace lockcheck {
namespace {

using nlohmann::json;
using std::chrono::seconds;

const std::string kSource = LOCKCHECK_SOURCE_DIR;

bool python_has_redis() {
  try {
    return run_command({LOCKCHECK_PYTHON, "-c", "import redis"}, seconds(20)).ok();
  } catch (const std::exception&) {
    return false;
  }
}

std::string python_example_cmd() {
  return join_command_line({LOCKCHECK_PYTHON, kSource + "/examples/python-redis-lock/lockcheck_adapter.py"});
}

// A finished run: its exit status, what it printed, its results.json.
struct ExampleRun {
  int exit_code = -1;
  std::string printed;
  json results;

  // The verdict of checker `name` ("" when it did not run).
  std::string checker(const std::string& name) const {
    for (const auto& c : results.value("checkers", json::array())) {
      if (c.value("checker", "") == name) return c.value("valid", "");
    }
    return "";
  }
};

// `lockcheck run --lock external --client-cmd CMD --nodes 1 ARGS...` with a fixed seed into a fresh results
// folder (removed afterwards), bounded: time_limit_s plus a minute for start-up, checking and teardown.
ExampleRun run_example(const TempDir& dir, const std::string& client_cmd, int time_limit_s,
                       const std::vector<std::string>& args) {
  std::vector<std::string> argv = {LOCKCHECK_BINARY, "run", "--lock", "external", "--client-cmd", client_cmd,
                                   "--nodes", "1", "--time-limit", std::to_string(time_limit_s), "--seed", "1",
                                   "--results", dir.file("results"), "--no-progress"};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult r = run_command(argv, seconds(time_limit_s + 60));
  ExampleRun run;
  run.exit_code = r.exit_code;
  run.printed = r.out + r.err;
  EXPECT_FALSE(r.timed_out) << "the run did not end within " << time_limit_s + 60 << " s\n" << run.printed;
  if (!boost::filesystem::exists(dir.file("results") + "/latest")) {
    ADD_FAILURE() << "the run wrote no folder\n" << run.printed;
    return run;
  }
  const std::string run_dir = testing_util::latest_run(dir.file("results"));
  std::ifstream in(run_dir + "/results.json");
  EXPECT_TRUE(in.good()) << "no results.json in " << run_dir << "\n" << run.printed;
  if (in) run.results = json::parse(in);
  // lockcheck stops its node (and its clients die with it): nothing of the run is left running.
  for (pid_t p : testing_util::node_pids(run_dir)) {
    EXPECT_FALSE(testing_util::process_alive(p)) << "redis-server " << p << " left behind";
  }
  return run;
}

// The faults checker: every client-pause the run planned fired (the holder's adapter was SIGSTOPped and resumed).
void expect_a_pause_fired(const ExampleRun& run) { EXPECT_EQ(run.checker("faults"), "valid") << run.printed; }

class PythonExampleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LOCKCHECK_NEED(testing_util::have_redis_server(), "redis-server is not installed");
    LOCKCHECK_NEED(python_has_redis(), LOCKCHECK_PYTHON " cannot import redis (apt-get install python3-redis)");
  }
  TempDir dir_{"examples-test"};
};

TEST_F(PythonExampleTest, HealthyIsValid) {
  ExampleRun run = run_example(dir_, python_example_cmd(), 4, {"--concurrency", "3", "--ttl-ms", "500"});
  EXPECT_EQ(run.exit_code, 0) << run.printed;
  EXPECT_EQ(run.results.value("valid", ""), "valid") << run.printed;
  EXPECT_EQ(run.checker("mutex"), "valid");
  EXPECT_EQ(run.checker("lease"), "valid");  // the validity it reports (with mono_ns) is honest
}

TEST_F(PythonExampleTest, AHolderPausedPastItsTtlIsADoubleGrant) {
  ExampleRun run = run_example(dir_, python_example_cmd(), 6,
                               {"--concurrency", "3", "--ttl-ms", "500", "--nemesis", "client-pause",
                                "--nemesis-targeting", "holder", "--nemesis-interval", "2"});
  EXPECT_EQ(run.exit_code, 1) << run.printed;
  EXPECT_EQ(run.results.value("valid", ""), "invalid") << run.printed;
  EXPECT_EQ(run.checker("mutex"), "invalid") << run.printed;  // the next holder acquired while it slept
  EXPECT_EQ(run.checker("lease"), "valid") << run.printed;    // but only after the validity it was told had run out
  expect_a_pause_fired(run);
}

class GoExampleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LOCKCHECK_NEED(testing_util::have_redis_server(), "redis-server is not installed");
    LOCKCHECK_NEED(std::ifstream(adapter_).good(),
                   adapter_ + " is not built (scripts/build-clients builds it; needs Go >= 1.26)");
  }
  const std::string adapter_ = LOCKCHECK_GO_EXAMPLE;
  TempDir dir_{"examples-test"};
};

TEST_F(GoExampleTest, HealthyIsValidAndEveryGrantHasAToken) {
  ExampleRun run = run_example(dir_, adapter_, 4, {"--concurrency", "3", "--ttl-ms", "500"});
  EXPECT_EQ(run.exit_code, 0) << run.printed;
  EXPECT_EQ(run.results.value("valid", ""), "valid") << run.printed;
  EXPECT_EQ(run.checker("lease"), "valid");
  // Every ok acquire in the history carries the lock's fencing token.
  std::ifstream h(testing_util::latest_run(dir_.file("results")) + "/history.jsonl");
  size_t grants = 0, with_token = 0;
  for (std::string line; std::getline(h, line);) {
    const json op = json::parse(line);
    if (op.value("f", "") != "acquire" || op.value("type", "") != "ok") continue;
    ++grants;
    with_token += op.contains("token") ? 1 : 0;
  }
  EXPECT_GT(grants, 0u);
  EXPECT_EQ(with_token, grants);
}

TEST_F(GoExampleTest, TheFencingTokenKeepsAPausedHoldersWritesOut) {
  ExampleRun run = run_example(dir_, adapter_, 6,
                               {"--concurrency", "3", "--ttl-ms", "500", "--workload", "fenced-set", "--fencing",
                                "--nemesis", "client-pause", "--nemesis-targeting", "holder",
                                "--nemesis-interval", "2"});
  EXPECT_EQ(run.exit_code, 1) << run.printed;
  EXPECT_EQ(run.checker("mutex"), "invalid") << run.printed;       // two holders, as without the token
  EXPECT_EQ(run.checker("fencing"), "valid") << run.printed;       // the resource refused the older token
  EXPECT_EQ(run.checker("lost-updates"), "valid") << run.printed;  // so no acknowledged update was lost
  expect_a_pause_fired(run);
}

}  // namespace
}  // namespace lockcheck
