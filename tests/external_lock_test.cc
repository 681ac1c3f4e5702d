// The external lock (locks/external.cc): a subprocess per client speaking JSON lines. The example client of
// docs/your-own-lock.md answers correctly; the broken ones crash, write garbage or never answer: each op
// they spoil is info, the subprocess is killed and reaped, and a whole run with them completes.
#include <gtest/gtest.h>

#include <fstream>
#include <mutex>
#include <thread>
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
  // docs/your-own-lock.md quotes tests/clients/example_client.py from `import json` on: keep them equal.
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string client = read(client_path("example_client.py"));
  const std::string readme = read(std::string(LOCKCHECK_TEST_CLIENTS) + "/../../docs/your-own-lock.md");
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

// Protocol 2 (docs/your-own-lock.md): tests/clients/proto2_client.py names its key "myprefix:{KEY}" and
// speaks protocol 2 when asked to by its flags.
std::string proto2_cmd(const std::string& flags) { return client_cmd("proto2_client.py") + " " + flags; }

// The loss notices a client reported through LockOptions.on_lost, with when they arrived.
struct Notices {
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> got;  // key, detail
  std::vector<std::chrono::steady_clock::time_point> at;
  void listen(LockOptions* o) {
    o->on_lost = [this](const std::string& key, const std::string& detail) {
      std::lock_guard<std::mutex> lock(mu);
      got.emplace_back(key, detail);
      at.push_back(std::chrono::steady_clock::now());
    };
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return got.size();
  }
};

TEST_F(ExternalLockTest, Protocol2RequestsSayProtocol2) {
  TestCluster c(1);
  TempDir dir;
  const std::string record = dir.path() + "/requests.jsonl";
  LockOptions o = options_for(c, "proto2_client.py");
  o.extra["client_cmd"] = proto2_cmd("--record '" + record + "'");
  auto a = make_lock("external", o);
  ASSERT_EQ(a->acquire("lock-0", milliseconds(5000)).outcome, OpType::kOk);
  ASSERT_EQ(a->release("lock-0").outcome, OpType::kOk);
  std::ifstream in(record);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    EXPECT_EQ(nlohmann::json::parse(line).value("protocol", 0), 2) << line;
    ++n;
  }
  EXPECT_EQ(n, 2);
}

// mono_ns: a validity measured 400 ms before its answer reached the harness is recorded 400 ms shorter, so the
// lease window the history gets ends where the library's did, not 400 ms after it (a false double grant).
TEST_F(ExternalLockTest, Protocol2MonoNsTakesTheAnswersLagOffTheValidity) {
  TestCluster c(1);
  LockOptions o = options_for(c, "proto2_client.py");
  o.extra["client_cmd"] = proto2_cmd("--mono --late-ms 400");
  auto a = make_lock("external", o);
  LockResult r = a->acquire("lock-0", milliseconds(5000));
  ASSERT_EQ(r.outcome, OpType::kOk) << r.error;
  ASSERT_TRUE(r.validity_ms && r.answer_lag_ms);
  EXPECT_GE(*r.answer_lag_ms, 400);
  EXPECT_LT(*r.answer_lag_ms, 3000);
  EXPECT_LE(*r.validity_ms, 5000 - 400);
  EXPECT_EQ(*r.validity_ms + *r.answer_lag_ms <= 5000, true);
  ASSERT_EQ(a->release("lock-0").outcome, OpType::kOk);
  // A lease that ran out in transit keeps 1 ms: an unusable window, not an expired grant.
  o.extra["client_cmd"] = proto2_cmd("--mono --late-ms 600");
  auto b = make_lock("external", o);
  LockResult late = b->acquire("lock-1", milliseconds(500));
  ASSERT_EQ(late.outcome, OpType::kOk) << late.error;
  EXPECT_EQ(late.validity_ms.value_or(-1), 1);
  // Without the stamp nothing is taken off.
  o.extra["client_cmd"] = proto2_cmd("--late-ms 200");
  auto d = make_lock("external", o);
  LockResult plain = d->acquire("lock-2", milliseconds(5000));
  ASSERT_EQ(plain.outcome, OpType::kOk) << plain.error;
  EXPECT_FALSE(plain.answer_lag_ms.has_value());
  EXPECT_GT(*plain.validity_ms, 4800);
}

