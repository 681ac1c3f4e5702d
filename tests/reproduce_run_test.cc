// `lockcheck reproduce` end to end: a real single + client-pause run (redis-server on loopback), shrunk to one
// fault, and the command it writes run again. Kept short: 8 s runs, 3 tries per candidate, 2 of 3 to keep.
#include "harness/reproduce.h"

#include <gtest/gtest.h>

#include <boost/filesystem.hpp>
#include <fstream>
#include <sstream>

#include "core/exit_codes.h"
#include "core/history.h"
#include "harness/cli.h"
#include "harness/rerun.h"
#include "harness/runner.h"
#include "sys/process.h"
#include "tests/support/ci.h"
#include "tests/support/test_util.h"

namespace lockcheck {
namespace {

using testing_util::have_redis_server;

TEST(ReproduceRunTest, ShrinksAClientPauseRunToOneFaultAndItsCommandReproduces) {
  LOCKCHECK_NEED(have_redis_server(), "redis-server is not installed");
  TempDir dir;
  RunConfig c;
  c.results_dir = dir.str() + "/results";
  c.progress = false;
  c.lock = "single";
  c.nemesis = {"client-pause"};
  c.nemesis_targeting = "holder";
  c.time_limit_s = 8;
  c.nemesis_interval_s = 1;
  c.ttl_ms = 300;
  c.seed = 11;
  std::ostringstream out;
  RunOutcome first = run_test(c, out);
  ASSERT_EQ(first.exit_code, kExitInvalid) << out.str();

  std::ostringstream rout;
  ReproduceOptions o;
  o.tries = 3;
  o.rate = 2;
  o.budget_min = 5;
  const int code = reproduce(first.run_dir, o, rout, LOCKCHECK_BINARY);
  ASSERT_EQ(code, kExitInvalid) << rout.str();
  const std::string repro = first.run_dir + "/repro";
  for (const char* f : {"config.json", "schedule.json", "command.txt", "tried.md", "tried.json"}) {
    EXPECT_TRUE(boost::filesystem::exists(repro + "/" + f)) << f;
  }
  const Schedule s = read_schedule_file(repro + "/schedule.json");
  EXPECT_EQ(fault_count(s), 1u) << rout.str();
  const RunConfig min = read_run_config(repro);
  // Cut to just past the first anomaly (1.2 x when the tries showed it + 1 s, or looser): shorter than the run,
  // by how much depends on when the anomaly came in the tries (later on a loaded machine).
  EXPECT_LT(min.time_limit_s, c.time_limit_s) << rout.str();
  const nlohmann::json results = read_json_file(first.run_dir + "/results.json");
  ASSERT_TRUE(results.contains("reproduction"));
  EXPECT_EQ(results["reproduction"]["minimal"]["faults"], 1);
  // The baseline tries' faults were matched to the stored run's by role, one pair per try.
  ASSERT_TRUE(results["reproduction"]["original"].contains("faults_matched_by_role")) << results.dump(1);
  EXPECT_EQ(results["reproduction"]["original"]["faults_matched_by_role"].size(), 3u);
  std::ifstream report(first.run_dir + "/report.html");
  std::stringstream html;
  html << report.rdbuf();
  EXPECT_NE(html.str().find("Minimal reproduction"), std::string::npos);

  // The written command, as a user would run it (its results go to the original results folder).
  std::ifstream cmd_file(repro + "/command.txt");
  std::string cmd;
  std::getline(cmd_file, cmd);
  std::istringstream words(cmd);
  std::vector<std::string> argv;
  for (std::string w; words >> w;) argv.push_back(w);
  ASSERT_GE(argv.size(), 6u);
  EXPECT_EQ(argv[0], "lockcheck");
  argv[0] = LOCKCHECK_BINARY;
  argv.push_back("--no-progress");
  const auto r = run_command(argv, std::chrono::seconds(120));
  EXPECT_EQ(r.exit_code, kExitInvalid) << r.out;
  const std::string again = testing_util::latest_run(c.results_dir);
  const nlohmann::json again_results = read_json_file(again + "/results.json");
  const History h = read_history(again + "/history.jsonl");
  bool same_kind = false;
  const auto want = results["reproduction"]["anomaly"];
  for (const auto& k : anomaly_kinds(again_results, &h)) {
    same_kind = same_kind || (k.kind.checker == want["checker"] && k.kind.kind == want["kind"]);
  }
  EXPECT_TRUE(same_kind) << r.out;
  // The replayed schedule is the run's own schedule.json, one fault.
  EXPECT_EQ(fault_count(read_schedule_file(again + "/schedule.json")), 1u);

  // `lockcheck rerun RUN/repro`, as reproduce prints it: runs the case beside RUN and says whether the anomaly came
  // back (it was "malformed history: RUN/repro/history.jsonl: cannot open").
  EXPECT_NE(rout.str().find("lockcheck rerun " + repro), std::string::npos) << rout.str();
  std::ostringstream rerun_out, rerun_err;
  const int rerun_code = cli_main({"rerun", repro}, rerun_out, rerun_err);
  EXPECT_TRUE(rerun_code == kExitInvalid || rerun_code == kExitValid) << rerun_out.str() << rerun_err.str();
  EXPECT_NE(rerun_out.str().find("rerun of the minimal reproduction " + repro + ": anomaly " +
                                 want["checker"].get<std::string>() + ":" + want["kind"].get<std::string>()),
            std::string::npos)
      << rerun_out.str();
  EXPECT_NE(rerun_out.str().find("1 of the schedule's 1 faults started"), std::string::npos) << rerun_out.str();
  const std::string rerun_dir = testing_util::latest_run(c.results_dir);
  EXPECT_NE(rerun_dir, again);  // a new run, in the results folder beside RUN (not inside it)
  const nlohmann::json rerun_results = read_json_file(rerun_dir + "/results.json");
  EXPECT_EQ(rerun_results["rerun"]["reproduction"], true) << rerun_results.dump(1);
  if (rerun_results["rerun"]["came_back"] == true) EXPECT_EQ(rerun_code, kExitInvalid);
}

TEST(ReproduceRunTest, ScheduleFlagReplaysAStoredScheduleByHand) {
  LOCKCHECK_NEED(have_redis_server(), "redis-server is not installed");
  TempDir dir;
  // Two faults planned by hand; the run takes its nemesis from the file (no --nemesis).
  nlohmann::json plan = nlohmann::json::array();
  plan.push_back({{"at_ms", 300}, {"nemesis", "pause"}, {"phase", "start"}, {"f", "pause"}, {"targets", {"n1"}},
                  {"detail", nlohmann::json::object()}, {"duration_ms", 400}});
  plan.push_back({{"at_ms", 700}, {"nemesis", "pause"}, {"phase", "stop"}, {"f", "resume"}});
  plan.push_back({{"at_ms", 1200}, {"nemesis", "pause"}, {"phase", "start"}, {"f", "pause"}, {"targets", {"n2"}},
                  {"detail", nlohmann::json::object()}, {"duration_ms", 400}});
  std::ofstream(dir.file("schedule.json")) << nlohmann::json({{"nemesis", {"pause"}}, {"plan", plan}}).dump();
  std::ostringstream out, err;
  const int code = cli_main({"run", "--lock", "single", "--nodes", "3", "--time-limit", "2", "--results",
                             dir.str() + "/results", "--schedule", dir.file("schedule.json"), "--no-progress"},
                            out, err);
  EXPECT_TRUE(code == kExitValid || code == kExitInvalid) << out.str() << err.str();
  const std::string run = testing_util::latest_run(dir.str() + "/results");
  const History h = read_history(run + "/history.jsonl");
  std::vector<std::string> faults;
  for (const auto& op : h) {
    if (op.process == kNemesis && op.is_invoke()) faults.push_back(std::string(op.f) + " " + op.value["targets"].dump());
  }
  // Both pauses and their resumes (the second healed when the run ended), at the stored targets.
  ASSERT_EQ(faults.size(), 4u) << out.str();
  EXPECT_EQ(faults[0], "pause [\"n1\"]");
  EXPECT_EQ(faults[1], "resume [\"n1\"]");
  EXPECT_EQ(faults[2], "pause [\"n2\"]");
  const RunConfig cfg = read_run_config(run);
  EXPECT_EQ(cfg.nemesis, std::vector<std::string>{"pause"});

  // rerun of such a run replays its schedule too (the seed alone would plan other faults).
  std::ostringstream again;
  rerun(run, again);
  EXPECT_NE(again.str().find("fault timeline matched 2 of 2 faults"), std::string::npos) << again.str();
  const History h2 = read_history(testing_util::latest_run(dir.str() + "/results") + "/history.jsonl");
  std::vector<std::string> faults2;
  for (const auto& op : h2) {
    if (op.process == kNemesis && op.is_invoke()) faults2.push_back(std::string(op.f) + " " + op.value["targets"].dump());
  }
  EXPECT_EQ(faults2, faults);
}

}  // namespace
}  // namespace lockcheck
