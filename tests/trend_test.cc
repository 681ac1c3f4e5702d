// lockcheck trend: the Fisher exact test on known answers, every change kind on made-up nights, the exit
// status, the pages' determinism and escaping, and bad input (exit 2, nothing written).
#include "harness/trend.h"

#include <gtest/gtest.h>

#include <boost/filesystem.hpp>
#include <fstream>
#include <sstream>

#include "core/config.h"
#include "core/exit_codes.h"
#include "harness/cli.h"
#include "tests/support/temp_dir.h"

namespace lockcheck {
namespace {

namespace bfs = boost::filesystem;

TEST(TrendFisherTest, KnownPValues) {
  // The issue's figures: 10/10 -> 4/10 p = 0.011; 10/10 -> 7/10 p = 0.21; 6/6 -> 0/6 p = 0.0022.
  EXPECT_NEAR(fisher_exact_two_sided(4, 10, 10, 10), 0.010836, 1e-5);
  EXPECT_NEAR(fisher_exact_two_sided(7, 10, 10, 10), 0.210526, 1e-5);
  EXPECT_NEAR(fisher_exact_two_sided(0, 6, 6, 6), 0.0021645, 1e-6);
  // Symmetric in the two nights and in found / not found.
  EXPECT_DOUBLE_EQ(fisher_exact_two_sided(10, 10, 4, 10), fisher_exact_two_sided(4, 10, 10, 10));
  EXPECT_NEAR(fisher_exact_two_sided(0, 10, 6, 10), fisher_exact_two_sided(10, 10, 4, 10), 1e-12);
  // Equal rates, one flip, empty sides: no evidence.
  EXPECT_NEAR(fisher_exact_two_sided(5, 10, 5, 10), 1.0, 1e-9);
  EXPECT_NEAR(fisher_exact_two_sided(9, 10, 10, 10), 1.0, 1e-9);
  EXPECT_EQ(fisher_exact_two_sided(0, 0, 3, 3), 1.0);
  // Unequal sizes (R's fisher.test(matrix(c(3,1,1,3),2)) gives 0.4857).
  EXPECT_NEAR(fisher_exact_two_sided(3, 4, 1, 4), 0.485714, 1e-5);
  // Pooled earlier nights: 30/30 against 4/10.
  EXPECT_LT(fisher_exact_two_sided(4, 10, 30, 30), 1e-4);
}

NightEntry entry(const std::string& name, size_t found, size_t n, bool met, std::vector<double> times = {},
                 nlohmann::json settings = {{"lock", "single"}}) {
  NightEntry e;
  e.name = name;
  e.found = found;
  e.n = n;
  e.met = met;
  e.first_anomaly_s = std::move(times);
  e.settings = std::move(settings);
  return e;
}

Night night(const std::string& started_at, std::vector<NightEntry> entries, nlohmann::json versions = {}) {
  Night n;
  n.dir = "/nonexistent/" + started_at;
  n.label = "test-all-m-" + started_at;
  n.matrix = "m";
  n.started_at = started_at;
  n.versions = versions.is_null() ? nlohmann::json::object() : versions;
  n.entries = std::move(entries);
  return n;
}

// The kinds of entry `name`'s changes against `against` ("" any).
std::vector<std::string> kinds(const Trend& t, const std::string& name, const std::string& against = "") {
  std::vector<std::string> out;
  for (const auto& e : t.entries) {
    if (e.name != name) continue;
    for (const auto& c : e.changes) {
      if (against.empty() || c.against == against) out.push_back(c.kind);
    }
  }
  return out;
}

const TrendChange* change(const Trend& t, const std::string& name, const std::string& kind) {
  for (const auto& e : t.entries) {
    for (const auto& c : e.changes) {
      if (e.name == name && c.kind == kind) return &c;
    }
  }
  return nullptr;
}

using Kinds = std::vector<std::string>;

TEST(TrendTest, EveryChangeKind) {
  Night n1 =
      night("2026-12-04T03:00:00Z",
            {entry("half-hidden", 10, 10, true), entry("noise", 10, 10, true), entry("unmet", 1, 3, true),
             entry("met", 0, 3, false), entry("stronger", 0, 6, false), entry("slower", 6, 6, true, {1, 1.2, 1.1, 1.05}),
             entry("faster", 6, 6, true, {8, 8.5, 9, 8.2}), entry("gone", 1, 1, true), entry("config", 3, 3, true)},
            {{"redis", "7.0.15"}, {"redsync", "v4.18.1"}});
  Night n2 = night("2026-12-05T03:00:00Z",
                   {entry("half-hidden", 4, 10, true), entry("noise", 7, 10, true), entry("unmet", 0, 3, false),
                    entry("met", 2, 3, true), entry("stronger", 6, 6, true), entry("slower", 6, 6, true, {5, 5.5, 6, 5.2}),
                    entry("faster", 6, 6, true, {1, 1.5, 2, 1.2}), entry("new", 1, 1, true),
                    entry("config", 3, 3, true, {}, {{"lock", "single"}, {"ttl_ms", 3000}})},
                   {{"redis", "7.0.15"}, {"redsync", "v4.19.0"}});
  auto t = compute_trend({n2, n1}, 0.05);  // given newest first: ordered by start
  ASSERT_EQ(t->nights.size(), 2u);
  EXPECT_EQ(t->nights[0].started_at, "2026-12-04T03:00:00Z");
  EXPECT_EQ(kinds(*t, "half-hidden"), Kinds{"weaker"});
  ASSERT_TRUE(change(*t, "half-hidden", "weaker")->p);
  EXPECT_NEAR(*change(*t, "half-hidden", "weaker")->p, 0.0108, 1e-4);
  EXPECT_NE(change(*t, "half-hidden", "weaker")->detail.find("p = 0.011"), std::string::npos);
  EXPECT_EQ(kinds(*t, "noise"), Kinds{});  // p = 0.21: noise
  EXPECT_EQ(kinds(*t, "unmet"), Kinds{"expectation newly unmet"});
  EXPECT_EQ(kinds(*t, "met"), Kinds{"expectation newly met"});
  EXPECT_EQ(kinds(*t, "stronger"), (Kinds{"expectation newly met", "stronger"}));
  EXPECT_EQ(kinds(*t, "slower"), Kinds{"slower"});
  EXPECT_EQ(kinds(*t, "faster"), Kinds{"faster"});
  EXPECT_EQ(kinds(*t, "gone"), Kinds{"gone"});
  EXPECT_EQ(kinds(*t, "new"), Kinds{"new"});
  EXPECT_EQ(kinds(*t, "config"), Kinds{"changed config"});
  EXPECT_EQ(change(*t, "config", "changed config")->detail, "ttl_ms (none) -> 3000");
  EXPECT_EQ(t->version_changes, Kinds{"redsync v4.18.1 -> v4.19.0"});
  EXPECT_TRUE(t->worse());
  // The json: p of the weaker entry, the grid cells, worse.
  const nlohmann::json j = trend_json(*t);
  EXPECT_TRUE(j["worse"].get<bool>());
  bool seen = false;
  for (const auto& e : j["entries"]) {
    if (e["name"] == "half-hidden") {
      seen = true;
      EXPECT_NEAR(e["changes"][0]["p"].get<double>(), 0.0108, 1e-4);
      EXPECT_EQ(e["nights"][1]["found"], 4);
    }
    if (e["name"] == "new") EXPECT_TRUE(e["nights"][0].is_null());
  }
  EXPECT_TRUE(seen);
  // Worst first in the summary section: the newly unmet entry before the weaker one before the rest.
  const std::string section = trend_summary_section(*t, "trend.html");
  const auto unmet = section.find("data-entry=\"unmet\""), weaker = section.find("data-entry=\"half-hidden\""),
             newer = section.find("data-entry=\"new\"");
  ASSERT_NE(unmet, std::string::npos);
  EXPECT_LT(unmet, weaker);
  EXPECT_LT(weaker, newer);
  EXPECT_NE(section.find("redsync v4.18.1 -&gt; v4.19.0"), std::string::npos);
}

TEST(TrendTest, OneFlipIsNoiseAndNothingWorse) {
  auto t = compute_trend({night("2026-12-04T03:00:00Z", {entry("a", 10, 10, true, {1, 2, 3})}),
                          night("2026-12-05T03:00:00Z", {entry("a", 9, 10, true, {1.5, 2.5, 3.5})})},
                         0.05);
  EXPECT_TRUE(t->entries[0].changes.empty());
  EXPECT_FALSE(t->worse());
  EXPECT_NE(trend_summary_section(*t, "trend.html").find("no-changes"), std::string::npos);
  // A single night: a grid, no comparison.
  auto one = compute_trend({night("2026-12-05T03:00:00Z", {entry("a", 9, 10, true)})}, 0.05);
  EXPECT_TRUE(one->entries[0].changes.empty());
  EXPECT_NE(trend_summary_section(*one, "trend.html").find("No earlier night"), std::string::npos);
}

TEST(TrendTest, TwoTimesASideAreTooFewForSlower) {
  // 3.0 s then 3.5 s on 2 seeds each (spread 0.5 s): a real pair of quick-matrix nights, noise.
  auto t = compute_trend({night("2026-12-04T03:00:00Z", {entry("a", 2, 2, true, {2.9, 3.1})}),
                          night("2026-12-05T03:00:00Z", {entry("a", 2, 2, true, {3.4, 3.6})})},
                         0.05);
  EXPECT_TRUE(t->entries[0].changes.empty());
}

TEST(TrendTest, PooledEarlierNightsSeeASlowSlide) {
  // 10/10, 10/10, 10/10, then 6/10: against the previous night p = 0.087 (noise at 0.05), against the 30 pooled
  // seeds p < 0.001: weaker against the earlier nights.
  auto t = compute_trend({night("2026-12-01T03:00:00Z", {entry("a", 10, 10, true)}),
                          night("2026-12-02T03:00:00Z", {entry("a", 10, 10, true)}),
                          night("2026-12-03T03:00:00Z", {entry("a", 10, 10, true)}),
                          night("2026-12-04T03:00:00Z", {entry("a", 6, 10, true)})},
                         0.05);
  EXPECT_EQ(kinds(*t, "a", "previous night"), Kinds{});
  EXPECT_EQ(kinds(*t, "a", "earlier nights"), Kinds{"weaker"});
  EXPECT_TRUE(t->worse());
  // --alpha 0.0001: not significant any more.
  EXPECT_FALSE(compute_trend(t->nights, 0.0001)->worse());
}

TEST(TrendTest, BadInputInCompute) {
  EXPECT_THROW(compute_trend({}, 0.05), ConfigError);
  Night a = night("2026-12-04T03:00:00Z", {entry("a", 1, 1, true)});
  Night b = a;
  b.dir = "/elsewhere";
  try {
    compute_trend({a, b}, 0.05);
    ADD_FAILURE() << "one night given twice was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("given twice"), std::string::npos) << e.what();
  }
  for (double alpha : {0.0, 1.0, -1.0}) EXPECT_THROW(compute_trend({a}, alpha), ConfigError);
  Night c = a;
  c.started_at = "yesterday";
  EXPECT_THROW(compute_trend({c}, 0.05), ConfigError);
}

// Fuzzing (fuzz/trend_summary.cc) found "n": 3.9e19 in a summary.json: nlohmann's get<size_t> of that double is
// undefined behaviour (UBSan). A count is a non-negative integer, or the night is refused naming the field.
TEST(TrendTest, FuzzACountThatIsNotANonNegativeIntegerIsRefused) {
  for (const char* n : {"3.92234e19", "2.5", "-1", "\"10\""}) {
    const auto j = nlohmann::json::parse(std::string(R"({"matrix": "m", "started_at": "2026-12-04T03:00:00Z",
        "entries": [{"name": "a", "n": )") + n + R"(, "found": 0, "met": true}]})");
    try {
      night_from_json(j, "night1");
      ADD_FAILURE() << n << " accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("\"n\" must be a non-negative integer"), std::string::npos) << e.what();
    }
  }
}