// A mono_ns that is not this machine's CLOCK_MONOTONIC (here the wall clock) is a malformed answer: info, named.
TEST_F(ExternalLockTest, Protocol2MonoNsFromAnotherClockIsMalformed) {
  TestCluster c(1);
  LockOptions o = options_for(c, "proto2_client.py");
  o.extra["client_cmd"] = proto2_cmd("--bad-mono");
  auto a = make_lock("external", o);
  LockResult r = a->acquire("lock-0", milliseconds(5000));
  EXPECT_EQ(r.outcome, OpType::kInfo);
  EXPECT_NE(r.error.find("mono_ns"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("CLOCK_MONOTONIC"), std::string::npos) << r.error;
}

TEST_F(ExternalLockTest, Protocol2KeysAndReasonsAreRead) {
  TestCluster c(1);
  LockOptions o = options_for(c, "proto2_client.py");
  o.extra["client_cmd"] = proto2_cmd("");
  auto a = make_lock("external", o);
  auto b = make_lock("external", o);
  LockResult r = a->acquire("lock-0", milliseconds(5000));
  ASSERT_EQ(r.outcome, OpType::kOk) << r.error;
  EXPECT_EQ(r.keys, std::vector<std::string>{"myprefix:{lock-0}"});
  EXPECT_TRUE(c.exists(0, "myprefix:{lock-0}"));
  EXPECT_FALSE(c.exists(0, "lock-0"));
  LockResult busy = b->acquire("lock-0", milliseconds(5000));
  EXPECT_EQ(busy.outcome, OpType::kFail);
  EXPECT_EQ(busy.reason, "held");
  EXPECT_EQ(busy.error, "lock taken");
  LockResult not_held = b->extend("lock-0", milliseconds(5000));
  EXPECT_EQ(not_held.outcome, OpType::kFail);
  EXPECT_EQ(not_held.reason, "not_held");
  LockResult ext = a->extend("lock-0", milliseconds(5000));
  EXPECT_EQ(ext.outcome, OpType::kOk);
  EXPECT_EQ(ext.keys, std::vector<std::string>{"myprefix:{lock-0}"});
  EXPECT_EQ(a->release("lock-0").outcome, OpType::kOk);
  EXPECT_EQ(a->release("lock-0").reason, "not_held");
  c.cluster->kill(0);
  auto d = make_lock("external", o);
  LockResult dead = d->acquire("lock-0", milliseconds(1000));
  EXPECT_EQ(dead.outcome, OpType::kFail);
  EXPECT_EQ(dead.reason, "unreachable");
}

TEST_F(ExternalLockTest, Protocol1ClientsAreJudgedAsBefore) {
  // The same client answering as a protocol-1 client (no keys, no reason, no events), and the example client.
  TestCluster c(1);
  for (const std::string& cmd : {proto2_cmd("--old --lost-after-ms 50 --hello 10"), client_cmd("example_client.py")}) {
    LockOptions o = options_for(c, "proto2_client.py");
    o.extra["client_cmd"] = cmd;
    Notices notices;
    notices.listen(&o);
    auto a = make_lock("external", o);
    auto b = make_lock("external", o);
    LockResult r = a->acquire("lock-0", milliseconds(5000));
    ASSERT_EQ(r.outcome, OpType::kOk) << cmd << ": " << r.error;
    EXPECT_TRUE(r.keys.empty()) << cmd;
    LockResult busy = b->acquire("lock-0", milliseconds(5000));
    EXPECT_EQ(busy.outcome, OpType::kFail) << cmd;
    EXPECT_EQ(busy.reason, "") << cmd;
    std::this_thread::sleep_for(milliseconds(200));
    EXPECT_EQ(a->release("lock-0").outcome, OpType::kOk) << cmd;
    EXPECT_EQ(notices.size(), 0u) << cmd;
  }
}

TEST_F(ExternalLockTest, Protocol2LostEventWhileIdleIsTakenWhenItArrives) {
  TestCluster c(1);
  LockOptions o = options_for(c, "proto2_client.py");
  o.extra["client_cmd"] = proto2_cmd("--lost-after-ms 300");
  Notices notices;
  notices.listen(&o);
  auto a = make_lock("external", o);
  ASSERT_EQ(a->acquire("lock-0", milliseconds(5000)).outcome, OpType::kOk);
  const auto acquired = std::chrono::steady_clock::now();
  // No request is outstanding: the notice must come in anyway, about 300 ms after the acquire.
  for (int i = 0; i < 100 && notices.size() == 0; ++i) std::this_thread::sleep_for(milliseconds(20));
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices.got[0].first, "lock-0");
  EXPECT_EQ(notices.got[0].second, "context canceled: lock expired");
  EXPECT_GE(notices.at[0] - acquired, milliseconds(200));
  EXPECT_LT(notices.at[0] - acquired, milliseconds(1500));
  // The client is still in good standing.
  EXPECT_EQ(a->release("lock-0").outcome, OpType::kOk);
  EXPECT_EQ(notices.size(), 1u);
}

