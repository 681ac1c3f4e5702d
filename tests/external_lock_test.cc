// The external lock (locks/external.cc): a subprocess per client speaking JSON lines. The example client of
// locks/README-external.md answers correctly; the broken ones crash, write garbage or never answer: each op
// they spoil is info, the subprocess is killed and reaped, and a whole run with them completes.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/history.h"
#include "harness/runner.h"
#include "sys/process.h"
#include "tests/support/lock_test_util.h"

#ifndef LOCKCHECK_PYTHON
#define LOCKCHECK_PYTHON ""
#endif
#ifndef LOCKCHECK_TEST_CLIENTS
#define LOCKCHECK_TEST_CLIENTS ""
#endif

namespace lockcheck {
namespace {

using std::chrono::milliseconds;
using testing_util::make_lock;
using testing_util::TestCluster;

std::string client_path(const std::string& name) { return std::string(LOCKCHECK_TEST_CLIENTS) + "/" + name; }

std::string client_cmd(const std::string& name) {
  // Quoted, to exercise split_command_line on the way.
  return std::string("'") + LOCKCHECK_PYTHON + "' '" + client_path(name) + "'";
}

// True when a process whose command line mentions path is still running.
bool running_anywhere(const std::string& path) {
  CommandResult r = run_command({"pgrep", "-f", path}, std::chrono::seconds(5));
  return r.exit_code == 0;
}

class ExternalLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(LOCKCHECK_PYTHON).empty()) GTEST_SKIP() << "python3 not found at configure time";
  }
  LockOptions options_for(const TestCluster& c, const std::string& client, int64_t timeout_ms = 2000,
                          int64_t startup_ms = 10000) {
    LockOptions o = c.options();
    o.extra["client_cmd"] = client_cmd(client);
    o.extra["client_timeout_ms"] = timeout_ms;
    o.extra["client_startup_ms"] = startup_ms;
    return o;
  }
};

TEST_F(ExternalLockTest, ExampleClientAcquiresExcludesExtendsAndReleases) {
  TestCluster c(1);
  LockOptions o = options_for(c, "example_client.py");
  o.fencing = true;
  auto a = make_lock("external", o);
  auto b = make_lock("external", o);
  LockResult r = a->acquire("lock-0", milliseconds(10000));
  ASSERT_EQ(r.outcome, OpType::kOk) << r.error;
  ASSERT_TRUE(r.validity_ms.has_value());
  EXPECT_GT(*r.validity_ms, 0);
  ASSERT_TRUE(r.token.has_value());
  EXPECT_TRUE(c.exists(0, "lock-0"));
  LockResult busy = b->acquire("lock-0", milliseconds(10000));
  EXPECT_EQ(busy.outcome, OpType::kFail);
  EXPECT_EQ(busy.error, "held");
  EXPECT_EQ(a->extend("lock-0", milliseconds(20000)).outcome, OpType::kOk);
  EXPECT_GT(c.conn(0)->command({"PTTL", "lock-0"}).integer().value_or(0), 10000);
  EXPECT_EQ(a->release("lock-0").outcome, OpType::kOk);
  EXPECT_FALSE(c.exists(0, "lock-0"));
  LockResult rb = b->acquire("lock-0", milliseconds(10000));
  ASSERT_EQ(rb.outcome, OpType::kOk) << rb.error;
  EXPECT_GT(*rb.token, *r.token);
  EXPECT_EQ(b->release("lock-0").outcome, OpType::kOk);
}

TEST_F(ExternalLockTest, ExampleClientReportsADeadNodeAsAFail) {
  TestCluster c(1);
  auto a = make_lock("external", options_for(c, "example_client.py"));
  c.cluster->kill(0);
  LockResult r = a->acquire("lock-0", milliseconds(1000));
  EXPECT_EQ(r.outcome, OpType::kFail) << r.error;
  EXPECT_NE(r.error.find("connect"), std::string::npos) << r.error;
}

TEST_F(ExternalLockTest, CrashingClientIsInfoAndReaped) {
  TestCluster c(1);
  {
    auto a = make_lock("external", options_for(c, "crash_client.py"));
    EXPECT_EQ(a->acquire("lock-0", milliseconds(1000)).outcome, OpType::kFail);  // its one good answer
    LockResult r = a->acquire("lock-0", milliseconds(1000));
    EXPECT_EQ(r.outcome, OpType::kInfo);
    EXPECT_NE(r.error.find("exited with status 3"), std::string::npos) << r.error;
    EXPECT_EQ(a->release("lock-0").outcome, OpType::kInfo);  // gone for good
  }
  EXPECT_FALSE(running_anywhere(client_path("crash_client.py")));
}