TEST(TrendTest, PageIsDeterministicEscapedAndHasTheGrid) {
  auto t = compute_trend({night("2026-12-04T03:00:00Z", {entry("<b>x</b>", 10, 10, true)}, {{"redis", "<7>"}}),
                          night("2026-12-05T03:00:00Z", {entry("<b>x</b>", 2, 10, false)})},
                         0.05);
  const std::string html = trend_html(*t);
  EXPECT_EQ(html, trend_html(*t));
  EXPECT_EQ(html.find("<b>x</b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;x&lt;/b&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<7>"), std::string::npos);
  EXPECT_NE(html.find("id=\"grid\""), std::string::npos);
  EXPECT_NE(html.find("data-found=\"2\" data-n=\"10\">2</td>"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);  // self-contained: no external asset
}

// A judged night's folder as test-all writes it (only summary.json matters to the trend).
void write_night(const std::string& dir, const std::string& started_at, size_t found, size_t n, bool met) {
  bfs::create_directories(dir);
  nlohmann::json j{{"matrix", "m"},
                   {"started_at", started_at},
                   {"duration_s", 12.5},
                   {"versions", {{"lockcheck", "0.1.0 (git abc)"}}},
                   {"entries",
                    {{{"name", "e"},
                      {"settings", {{"lock", "single"}}},
                      {"n", n},
                      {"found", found},
                      {"met", met},
                      {"first_anomaly_s", nlohmann::json::array()}}}}};
  std::ofstream(dir + "/summary.json") << j.dump(2);
}

int run_cli(const std::vector<std::string>& args, std::string* out = nullptr, std::string* err = nullptr) {
  std::ostringstream o, e;
  const int rc = cli_main(args, o, e);
  if (out) *out = o.str();
  if (err) *err = e.str();
  return rc;
}

TEST(TrendCommandTest, ExitStatusAndFiles) {
  TempDir tmp;
  write_night(tmp.file("n1"), "2026-12-04T03:00:00Z", 10, 10, true);
  write_night(tmp.file("n2"), "2026-12-05T03:00:00Z", 9, 10, true);
  write_night(tmp.file("n3"), "2026-12-06T03:00:00Z", 4, 10, true);
  std::string out;
  EXPECT_EQ(run_cli({"trend", tmp.file("n1"), tmp.file("n2"), "--out", tmp.file("t0")}, &out), 0) << out;
  EXPECT_TRUE(bfs::exists(tmp.file("t0/trend.html")));
  EXPECT_TRUE(bfs::exists(tmp.file("t0/trend.json")));
  // Given in any order: ordered by start; tonight 4/10 after 9/10 and 10/10: weaker, exit 1.
  EXPECT_EQ(run_cli({"trend", tmp.file("n3"), tmp.file("n1"), tmp.file("n2"), "--out", tmp.file("t1")}, &out), 1)
      << out;
  EXPECT_NE(out.find("WORSE"), std::string::npos) << out;
  const nlohmann::json j = read_json_file(tmp.file("t1/trend.json"));
  EXPECT_EQ(j["nights"][2]["started_at"], "2026-12-06T03:00:00Z");
  // Rendering is the same on every run.
  run_cli({"trend", tmp.file("n3"), tmp.file("n1"), tmp.file("n2"), "--out", tmp.file("t2")});
  std::ifstream a(tmp.file("t1/trend.html")), b(tmp.file("t2/trend.html"));
  std::stringstream sa, sb;
  sa << a.rdbuf();
  sb << b.rdbuf();
  EXPECT_EQ(sa.str(), sb.str());
}

TEST(TrendCommandTest, BadInputExitsTwoAndWritesNothing) {
  TempDir tmp;
  write_night(tmp.file("n1"), "2026-12-04T03:00:00Z", 10, 10, true);
  bfs::create_directories(tmp.file("empty"));
  bfs::create_directories(tmp.file("shard"));
  std::ofstream(tmp.file("shard/summary.json"))
      << R"({"matrix":"m","shard":"1/2","started_at":"2026-12-04T03:00:00Z"})";
  bfs::create_directories(tmp.file("broken"));
  std::ofstream(tmp.file("broken/summary.json")) << "{\"matrix\": ";
  write_night(tmp.file("toomany"), "2026-12-05T03:00:00Z", 11, 10, true);
  bfs::create_directories(tmp.file("copy"));
  bfs::copy_file(tmp.file("n1/summary.json"), tmp.file("copy/summary.json"));
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{tmp.file("nope")}, "not a folder"},
      {{tmp.file("empty")}, "no summary.json"},
      {{tmp.file("n1"), tmp.file("shard")}, "shard 1/2"},
      {{tmp.file("n1"), tmp.file("broken")}, "summary.json unreadable"},
      {{tmp.file("n1"), tmp.file("toomany")}, "found 11 of 10"},
      {{tmp.file("n1"), tmp.file("n1")}, "given twice"},
      {{tmp.file("n1"), tmp.file("copy")}, "given twice"},
      {{tmp.file("n1"), "--alpha", "2"}, "--alpha"},
      {{}, "give the test-all folders"},
  };
  for (const auto& [dirs, want] : cases) {
    std::vector<std::string> args = {"trend"};
    args.insert(args.end(), dirs.begin(), dirs.end());
    args.insert(args.end(), {"--out", tmp.file("out")});
    std::string err;
    EXPECT_EQ(run_cli(args, nullptr, &err), kExitUsage) << want;
    EXPECT_NE(err.find(want), std::string::npos) << err;
    EXPECT_FALSE(bfs::exists(tmp.file("out"))) << want;
  }
}

