// What a run was, in words (report/summary.h): the sentence at the top of the report and the console, the client
// op counts with what they mean, the workload line, the clients that exited; and which settings the run recorded
// as not applying (harness/plan.h), which the report leaves out.
#include "report/summary.h"

#include <gtest/gtest.h>

#include "checkers/checker.h"
#include "harness/plan.h"
#include "report/report.h"
#include "servers/registry.h"
#include "tests/support/report_fixtures.h"

namespace lockcheck {
namespace report {
namespace {

using nlohmann::json;
using report_test::HistoryBuilder;

json config(json patch) {
  json c = {{"cluster", "local"},   {"server", "redis"},  {"nodes", 5},         {"lock", "redlock"},
            {"workload", "lock"},   {"nemesis", json::array()}, {"nemesis_targeting", "random"},
            {"nemesis_interval_s", 3.0}, {"time_limit_s", 10.0}, {"concurrency", 5}, {"ttl_ms", 1000},
            {"hold_ms_max", -1},    {"hold_ms_min", 0}};
  if (patch.is_object()) c.merge_patch(patch);
  return c;
}

json results(const std::string& server = "redis", const std::string& version = "7.0.15") {
  return {{"duration_s", 10.02}, {"versions", {{"lockcheck", "0.1.0"}, {server, version}}}};
}

// A fault as a nemesis records it: start f and stop f, with its mode.
void fault(HistoryBuilder& b, double t0, double t1, const std::string& fault, const std::string& start_f,
           const std::string& stop_f, const std::string& mode, const std::vector<std::string>& targets) {
  json start = {{"fault", fault}, {"phase", "start"}, {"targets", targets}, {"detail", {{"mode", mode}}}};
  b.add(t0, kNemesis, OpType::kInvoke, start_f, "", start);
  b.add(t0 + 1, kNemesis, OpType::kOk, start_f, "", start);
  json stop = {{"fault", fault}, {"phase", "stop"}, {"targets", targets}};
  b.add(t1, kNemesis, OpType::kInvoke, stop_f, "", stop);
  b.add(t1 + 1, kNemesis, OpType::kOk, stop_f, "", stop);
}

TEST(ReportSummaryTest, SentenceWithoutFaults) {
  EXPECT_EQ(run_sentence(config({}), results(), {}), "redlock on 5 local redis 7.0.15 nodes, 5 clients, no faults, 10 s");
}

TEST(ReportSummaryTest, SentenceNamesTheFaultsAsTheHistoryShowsThemWithModeTargetingAndCount) {
  HistoryBuilder b;
  fault(b, 1000, 1001, "kill", "kill", "restart", "minority", {"n1", "n2"});
  fault(b, 5000, 5001, "kill", "kill", "restart", "minority", {"n3", "n4"});
  fault(b, 2000, 4000, "partition", "partition", "heal", "majorities-ring", {"n1"});
  const json c = config({{"nemesis", {"kill", "partition"}}, {"nemesis_targeting", "holder"}});
  EXPECT_EQ(run_sentence(c, results(), b.history()),
            "redlock on 5 local redis 7.0.15 nodes, 5 clients, kill + restart (minority, 2 faults) and partition + heal "
            "(majorities-ring, 1 fault) aimed at the holder, 3 s between faults, 10 s");
}

TEST(ReportSummaryTest, SentenceSaysAFaultThatNeverFired) {
  const json c = config({{"nemesis", {"client-pause"}}, {"time_limit_s", 2.0}});
  json r = results();
  r["duration_s"] = 2.0;
  EXPECT_EQ(run_sentence(c, r, {}),
            "redlock on 5 local redis 7.0.15 nodes, 5 clients, client-pause (no fault fired), 3 s between faults, 2 s");
}

TEST(ReportSummaryTest, SentenceOfOneNodeAndAnExternalLock) {
  HistoryBuilder b;
  json start = {{"fault", "client-pause"}, {"phase", "start"}, {"targets", {"c0"}}, {"detail", {{"pause_ms", 2000}}}};
  b.add(100, kNemesis, OpType::kInvoke, "client-pause", "", start);
  const json c = config({{"lock", "external"}, {"client_cmd", "python3 /home/me/locks/my_lock.py --fast"},
                         {"nodes", 1}, {"nemesis", {"client-pause"}}, {"concurrency", 3}, {"workload", "lock-set"}});
  EXPECT_EQ(run_sentence(c, results(), b.history()),
            "external lock (python3 my_lock.py) on 1 local redis 7.0.15 node, 3 clients (lock-set workload), "
            "client-pause (2 s each, 1 fault), 10 s");
}

TEST(ReportSummaryTest, SentenceOfEtcdAndZooKeeperAndOfAVersionNotRead) {
  EXPECT_EQ(run_sentence(config({{"server", "etcd"}, {"lock", "etcd-lease"}, {"nodes", 3}, {"cluster", "docker"}}),
                         results("etcd", "3.4.3"), {}),
            "etcd-lease on 3 docker etcd 3.4.3 nodes, 5 clients, no faults, 10 s");
  EXPECT_EQ(run_sentence(config({{"server", "zookeeper"}, {"lock", "zk-recipe"}, {"nodes", 3}}),
                         results("zookeeper", "3.4.13 (n1, n2), not read (n3)"), {}),
            "zk-recipe on 3 local zookeeper nodes (version: 3.4.13 (n1, n2), not read (n3)), 5 clients, no faults, 10 s");
  // No results (a run that never finished): the version asked for and the time limit.
  EXPECT_EQ(run_sentence(config({{"server_version", "6.2.14"}}), json::object(), {}),
            "redlock on 5 local redis 6.2.14 nodes, 5 clients, no faults, 10 s");
}

TEST(ReportSummaryTest, CountsAreTheStatsCheckersAndFailIsExplained) {
  HistoryBuilder b;
  b.hold(0, "lock-0", 0, 1, 10, 1);                                // 2 ok
  b.add(2, 1, OpType::kInvoke, "acquire", "lock-0");
  b.add(3, 1, OpType::kFail, "acquire", "lock-0", nullptr, std::nullopt, std::nullopt, "held");
  b.fault(4, 8, "partition", {"n1"});                               // 2 nemesis completions: not client ops
  b.add(9, 1, OpType::kInfo, "lost", "lock-0", json{{"detail", "x"}});  // a loss notice: not an op's outcome
  const ClientTally t = client_tally(b.history());
  EXPECT_EQ(t.ok, 2);
  EXPECT_EQ(t.fail, 1);
  EXPECT_EQ(t.fail_acquire, 1);
  EXPECT_EQ(t.info, 0);
  EXPECT_EQ(t.nemesis, 2);
  EXPECT_EQ(ops_words(t), "2 ok, 1 fail (acquires that found the lock held: contention, not errors), 0 info");
  // The stats checker counts the same.
  const CheckResult r = run_checker(*make_checker("stats"), b.history(), CheckOptions{});
  const json& stats = r.stats["ops"];
  EXPECT_EQ(stats["ok"], t.ok);
  EXPECT_EQ(stats["fail"], t.fail);
  EXPECT_EQ(stats["info"], t.info);

  ClientTally mixed{10, 5, 1, 3, 0};
  EXPECT_EQ(ops_words(mixed), "10 ok, 5 fail (3 acquires that found the lock held: contention, not errors; 2 other "
                              "ops that did not happen), 1 info (outcome unknown: a timeout or a lost client)");
}

TEST(ReportSummaryTest, WorkloadLineSaysWhatWasSentAndWhetherValidityCame) {
  HistoryBuilder b;
  b.hold(0, "lock-0", 0, 1, 10, 1, 950);
  b.hold(1, "lock-0", 20, 21, 30, 2);
  EXPECT_EQ(workload_words(config({}), b.history()),
            "lock workload: acquire, hold 0-800 ms, release; no extend; validity_ms reported on 1 of 2 ok acquires");
  HistoryBuilder c;
  c.hold(0, "lock-0", 0, 1, 10, 1);
  EXPECT_EQ(workload_words(config({{"hold_ms_min", 100}, {"hold_ms_max", 300}}), c.history()),
            "lock workload: acquire, hold 100-300 ms, release; no extend; no validity_ms reported (the lease checker "
            "has no lease to judge)");
  HistoryBuilder d;
  d.add(0, 0, OpType::kInvoke, "acquire", "lock-0");
  d.add(1, 0, OpType::kOk, "acquire", "lock-0", nullptr, std::nullopt, 900);
  d.add(2, 0, OpType::kInvoke, "read", "lock-0");
  d.add(3, 0, OpType::kInvoke, "extend", "lock-0");
  d.add(4, 0, OpType::kInvoke, "add", "lock-0");
  d.add(5, 0, OpType::kInvoke, "release", "lock-0");
  EXPECT_EQ(workload_words(config({{"workload", "lock-set"}}), d.history()),
            "lock-set workload: acquire, read, extend, add, release; 1 extend sent; validity_ms reported on 1 of 1 ok "
            "acquire");
}

TEST(ReportSummaryTest, ClientExitsAreNamedOncePerProcessWithTheirStatus) {
  HistoryBuilder b;
  b.add(0, 0, OpType::kInvoke, "acquire", "lock-0");
  b.add(5, 0, OpType::kInfo, "acquire", "lock-0", nullptr, std::nullopt, std::nullopt,
        "external client: exited with status 1");
  b.add(6, 1, OpType::kInvoke, "acquire", "lock-0");
  b.add(9, 1, OpType::kInfo, "acquire", "lock-0", nullptr, std::nullopt, std::nullopt,
        "external client: exited with status 139");
  b.add(10, 2, OpType::kInvoke, "acquire", "lock-0");  // alive but slow: not an exit
  b.add(20, 2, OpType::kInfo, "acquire", "lock-0", nullptr, std::nullopt, std::nullopt,
        "external client: no answer within 500 ms");
  b.add(21, 3, OpType::kInvoke, "acquire", "lock-0");  // a client-crash fault's crash: not an exit by itself
  b.add(22, 3, OpType::kInfo, "acquire", "lock-0", nullptr, std::nullopt, std::nullopt, "client crashed mid-acquire");
  const auto exits = client_exits(b.history());
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_EQ(exits[0].process, 0);
  EXPECT_EQ(exits[0].why, "exited with status 1");
  EXPECT_EQ(exits[0].status, 1);
  EXPECT_EQ(exits[1].why, "killed by signal 11 (status 139)");

  json r = json::object();
  r["client_exits"] = client_exits_json(exits);
  r["client_exits"][0]["stderr_tail"] = {"Traceback (most recent call last):", "ImportError: no module named redis"};
  r["client_exits"][1]["stderr_tail"] = json::array();
  EXPECT_EQ(r["client_exits"][0]["process"], "p0");
  EXPECT_EQ(r["client_exits"][0]["stderr_file"], "clients/p0.stderr");
  const ClientTally none{};
  const auto lines = client_exit_lines(r, none, "results/run/");
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0], "every client process exited before any lock op completed (2 exits: p0, p1): nothing was tested");
  EXPECT_EQ(lines[1], "p0 exited with status 1 at 0.005 s; the last 2 lines of its stderr (results/run/clients/p0.stderr):");
  EXPECT_EQ(lines[2], "  | Traceback (most recent call last):");
  EXPECT_EQ(lines[4], "p1 killed by signal 11 (status 139) at 0.009 s; its stderr (results/run/clients/p1.stderr) is empty");
  ClientTally some{};
  some.ok = 4;
  EXPECT_EQ(client_exit_lines(r, some)[0], "2 client processes exited by themselves: p0, p1");
  EXPECT_TRUE(client_exit_lines(json::object(), some).empty());
  r["client_exit_count"] = 87;  // results.json lists the first ones only
  EXPECT_EQ(client_exit_lines(r, some)[0], "87 client processes exited by themselves: p0, p1 and 85 more");
}

TEST(ReportSummaryTest, LastLinesKeepsTheEnd) {
  EXPECT_EQ(last_lines("a\nb\nc\n\n", 2), (std::vector<std::string>{"b", "c"}));
  EXPECT_TRUE(last_lines("", 10).empty());
}

TEST(ReportSummaryTest, DefaultsAreShownResolved) {
  EXPECT_EQ(default_words(800, "ms", "80% of the TTL"), "800 ms (default)");
  EXPECT_EQ(default_words(std::nullopt, "ms", "10% of the lease, at least 20 ms"),
            "10% of the lease, at least 20 ms (default)");
}

TEST(ReportSummaryTest, FaultSettingsApplyOnlyWithTheNemesisThatReadsThem) {
  Plan p;  // the lock workload (RunConfig's default): the set workloads' settings do not apply
  auto hidden = [&] { return settings_not_applying(p); };
  using V = std::vector<std::string>;
  const V set_only = {"work_ms", "work_uniform", "blind_holder"};
  auto with = [&](V v) {
    v.insert(v.begin(), set_only.begin(), set_only.end());
    return v;
  };
  EXPECT_EQ(hidden(), with({"nemesis_targeting", "nemesis_timing", "nemesis_interval_s", "restart_delay_ms",
                            "drift_ppm", "delay_ms", "pause_ms"}));
  p.nemeses = {"kill"};
  EXPECT_EQ(hidden(), with({"drift_ppm", "delay_ms", "pause_ms"}));
  p.nemeses = {"client-pause", "clock:drift"};
  EXPECT_EQ(hidden(), with({"restart_delay_ms", "delay_ms"}));
  p.nemeses = {"clock", "power-loss"};
  EXPECT_EQ(hidden(), with({"drift_ppm", "delay_ms", "pause_ms"}));
  p.nemeses = {"delay:client"};
  EXPECT_EQ(hidden(), with({"restart_delay_ms", "drift_ppm", "pause_ms"}));
  // A set workload reads work_ms and the lease margin, not the lock workload's holds; renew reads neither.
  p.nemeses = {"kill"};
  p.config.workload = "lock-set";
  EXPECT_EQ(hidden(), (V{"hold_ms_max", "hold_ms_min", "drift_ppm", "delay_ms", "pause_ms"}));
  p.config.workload = "renew";
  EXPECT_EQ(hidden(), (V{"hold_ms_max", "hold_ms_min", "work_ms", "lease_margin_ms", "work_uniform", "blind_holder",
                         "drift_ppm", "delay_ms", "pause_ms"}));
}

TEST(ReportSummaryTest, ServerOptionsApplyAsTheServerKindSays) {
  Plan p;
  p.server = find_server_spec("redis");
  ASSERT_NE(p.server, nullptr);
  p.server_options = resolve_server_options(*p.server, json::object());
  EXPECT_FALSE(applying_server_options(p).contains("sentinel_parallel_syncs"));  // independent: no Sentinels
  EXPECT_TRUE(applying_server_options(p).contains("persistence"));
  p.server_options["topology"] = "replicated";
  EXPECT_TRUE(applying_server_options(p).contains("sentinel_parallel_syncs"));
  p.server = find_server_spec("etcd");
  ASSERT_NE(p.server, nullptr);
  p.server_options = resolve_server_options(*p.server, json::object());
  EXPECT_FALSE(applying_server_options(p).contains("persistence"));
}

// The top of the report: the sentence, the counts as the stats checker has them, the workload line; the config
// rows without the settings that do not apply and with -1 resolved.
TEST(ReportSummaryTest, TopOfTheReportSaysWhatWasTested) {
  HistoryBuilder b;
  b.hold(0, "lock-0", 0, 1, 10, 1);
  b.add(2, 1, OpType::kInvoke, "acquire", "lock-0");
  b.add(3, 1, OpType::kFail, "acquire", "lock-0");
  b.fault(4, 8, "partition", {"n1"});
  json c = config({{"nemesis", {"partition"}}, {"lease_margin_ms", -1}, {"pause_ms", -1}, {"drift_ppm", 0}});
  json r = results();
  r["ops"] = {{"ok", 2}, {"fail", 1}, {"info", 0}};
  r["settings_not_applying"] = {"pause_ms", "drift_ppm", "restart_delay_ms"};
  r["server"] = {{"name", "redis"}, {"options", {{"topology", "independent"}, {"persistence", "none"}}}};
  const std::string page = render_report(c, b.history(), r);
  EXPECT_NE(page.find("<strong>Tested:</strong> redlock on 5 local redis 7.0.15 nodes, 5 clients, partition + heal"),
            std::string::npos);
  EXPECT_NE(page.find("Client ops: 2 ok, 1 fail (acquires that found the lock held: contention, not errors), 0 info; "
                      "2 nemesis ops"),
            std::string::npos);
  EXPECT_NE(page.find("lock workload: acquire, hold 0-800 ms, release; no extend"), std::string::npos);
  EXPECT_NE(page.find("10% of the lease, at least 20 ms (default)"), std::string::npos);
  EXPECT_NE(page.find("800 ms (default)"), std::string::npos);
  EXPECT_EQ(page.find("pause_ms"), std::string::npos);
  EXPECT_EQ(page.find("drift_ppm"), std::string::npos);
  EXPECT_NE(page.find("persistence none"), std::string::npos);
  const size_t from = page.find("<section id=\"config\">");
  ASSERT_NE(from, std::string::npos);
  const std::string config_rows = page.substr(from, page.find("</table>", from) - from);
  EXPECT_EQ(config_rows.find(" -1"), std::string::npos) << config_rows;
  EXPECT_NE(config_rows.find("nemesis_interval_s"), std::string::npos);  // read by every nemesis: shown
}

TEST(ReportSummaryTest, ReportNamesTheClientsThatExited) {
  HistoryBuilder b;
  b.add(0, 0, OpType::kInvoke, "acquire", "lock-0");
  b.add(5, 0, OpType::kInfo, "acquire", "lock-0", nullptr, std::nullopt, std::nullopt,
        "external client: exited with status 1");
  json r = results();
  r["valid"] = "unknown";
  r["client_exits"] = client_exits_json(client_exits(b.history()));
  r["client_exits"][0]["stderr_tail"] = {"my_lock: cannot connect"};
  const std::string page = render_report(config({{"lock", "external"}, {"client_cmd", "./my_lock"}}), b.history(), r);
  EXPECT_NE(page.find("id=\"client-exits\""), std::string::npos);
  EXPECT_NE(page.find("every client process exited before any lock op completed (1 exit: p0): nothing was tested"),
            std::string::npos);
  EXPECT_NE(page.find("my_lock: cannot connect"), std::string::npos);
  EXPECT_NE(page.find("href=\"clients/p0.stderr\""), std::string::npos);
}

}  // namespace
}  // namespace report
}  // namespace lockcheck