TEST_F(ExternalLockTest, Protocol2LostEventDuringARequestIsTakenBeforeTheAnswer) {
  TestCluster c(1);
  LockOptions o = options_for(c, "proto2_client.py");
  o.extra["client_cmd"] = proto2_cmd("--lost-now");
  Notices notices;
  notices.listen(&o);
  auto a = make_lock("external", o);
  ASSERT_EQ(a->acquire("lock-0", milliseconds(5000)).outcome, OpType::kOk);
  EXPECT_EQ(notices.size(), 0u);
  EXPECT_EQ(a->extend("lock-0", milliseconds(5000)).outcome, OpType::kOk);
  EXPECT_EQ(notices.size(), 1u);  // written before the answer: taken by the time the answer is
  EXPECT_EQ(a->release("lock-0").outcome, OpType::kOk);
}

TEST_F(ExternalLockTest, Protocol2HelloSetsTheDeadline) {
  // The default deadline here is 300 ms x 1 node + 1 s = 1300 ms; the client takes 1800 ms per call.
  TestCluster c(1);
  for (bool hello : {false, true}) {
    LockOptions o = c.options();
    o.extra["client_cmd"] = proto2_cmd(std::string("--slow-ms 1800") + (hello ? " --hello 2500" : ""));
    o.extra["client_startup_ms"] = 10000;
    auto a = make_lock("external", o);
    const std::string key = hello ? "lock-h" : "lock-0";  // the first round's client dies holding lock-0
    ASSERT_EQ(a->acquire(key, milliseconds(10000)).outcome, OpType::kOk);  // within the start-up allowance
    LockResult r = a->release(key);
    if (hello) {
      EXPECT_EQ(r.outcome, OpType::kOk) << r.error;  // 2500 + 1000 ms
    } else {
      EXPECT_EQ(r.outcome, OpType::kInfo);
      EXPECT_NE(r.error.find("no answer within 1300 ms"), std::string::npos) << r.error;
    }
  }
  // An explicit client_timeout_ms is the user's bound: the hello does not lift it.
  LockOptions o = options_for(c, "proto2_client.py", 1300);
  o.extra["client_cmd"] = proto2_cmd("--slow-ms 1800 --hello 2500");
  auto a = make_lock("external", o);
  ASSERT_EQ(a->acquire("lock-1", milliseconds(10000)).outcome, OpType::kOk);
  EXPECT_EQ(a->release("lock-1").outcome, OpType::kInfo);
}