TEST(TrendCommandTest, HistoryKeepsJudgedNightsOfTheMatrix) {
  TempDir tmp;
  write_night(tmp.file("a"), "2026-12-01T03:00:00Z", 10, 10, true);
  write_night(tmp.file("b"), "2026-12-02T03:00:00Z", 10, 10, true);
  write_night(tmp.file("c"), "2026-12-03T03:00:00Z", 10, 10, true);
  bfs::create_directories(tmp.file("shard"));
  std::ofstream(tmp.file("shard/summary.json"))
      << R"({"matrix":"m","shard":"1/2","started_at":"2026-12-04T03:00:00Z"})";
  bfs::create_directories(tmp.file("run-folder"));
  write_night(tmp.file("other"), "2026-12-03T04:00:00Z", 1, 1, true);
  {
    nlohmann::json j = read_json_file(tmp.file("other/summary.json"));
    j["matrix"] = "other";
    std::ofstream(tmp.file("other/summary.json")) << j.dump();
  }
  auto nights = read_history_nights(tmp.path(), "m", 2);
  ASSERT_EQ(nights.size(), 2u);
  EXPECT_EQ(nights[0].started_at, "2026-12-02T03:00:00Z");
  EXPECT_EQ(nights[1].started_at, "2026-12-03T03:00:00Z");
  EXPECT_EQ(read_history_nights(tmp.path(), "", 30).size(), 4u);
  EXPECT_THROW(read_history_nights(tmp.file("nope"), "m", 30), ConfigError);
  std::ofstream(tmp.file("c/summary.json")) << "[";
  EXPECT_THROW(read_history_nights(tmp.path(), "m", 30), ConfigError);
}

}  // namespace
}  // namespace lockcheck