TEST_F(ExternalLockTest, GarbageIsInfoAndTheClientIsKilled) {
  TestCluster c(1);
  auto a = make_lock("external", options_for(c, "garbage_client.py"));
  LockResult r = a->acquire("lock-0", milliseconds(1000));
  EXPECT_EQ(r.outcome, OpType::kInfo);
  EXPECT_NE(r.error.find("malformed answer"), std::string::npos) << r.error;
  EXPECT_FALSE(running_anywhere(client_path("garbage_client.py")));  // killed at once, not at destruction
}

TEST_F(ExternalLockTest, SilentClientIsInfoAfterTheTimeoutAndKilled) {
  TestCluster c(1);
  auto a = make_lock("external", options_for(c, "silent_client.py", 300, 0));
  const auto t0 = std::chrono::steady_clock::now();
  LockResult r = a->acquire("lock-0", milliseconds(1000));
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.outcome, OpType::kInfo);
  EXPECT_NE(r.error.find("no answer within 300 ms"), std::string::npos) << r.error;
  EXPECT_LT(waited, std::chrono::seconds(5));  // bounded by the client timeout, not hung
  EXPECT_FALSE(running_anywhere(client_path("silent_client.py")));
}

TEST_F(ExternalLockTest, TheReadmeShowsTheExampleClientAsTested) {
  // locks/README-external.md quotes tests/clients/example_client.py from `import json` on: keep them equal.
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string client = read(client_path("example_client.py"));
  const std::string readme = read(std::string(LOCKCHECK_TEST_CLIENTS) + "/../../locks/README-external.md");
  const auto from = client.find("import json");
  ASSERT_NE(from, std::string::npos);
  const std::string code = client.substr(from);
  const auto block = readme.find("```python\n");
  ASSERT_NE(block, std::string::npos);
  const auto start = block + std::string("```python\n").size();
  const auto end = readme.find("```", start);
  ASSERT_NE(end, std::string::npos);
  EXPECT_EQ(readme.substr(start, end - start), code);
}

TEST_F(ExternalLockTest, BadCommandLinesAreClearErrors) {
  TestCluster c(1);
  LockOptions o = c.options();
  o.extra["client_cmd"] = "python3 'unterminated";
  EXPECT_THROW(make_lock("external", o), std::invalid_argument);
  o.extra["client_cmd"] = "/no/such/program --flag";
  EXPECT_THROW(make_lock("external", o), SpawnError);
  o.extra["client_cmd"] = "";
  EXPECT_THROW(make_lock("external", o), std::invalid_argument);
}

// A whole run (run_test, lock external, a few seconds) with each client: it completes, and the broken ones
// leave info ops, never a hang, and no subprocess behind.
struct RunCounts {
  int ok = 0, fail = 0, info = 0;
};

RunCounts run_with(const std::string& client, const std::string& results_dir) {
  RunConfig cfg;
  cfg.lock = "external";
  cfg.client_cmd = client_cmd(client);
  cfg.nodes = 1;
  cfg.concurrency = 2;
  cfg.time_limit_s = 2;
  cfg.ttl_ms = 200;
  cfg.op_timeout_ms = 200;
  cfg.seed = 7;
  cfg.progress = false;
  cfg.results_dir = results_dir;
  std::ostringstream out;
  RunOutcome o = run_test(cfg, out);
  EXPECT_NE(o.exit_code, 3) << out.str();  // not a harness failure
  RunCounts counts;
  for (const Op& op : read_history(o.run_dir + "/history.jsonl")) {
    if (op.type == OpType::kOk) ++counts.ok;
    if (op.type == OpType::kFail) ++counts.fail;
    if (op.type == OpType::kInfo) ++counts.info;
  }
  return counts;
}

TEST_F(ExternalLockTest, RunsCompleteWithGoodAndBadClients) {
  TempDir results;
  RunCounts good = run_with("example_client.py", results.path());
  EXPECT_GT(good.ok, 0);
  EXPECT_EQ(good.info, 0);
  for (const char* bad : {"crash_client.py", "garbage_client.py", "silent_client.py"}) {
    RunCounts c = run_with(bad, results.path());
    EXPECT_GT(c.info, 0) << bad;
    EXPECT_EQ(c.ok, 0) << bad;
    EXPECT_FALSE(running_anywhere(client_path(bad))) << bad;
  }
}

}  // namespace
}  // namespace lockcheck