TEST_F(ExternalLockTest, Protocol2MalformedFieldsAndEventsAreInfo) {
  TestCluster c(1);
  LockOptions o = options_for(c, "proto2_client.py");
  o.extra["client_cmd"] = proto2_cmd("--bad-event");
  auto a = make_lock("external", o);
  LockResult r = a->acquire("lock-0", milliseconds(5000));
  EXPECT_EQ(r.outcome, OpType::kInfo);
  EXPECT_NE(r.error.find("malformed event"), std::string::npos) << r.error;
  EXPECT_FALSE(running_anywhere("--bad-event"));
  // That acquire was info: it may have happened (the client writes its bad event, then SETs the key, and the
  // harness's kill can come after the SET), so lock-0 may be held for 5 s. The next part uses another key.
  o.extra["client_cmd"] = proto2_cmd("--bad-reason");
  auto holder = make_lock("external", o);
  auto waiter = make_lock("external", o);
  ASSERT_EQ(holder->acquire("lock-1", milliseconds(5000)).outcome, OpType::kOk);
  r = waiter->acquire("lock-1", milliseconds(5000));
  EXPECT_EQ(r.outcome, OpType::kInfo);
  EXPECT_NE(r.error.find("\"reason\" must be one of held, not_held"), std::string::npos) << r.error;
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

// A whole run with a protocol-2 client whose Redis keys are named "myprefix:{lock-0}" under holder-targeted
// kills: the faults find the holder's node by the keys the client reported and say so; its loss notices are in the
// history, stamped, as ops of the process whose client wrote them; the loss-notice checker judged them. The same
// client without "keys": every holder-targeted kill says it was not aimed, and why.
struct TargetedRun {
  History h;
  nlohmann::json results;
};

TargetedRun targeted_run(const std::string& flags, const std::string& results_dir) {
  RunConfig cfg;
  cfg.lock = "external";
  cfg.client_cmd = proto2_cmd(flags);
  cfg.nodes = 1;
  cfg.concurrency = 2;
  cfg.time_limit_s = 4;
  cfg.ttl_ms = 400;
  cfg.op_timeout_ms = 200;
  cfg.seed = 11;
  cfg.nemesis = {"kill"};
  cfg.nemesis_targeting = "holder";
  cfg.nemesis_interval_s = 0.6;
  cfg.progress = false;
  cfg.results_dir = results_dir;
  std::ostringstream out;
  RunOutcome o = run_test(cfg, out);
  EXPECT_NE(o.exit_code, 3) << out.str();
  TargetedRun r;
  r.h = read_history(o.run_dir + "/history.jsonl");
  std::ifstream in(o.run_dir + "/results.json");
  r.results = nlohmann::json::parse(in);
  return r;
}

std::vector<nlohmann::json> kill_starts(const History& h) {
  std::vector<nlohmann::json> out;
  for (const Op& op : h) {
    if (op.process == kNemesis && op.is_invoke() && op.value.value("phase", "") == "start") {
      out.push_back(op.value.value("detail", nlohmann::json::object()));
    }
  }
  return out;
}

const nlohmann::json* checker_result(const nlohmann::json& results, const std::string& name) {
  for (const auto& c : results["checkers"]) {
    if (c.value("checker", "") == name) return &c;
  }
  return nullptr;
}

TEST_F(ExternalLockTest, HolderTargetingFindsTheNodesByTheReportedKeysAndNoticesAreRecorded) {
  TempDir results;
  TargetedRun run = targeted_run("--lost-after-ms 100", results.path());
  int aimed = 0;
  for (const auto& d : kill_starts(run.h)) {
    ASSERT_TRUE(d.contains("aimed")) << d.dump();
    if (!d["aimed"].get<bool>()) {
      EXPECT_TRUE(d.contains("not_aimed_because")) << d.dump();
      continue;
    }
    ++aimed;
    EXPECT_EQ(d["holder_nodes"]["how"], "keys reported by the client") << d.dump();
    EXPECT_EQ(d["holder_nodes"]["keys"], nlohmann::json::array({"myprefix:{lock-0}"})) << d.dump();
    EXPECT_EQ(d["holder_nodes"]["found"], nlohmann::json::array({"n1"})) << d.dump();
  }
  EXPECT_GT(aimed, 0);
  int notices = 0;
  for (const Op& op : run.h) {
    if (!op.is_notice()) continue;
    ++notices;
    EXPECT_GE(op.process, 0);
    EXPECT_EQ(op.key, "lock-0");
    EXPECT_EQ(op.value["detail"], "context canceled: lock expired");
  }
  EXPECT_GT(notices, 0);
  const nlohmann::json* ln = checker_result(run.results, "loss-notice");
  ASSERT_NE(ln, nullptr) << run.results.dump();
  EXPECT_EQ((*ln)["stats"]["notices"], notices);
}

TEST_F(ExternalLockTest, HolderTargetingWithoutReportedKeysSaysItWasNotAimed) {
  TempDir results;
  TargetedRun run = targeted_run("--no-keys", results.path());
  int not_found = 0;
  const auto starts = kill_starts(run.h);
  ASSERT_FALSE(starts.empty());
  for (const auto& d : starts) {
    EXPECT_FALSE(d.value("aimed", true)) << d.dump();  // never aimed at a node nobody found
    const std::string why = d.value("not_aimed_because", "");
    EXPECT_FALSE(why.empty()) << d.dump();
    if (why.find("the request's key") != std::string::npos) ++not_found;
  }
  EXPECT_GT(not_found, 0);
  const nlohmann::json* faults = checker_result(run.results, "faults");
  ASSERT_NE(faults, nullptr);
  EXPECT_EQ((*faults)["stats"]["faults"]["kill"]["aimed"], 0);
  EXPECT_GT((*faults)["stats"]["faults"]["kill"]["not_aimed"].get<int>(), 0);
  EXPECT_NE((*faults)["summary"].get<std::string>().find("aimed at the holder 0 of"), std::string::npos);
}

}  // namespace
}  // namespace lockcheck