namespace lockcheck {
namespace {

TEST(TrendCommandTest, HistoryFlagsOfTestAllAndMerge) {
  TempDir tmp;
  std::string err;
  EXPECT_EQ(run_cli({"test-all", "--fail-on-trend", "--results", tmp.str()}, nullptr, &err), kExitUsage);
  EXPECT_NE(err.find("--fail-on-trend: needs --history"), std::string::npos) << err;
  EXPECT_EQ(run_cli({"merge", tmp.str(), "--fail-on-trend"}, nullptr, &err), kExitUsage);
  EXPECT_NE(err.find("--fail-on-trend: needs --history"), std::string::npos) << err;
  EXPECT_EQ(run_cli({"test-all", "--history", tmp.file("nope"), "--matrix", "quick", "--results", tmp.file("r")},
                    nullptr, &err),
            kExitUsage);
  EXPECT_NE(err.find("--history: "), std::string::npos) << err;
  EXPECT_FALSE(bfs::exists(tmp.file("r"))) << "a bad history is found before anything runs";
  EXPECT_EQ(run_cli({"test-all", "--history", tmp.str(), "--shard", "1/2", "--results", tmp.file("r")}, nullptr, &err),
            kExitUsage);
  EXPECT_NE(err.find("a shard judges nothing"), std::string::npos) << err;
}

}  // namespace
}  // namespace lockcheck

namespace lockcheck {
namespace {

// A one-shard test-all folder whose runs are recorded (merge judges them; nothing runs), started at `started_at`.
void write_recorded_shard(const std::string& dir, const std::string& started_at, int found) {
  bfs::create_directories(dir);
  std::ofstream(dir + "/shard.json") << R"({"matrix":"m","shard":1,"shards":1,"runs":4})";
  std::ofstream(dir + "/matrix.json") << R"({"name":"m","entries":[{"name":"e","seeds":4,"expect":"invalid"}]})";
  std::ofstream(dir + "/summary.json") << nlohmann::json{{"matrix", "m"}, {"shard", "1/1"}, {"started_at", started_at},
                                                         {"finished_at", started_at}, {"versions", {{"redis", "7"}}}}
                                              .dump();
  std::ofstream jobs(dir + "/jobs.jsonl");
  for (int seed = 1; seed <= 4; ++seed) {
    const bool invalid = seed <= found;
    jobs << nlohmann::json{{"entry", "e"},
                           {"seed", seed},
                           {"exit_code", invalid ? kExitInvalid : kExitValid},
                           {"seconds", 1.0},
                           {"run_dir", ""},
                           {"results", {{"valid", invalid ? "invalid" : "valid"}}}}
                .dump()
         << "\n";
  }
}

TEST(TrendCommandTest, MergeWithHistoryComparesOnlyEarlierNights) {
  TempDir tmp;
  const std::string history = tmp.file("history");
  write_night(history + "/a", "2026-12-01T03:00:00Z", 4, 4, true);
  write_night(history + "/b", "2026-12-02T03:00:00Z", 4, 4, true);
  write_night(history + "/later", "2026-12-09T03:00:00Z", 0, 4, false);  // after tonight: not an earlier night
  write_recorded_shard(tmp.file("shard"), "2026-12-03T03:00:00Z", 0);
  std::string out;
  // Tonight 0/4 against 4/4 and 8/8 earlier: newly unmet (the expectations' exit 1 anyway) and weaker.
  EXPECT_EQ(run_cli({"merge", tmp.file("shard"), "--results", history, "--history", history}, &out), kExitInvalid);
  EXPECT_NE(out.find("since the last nights (2 earlier)"), std::string::npos) << out;
  EXPECT_NE(out.find("weaker (against the earlier nights)"), std::string::npos) << out;
  // The same night merged again, with its first merge now in the history: compared with a and b only.
  EXPECT_EQ(run_cli({"merge", tmp.file("shard"), "--results", tmp.file("again"), "--history", history}, &out),
            kExitInvalid);
  EXPECT_NE(out.find("since the last nights (2 earlier)"), std::string::npos) << out;
  // Tonight 4/4 again: nothing worse; exit 0 with and without --fail-on-trend.
  write_recorded_shard(tmp.file("good"), "2026-12-04T03:00:00Z", 4);
  EXPECT_EQ(run_cli({"merge", tmp.file("good"), "--results", tmp.file("g"), "--history", history, "--fail-on-trend"},
                    &out),
            kExitValid)
      << out;
}

// A shard's jobs.jsonl from another machine: a seed or exit code that is not an integer of its type was taken
// as another number (get<uint64_t>() of -1 wraps to 18446744073709551615; get<int>() truncates 2.5).
TEST(TrendCommandTest, MergeRefusesAJobRecordWhoseIntegersAreNot) {
  for (const char* bad : {R"("seed":-1,"exit_code":0)", R"("seed":1,"exit_code":2.5)",
                          R"("seed":1,"exit_code":4294967296)"}) {
    TempDir tmp;
    write_recorded_shard(tmp.file("shard"), "2026-12-03T03:00:00Z", 0);
    std::ofstream(tmp.file("shard") + "/jobs.jsonl", std::ios::app)
        << "{\"entry\":\"e\"," << bad << R"(,"seconds":1.0,"run_dir":""})" << "\n";
    std::string err;
    EXPECT_EQ(run_cli({"merge", tmp.file("shard"), "--results", tmp.file("m")}, nullptr, &err), kExitUsage) << bad;
    EXPECT_NE(err.find("jobs.jsonl:5: not a run record"), std::string::npos) << bad << ": " << err;
  }
}

}  // namespace
}  // namespace lockcheck

namespace lockcheck {
namespace {

// Per night: each entry's median time to the first anomaly and the lock states the matrix's faults never met.
TEST(TrendTest, PerNightMediansAndNeverMetStates) {
  Night older = night("2026-12-04T03:00:00Z", {entry("e", 3, 4, true, {2.0, 4.0, 9.0})});  // before coverage
  Night tonight = night("2026-12-05T03:00:00Z", {entry("e", 2, 4, true, {1.0, 2.0}), entry("healthy", 0, 1, true)});
  tonight.coverage = {{"faults", 3},
                      {"grid", {{"client-pause", {{"held-late", 2}, {"free", 1}}}}},
                      {"timing", {{"lock-state", 3}}},
                      {"fallbacks", 0}};
  tonight.entries[0].coverage = tonight.coverage;
  auto t = compute_trend({older, tonight}, 0.05);
  std::ostringstream out;
  print_trend_nights(*t, out);
  const std::string text = out.str();
  EXPECT_NE(text.find("  e                               4.0    1.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  healthy                      absent      -\n"), std::string::npos) << text;
  EXPECT_NE(text.find("test-all-m-2026-12-04T03:00:00Z: not recorded\n"), std::string::npos) << text;
  EXPECT_NE(text.find("test-all-m-2026-12-05T03:00:00Z: client-pause never met acquiring, held-early, renewing, "
                      "releasing\n"),
            std::string::npos)
      << text;
  const std::string html = trend_html(*t);
  EXPECT_NE(html.find("id=\"medians\""), std::string::npos);
  EXPECT_NE(html.find("<td class=\"median\" data-median-s=\"4.000\">4.0 s</td>"
                      "<td class=\"median\" data-median-s=\"1.500\">1.5 s</td>"),
            std::string::npos);
  EXPECT_NE(html.find("id=\"never-met\""), std::string::npos);
  EXPECT_NE(html.find("<td>not recorded</td>"), std::string::npos);
  const nlohmann::json j = trend_json(*t);
  EXPECT_TRUE(j["nights"][0]["never_met"].is_null());
  EXPECT_EQ(j["nights"][1]["never_met"]["client-pause"].size(), 4u);
  EXPECT_EQ(j["entries"][0]["nights"][1]["median_first_anomaly_s"], 1.5);
  EXPECT_EQ(j["entries"][0]["nights"][1]["never_met"]["client-pause"][0], "acquiring");
  // Read back from summary.json as test-all writes it.
  nlohmann::json e = {{"name", "e"}, {"n", 4}, {"found", 2}, {"met", true}};
  e["first_anomaly_s"] = {1.0, 2.0};
  e["coverage"] = tonight.coverage;
  nlohmann::json summary = {{"matrix", "m"}, {"started_at", "2026-12-05T03:00:00Z"}};
  summary["coverage"] = tonight.coverage;
  summary["entries"] = nlohmann::json::array({e});
  const Night back = night_from_json(summary, "d");
  EXPECT_EQ(back.coverage, tonight.coverage);
  EXPECT_EQ(back.entries[0].coverage, tonight.coverage);
}

}  // namespace
}  // namespace lockcheck
