// The report renderer on fixed histories: well-formed HTML whose timeline has the expected lanes, bars, bands
// and red outlines; lenient about missing fields, strict (a clear error naming the file) about malformed files.
#include "report/report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/filesystem.hpp>
#include <fstream>
#include <set>
#include <sstream>

#include "report/html.h"
#include "report/timeline_svg.h"
#include "tests/support/html_checker.h"
#include "tests/support/report_fixtures.h"
#include "tests/support/temp_dir.h"

namespace lockcheck {
namespace {

using nlohmann::json;
using report_test::count;
using report_test::select;
using report_test::subtree;
using report_test::Tag;

std::vector<Tag> parse_ok(const std::string& html) {
  std::vector<Tag> tags;
  std::string error;
  EXPECT_TRUE(report_test::parse_tags(html, &tags, &error)) << error;
  return tags;
}

size_t occurrences(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

void write_text(const std::string& path, const std::string& text) {
  boost::filesystem::create_directories(boost::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string history_jsonl(const History& h) {
  std::string s;
  for (const Op& op : h) s += json(op).dump() + "\n";
  return s;
}

void write_run(const std::string& dir, const json& config, const History& h, const json& results) {
  write_text(dir + "/config.json", config.dump(2));
  write_text(dir + "/history.jsonl", history_jsonl(h));
  write_text(dir + "/results.json", results.dump(2));
}

TEST(ReportTest, ValidRunHasOneLanePerProcessAndOneBarPerHold) {
  const std::string html =
      render_report(report_test::sample_config(), report_test::valid_history(), report_test::valid_results());
  auto tags = parse_ok(html);
  EXPECT_NE(html.find(">VALID</div>"), std::string::npos);
  EXPECT_NE(html.find("data-verdict=\"valid\""), std::string::npos);
  auto tl = subtree(tags, "timeline");
  ASSERT_FALSE(tl.empty());
  EXPECT_EQ(count(tl, "g", "lane"), 3u);
  EXPECT_EQ(count(tl, "rect", "bar"), 3u);
  EXPECT_EQ(count(tl, "rect", "lease"), 3u);
  EXPECT_EQ(count(tl, "rect", "overrun"), 0u);
  EXPECT_EQ(count(tl, "rect", "band"), 0u);
  EXPECT_EQ(count(tl, "rect", "violation"), 0u);
  EXPECT_EQ(tl.front().attrs.count("data-init-a"), 0u) << "no anomaly: the whole run is the initial view";
  // Lanes are the processes, in order.
  auto lanes = select(tl, "g", "lane");
  EXPECT_EQ(lanes[0].attrs["data-process"], "0");
  EXPECT_EQ(lanes[2].attrs["data-process"], "2");
  // Bar geometry in ms: p1 holds from its ok (123 ms) to its release invoke (250 ms).
  auto bars = select(tl, "rect", "bar");
  EXPECT_EQ(bars[1].attrs["data-process"], "1");
  EXPECT_EQ(bars[1].attrs["data-key"], "lock-0");
  EXPECT_EQ(bars[1].attrs["x"], "123");
  EXPECT_EQ(bars[1].attrs["width"], "127");
  // The lease box: from the acquire's ok (123 ms, not its invoke at 120 ms), as long as the validity (1000 ms),
  // cut at the end of the history (401 ms); the caption says so.
  auto leases = select(tl, "rect", "lease");
  EXPECT_EQ(leases[1].attrs["x"], "123");
  EXPECT_EQ(leases[1].attrs["width"], "278");
  EXPECT_NE(html.find("the lease the client was told (acquire ok + validity, moved by ok extends)"),
            std::string::npos);
  EXPECT_EQ(html.find("acquire invoke + validity"), std::string::npos);
  EXPECT_NE(html.find("No anomalies found."), std::string::npos);
  // Exactly one script element: ours.
  EXPECT_EQ(count(tags, "script", ""), 1u);
  // Self-contained: nothing is loaded from elsewhere.
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
}

TEST(ReportTest, InvalidRunOutlinesTheOverlapInRedOnEachProcessLane) {
  const std::string html =
      render_report(report_test::sample_config(), report_test::overlap_history(), report_test::overlap_results());
  auto tags = parse_ok(html);
  EXPECT_NE(html.find(">INVALID</div>"), std::string::npos);
  EXPECT_NE(html.find("p1 and p2 both held lock-0 for 150 ms from t=0.150 s"), std::string::npos);
  auto tl = subtree(tags, "timeline");
  ASSERT_FALSE(tl.empty());
  // Lanes: p1, p2, p3 (held) and p4 (indeterminate acquire).
  EXPECT_EQ(count(tl, "g", "lane"), 4u);
  EXPECT_EQ(count(tl, "rect", "bar"), 4u);
  EXPECT_EQ(count(tl, "rect", "maybe"), 1u);
  auto violations = select(tl, "rect", "violation");
  ASSERT_EQ(violations.size(), 2u);
  EXPECT_EQ(violations[0].attrs["data-anomaly"], "0");
  EXPECT_EQ(violations[0].attrs["data-process"], "1");
  EXPECT_EQ(violations[1].attrs["data-process"], "2");
  EXPECT_EQ(violations[0].attrs["x"], "150");
  EXPECT_EQ(violations[0].attrs["width"], "150");
  EXPECT_EQ(count(tl, "rect", "violation-mark"), 1u);
  EXPECT_EQ(count(tl, "rect", "ov-violation"), 1u);
  // p1 held past its 100 ms lease (lease from its ok at 2 ms to 102 ms; held to 300 ms).
  auto overruns = select(tl, "rect", "overrun");
  ASSERT_GE(overruns.size(), 1u);
  EXPECT_EQ(overruns[0].attrs["data-process"], "1");
  EXPECT_EQ(overruns[0].attrs["x"], "102");
  // p3 never released: its bar runs to the end of the history (900 ms) and is marked open.
  auto bars = select(tl, "rect", "bar");
  bool found_open = false;
  for (auto& b : bars) {
    if (b.attrs["data-process"] == "3") {
      found_open = true;
      EXPECT_TRUE(report_test::has_class(b, "open"));
      EXPECT_EQ(b.attrs["x"], "332");
      EXPECT_EQ(b.attrs["width"], "568");
    }
  }
  EXPECT_TRUE(found_open);
  // The initial view zooms to the first anomaly.
  EXPECT_EQ(tl.front().attrs.count("data-init-a"), 1u);
  EXPECT_NE(html.find("id=\"zoom-first\""), std::string::npos);
  // The operations of the anomaly, highlighted, with context.
  auto detail = subtree(tags, "anomaly-0");
  ASSERT_FALSE(detail.empty());
  size_t highlighted = 0;
  for (auto& t : select(detail, "tr", "")) {
    if (report_test::has_class(t, "hl")) {
      ++highlighted;
      EXPECT_TRUE(t.attrs["data-index"] == "1" || t.attrs["data-index"] == "5" || t.attrs["data-index"] == "8");
    }
  }
  EXPECT_EQ(highlighted, 3u);
  EXPECT_GE(count(detail, "tr", ""), 10u);  // header, ops, their pairs and neighbours
}

TEST(ReportTest, FaultPeriodsAreBandsAcrossAllLanesAndInThePlots) {
  const std::string html =
      render_report(report_test::sample_config(), report_test::overlap_history(), report_test::overlap_results());
  auto tags = parse_ok(html);
  auto tl = subtree(tags, "timeline");
  auto bands = select(tl, "rect", "band");
  ASSERT_EQ(bands.size(), 2u);
  EXPECT_EQ(bands[0].attrs["data-fault"], "partition");
  EXPECT_EQ(bands[0].attrs["x"], "52");       // from the start's completion
  EXPECT_EQ(bands[0].attrs["width"], "150");  // to the stop's completion (202 ms)
  EXPECT_EQ(bands[1].attrs["data-fault"], "pause");
  EXPECT_EQ(bands[1].attrs["x"], "352");
  EXPECT_EQ(bands[1].attrs["width"], "548");  // never healed: to the end (900 ms)
  // A band spans every lane: its height is the lanes' height.
  auto lanes_svg = select(tl, "svg", "tl-lanes");
  ASSERT_EQ(lanes_svg.size(), 1u);
  EXPECT_EQ(bands[0].attrs["height"], lanes_svg[0].attrs["height"]);
  // Labels with the targets.
  auto labels = select(tl, "text", "fault-label");
  ASSERT_EQ(labels.size(), 2u);
  EXPECT_NE(html.find(">partition n1,n2</text>"), std::string::npos);
  // Plots: latency and throughput, each with both bands.
  EXPECT_EQ(count(tags, "rect", "plot-band"), 4u);
  EXPECT_EQ(count(tags, "svg", "plot-latency"), 1u);
  EXPECT_EQ(count(tags, "svg", "plot-throughput"), 1u);
  EXPECT_EQ(count(tags, "circle", "pt-ok"), 3u);  // three ok acquires (distinct pixels)
  EXPECT_EQ(count(tags, "path", "pt-info"), 1u);  // p4's timeout
  // Nodes: n1 and n2 were partitioned, n3 paused; links to their logs.
  EXPECT_NE(html.find("href=\"nodes/n1.log\""), std::string::npos);
  EXPECT_NE(html.find("href=\"nodes/n3.log\""), std::string::npos);
  EXPECT_EQ(count(tags, "a", "node-log"), 3u);
  // The configuration and the rerun command.
  EXPECT_NE(html.find("lockcheck rerun results/20261202T101500Z-single-lock"), std::string::npos);
  EXPECT_NE(html.find("lockcheck run --lock single --nemesis partition,pause --seed 42"), std::string::npos);
  EXPECT_NE(html.find("redis 7.0.15"), std::string::npos);
  // Unset fields show the value the run used and "(default)" (ttl_ms 100: 80 ms of hold, 33 ms of work), never -1.
  EXPECT_NE(html.find("<span class=\"mono\">hold_ms_max</span> 80 ms (default)"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"mono\">work_ms</span> 33 ms (default)"), std::string::npos);
  EXPECT_EQ(html.find("-1 ms"), std::string::npos);
}

TEST(ReportTest, ConfigurationShowsSetValuesAsTheyAreAndDefaultsWithoutAReadableConfig) {
  json config = report_test::sample_config();
  config["hold_ms_max"] = 70;
  std::string html = render_report(config, report_test::valid_history(), report_test::valid_results());
  EXPECT_NE(html.find("<span class=\"mono\">hold_ms_max</span> 70 ms"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"mono\">work_ms</span> 33 ms (default)"), std::string::npos);
  config["ttl_ms"] = "soon";  // not a config the run could have read: the default in words
  html = render_report(config, report_test::valid_history(), report_test::valid_results());
  EXPECT_NE(html.find("<span class=\"mono\">work_ms</span> a third of the TTL (default) &middot;"),
            std::string::npos);
}

TEST(ReportTest, EmptyEverythingStillRendersWellFormedHtml) {
  const std::string html = render_report(json(), History{}, json());
  auto tags = parse_ok(html);
  EXPECT_NE(html.find(">UNKNOWN</div>"), std::string::npos);
  EXPECT_NE(html.find("nothing to draw"), std::string::npos);
  EXPECT_NE(html.find("No results.json"), std::string::npos);
  EXPECT_NE(html.find("\xE2\x80\x94"), std::string::npos);  // missing fields as a dash
  EXPECT_TRUE(subtree(tags, "timeline").empty());
  // Wrong types everywhere are tolerated too.
  json odd_config = {{"lock", 3}, {"nemesis", "x"}, {"argv", "not an array"}, {"ttl_ms", "soon"}};
  json odd_results = {{"valid", 7},
                      {"checkers", {1, "two", {{"anomalies", {1, {{"ops", "x"}, {"from_ns", "y"}}}}}}},
                      {"nodes", "n1"},
                      {"ops", 5},
                      {"versions", {1, 2}}};
  const std::string odd = render_report(odd_config, report_test::valid_history(), odd_results);
  parse_ok(odd);
  // A run that stopped early says why.
  json stopped = {{"valid", "unknown"}, {"error", "interrupted by signal 2"}, {"checkers", json::array()}};
  const std::string early = render_report(json{{"label", "nightly-<1>"}}, History{}, stopped);
  parse_ok(early);
  EXPECT_NE(early.find("interrupted by signal 2"), std::string::npos);
  EXPECT_NE(early.find("nightly-&lt;1&gt;"), std::string::npos);
}

TEST(ReportTest, EverythingFromTheInputIsEscaped) {
  report_test::HistoryBuilder b;
  const std::string evil = "<script>alert(1)</script>\"'&";
  b.add(0, 0, OpType::kInvoke, "acquire", evil);
  b.add(1, 0, OpType::kOk, "acquire", evil, json{{"x", "</svg><b>"}}, 1);
  b.add(5, 0, OpType::kInvoke, "release", evil);
  b.add(6, 0, OpType::kFail, "release", evil, nullptr, std::nullopt, std::nullopt, "<i>err</i>");
  json start = {{"fault", "<em>f</em>"}, {"phase", "start"}, {"targets", {"<n1>"}}, {"detail", "<d>"}};
  b.add(2, kNemesis, OpType::kInvoke, "x", "", start);
  b.add(3, kNemesis, OpType::kOk, "x", "", start);
  json config = report_test::sample_config();
  config["lock"] = evil;
  config["argv"] = {"lockcheck", "run", "--lock", evil};
  json results = report_test::overlap_results();
  results["run_id"] = evil;
  results["checkers"][0]["anomalies"][0]["description"] = evil;
  results["checkers"][0]["anomalies"][0]["kind"] = evil;
  results["checkers"][0]["anomalies"][0]["ops"] = {0, 1, 2, 3};
  results["checkers"][0]["summary"] = evil;
  results["nodes"][0]["log"] = "javascript:alert(1)";
  results["nodes"][1]["log"] = "../../etc/passwd";
  results["nodes"][2]["name"] = evil;
  results["versions"][evil] = evil;
  const std::string html = render_report(config, b.history(), results);
  parse_ok(html);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(html.find("<i>err"), std::string::npos);
  EXPECT_EQ(html.find("<em>f"), std::string::npos);
  EXPECT_EQ(html.find("</svg><b>"), std::string::npos);
  EXPECT_EQ(occurrences(html, "<script"), 1u);
  EXPECT_EQ(html.find("href=\"javascript"), std::string::npos);
  EXPECT_EQ(html.find("href=\"../"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;"), std::string::npos);
}

TEST(ReportTest, SetWorkloadPlotsLostUpdatesOverTime) {
  report_test::HistoryBuilder b;
  for (int i = 1; i <= 10; ++i) {
    b.add(i * 10, 0, OpType::kInvoke, "add", "set", i);
    b.add(i * 10 + 1, 0, OpType::kOk, "add", "set", i);
  }
  b.add(200, 1, OpType::kInvoke, "read", "set");
  b.add(205, 1, OpType::kOk, "read", "set", json{1, 2, 3, 5, 6, 7, 9});
  const std::string html = render_report(report_test::sample_config(), b.history(), json::object());
  auto tags = parse_ok(html);
  auto lost = select(tags, "svg", "plot-lost");
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].attrs["data-lost"], "3");
  EXPECT_EQ(lost[0].attrs["data-acknowledged"], "10");
  EXPECT_NE(html.find("3 of 10 acknowledged adds are missing from the final read"), std::string::npos);
  EXPECT_EQ(count(tags, "polyline", "lost-line"), 1u);
}

TEST(ReportTest, LongRunsMergeBarsButKeepThemExactAroundAnomalies) {
  auto run = report_test::large_run(40000);
  const std::string html = render_report(report_test::sample_config(), run.history, run.results);
  auto tags = parse_ok(html);
  auto tl = subtree(tags, "timeline");
  size_t holds = 0;
  for (const Op& op : run.history) holds += op.f == "acquire" && op.is_ok();
  const size_t bars = count(tl, "rect", "bar");
  const size_t merged = count(tl, "rect", "agg");
  EXPECT_GT(merged, 0u);
  EXPECT_LT(bars, holds / 2);
  size_t merged_holds = 0;
  for (auto& t : select(tl, "rect", "agg")) merged_holds += std::stoul(t.attrs["data-n"]);
  EXPECT_EQ(bars - merged + merged_holds, holds) << "every hold is drawn, alone or merged";
  EXPECT_EQ(count(tl, "rect", "violation"), 2 * run.results["checkers"][0]["anomalies"].size());
  auto latency = select(tags, "svg", "plot-latency");
  ASSERT_EQ(latency.size(), 1u);
  EXPECT_LT(std::stoul(latency[0].attrs["data-drawn"]), std::stoul(latency[0].attrs["data-points"]));
}

// Many processes, each holding a lock now and then: the holds of a lane are more than a pixel apart and would each
// be a bar. The merge distance grows until the bars fit TimelineOptions::max_bars; every hold of a drawn lane is
// still drawn, alone or merged, and the page stays small.
TEST(ReportTest, ManyProcessesMergeBarsUntilTheyFit) {
  report_test::HistoryBuilder b;
  // 100 processes take turns on one key: a process holds it for 0.5 ms every 100 ms.
  for (int i = 0; i < 40000; ++i) b.hold(i % 100, "lock-0", i, i + 0.1, i + 0.6, i + 1, 100);
  report_test::LargeRun run{b.sorted(), report_test::valid_results()};
  const std::string html = render_report(report_test::sample_config(), run.history, run.results);
  EXPECT_LT(html.size(), size_t{2} << 20);
  auto tags = parse_ok(html);
  auto tl = subtree(tags, "timeline");
  const size_t bars = count(tl, "rect", "bar");
  EXPECT_LE(bars, report::TimelineOptions().max_bars);
  std::set<Process> lanes;
  for (auto& t : select(tl, "g", "lane")) lanes.insert(static_cast<Process>(std::stol(t.attrs["data-process"])));
  size_t holds_in_lanes = 0;
  for (const Op& op : run.history) holds_in_lanes += op.f == "acquire" && op.is_ok() && lanes.count(op.process);
  size_t drawn = 0;
  for (auto& t : select(tl, "rect", "bar")) drawn += t.attrs.count("data-n") ? std::stoul(t.attrs["data-n"]) : 1;
  EXPECT_EQ(drawn, holds_in_lanes) << "every hold of a drawn lane is drawn, alone or merged";
  EXPECT_NE(html.find("px at full width are merged"), std::string::npos);
  EXPECT_EQ(html.find("holds closer than 1 px"), std::string::npos) << "merged over more than a pixel";
}

// A process that keeps its id after an info acquire may have held the lock from then on: thousands of such holds
// are each drawn only while they fit; beyond that they are merged among themselves (never with held ones).
TEST(ReportTest, ManyIndeterminateAcquiresAreMergedWhenTheyDoNotFit) {
  report_test::HistoryBuilder b;
  for (int i = 0; i < 6000; ++i) {
    b.add(i, i % 10, OpType::kInvoke, "acquire", "lock-0");
    b.add(i + 0.5, i % 10, OpType::kInfo, "acquire", "lock-0");
  }
  const std::string html = render_report(report_test::sample_config(), b.sorted(), report_test::valid_results());
  auto tl = subtree(parse_ok(html), "timeline");
  EXPECT_LE(count(tl, "rect", "bar"), report::TimelineOptions().max_bars);
  size_t drawn = 0;
  for (auto& t : select(tl, "rect", "maybe")) drawn += t.attrs.count("data-n") ? std::stoul(t.attrs["data-n"]) : 1;
  EXPECT_EQ(drawn, 6000u);
  EXPECT_GT(count(tl, "rect", "agg"), 0u);
  EXPECT_NE(html.find("indeterminate acquires merged"), std::string::npos);
}

TEST(ReportTest, WriteReportReadsTheRunFolder) {
  TempDir dir;
  write_run(dir.str(), report_test::sample_config(), report_test::overlap_history(), report_test::overlap_results());
  write_report(dir.str());
  const std::string html = read_text(dir.file("report.html"));
  EXPECT_NE(html.find(">INVALID</div>"), std::string::npos);
  EXPECT_FALSE(boost::filesystem::exists(dir.file("report.html.tmp")));
  parse_ok(html);
}

TEST(ReportTest, WriteReportNamesTheMalformedFile) {
  {
    TempDir dir;
    write_run(dir.str(), report_test::sample_config(), report_test::overlap_history(), report_test::overlap_results());
    write_text(dir.file("results.json"), "{\"valid\": ");
    try {
      write_report(dir.str());
      FAIL() << "expected ReportError";
    } catch (const ReportError& e) {
      EXPECT_NE(std::string(e.what()).find(dir.file("results.json")), std::string::npos) << e.what();
    }
  }
  {
    TempDir dir;
    write_run(dir.str(), report_test::sample_config(), report_test::overlap_history(), report_test::overlap_results());
    write_text(dir.file("config.json"), "not json");
    EXPECT_THROW(write_report(dir.str()), ReportError);
  }
  {
    // A number beyond a double's range: nlohmann's out_of_range, not a parse_error (found by fuzzing the trend
    // reader's target, which shares the pattern).
    TempDir dir;
    write_run(dir.str(), report_test::sample_config(), report_test::overlap_history(), report_test::overlap_results());
    write_text(dir.file("results.json"), "{\"valid\": 1e400}");
    EXPECT_THROW(write_report(dir.str()), ReportError);
  }
  {
    TempDir dir;
    write_run(dir.str(), report_test::sample_config(), report_test::overlap_history(), report_test::overlap_results());
    write_text(dir.file("history.jsonl"), history_jsonl(report_test::valid_history()) + "{\"index\": 99}\n");
    try {
      write_report(dir.str());
      FAIL() << "expected ReportError";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("history.jsonl:13"), std::string::npos) << e.what();
    }
  }
  {
    TempDir dir;
    EXPECT_THROW(write_report(dir.str()), ReportError);  // not a run folder
    EXPECT_THROW(write_report(dir.file("missing")), ReportError);
  }
}

TEST(ReportTest, WriteReportToleratesMissingFiles) {
  TempDir dir;
  write_text(dir.file("history.jsonl"), history_jsonl(report_test::overlap_history()));
  write_report(dir.str());
  const std::string html = read_text(dir.file("report.html"));
  EXPECT_NE(html.find(">UNKNOWN</div>"), std::string::npos);
  parse_ok(html);
}

TEST(ReportTest, IndexListsRunsNewestFirstAndSkipsTheLatestLink) {
  TempDir dir;
  json old_results = report_test::valid_results();
  old_results["started_at"] = "2026-12-01T08:00:00Z";
  write_run(dir.file("run-old"), report_test::sample_config(), report_test::valid_history(), old_results);
  write_report(dir.file("run-old"));
  json config = report_test::sample_config();
  config["lock"] = "redlock";
  config["nemesis"] = json::array();
  write_run(dir.file("run-new"), config, report_test::overlap_history(), report_test::overlap_results());
  write_text(dir.file("run-broken/results.json"), "{");
  write_text(dir.file("not-a-run/notes.txt"), "x");
  boost::filesystem::create_directory_symlink("run-new", dir.file("latest"));
  write_text(dir.file("stray.txt"), "x");

  write_index(dir.str());
  const std::string html = read_text(dir.file("index.html"));
  auto tags = parse_ok(html);
  auto rows = select(tags, "tr", "run");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].attrs["data-run"], "run-new");  // 2026-12-02
  EXPECT_EQ(rows[0].attrs["data-verdict"], "invalid");
  EXPECT_EQ(rows[1].attrs["data-run"], "run-old");
  EXPECT_EQ(rows[1].attrs["data-verdict"], "valid");
  EXPECT_EQ(rows[2].attrs["data-run"], "run-broken");
  EXPECT_EQ(rows[2].attrs["data-verdict"], "unreadable");
  EXPECT_NE(html.find("href=\"run-old/report.html\""), std::string::npos);
  EXPECT_EQ(html.find("href=\"run-new/report.html\""), std::string::npos) << "no report rendered yet";
  EXPECT_NE(html.find(">redlock<"), std::string::npos);
  EXPECT_NE(html.find(">none<"), std::string::npos);
  EXPECT_EQ(html.find("data-run=\"latest\""), std::string::npos);
  EXPECT_NE(html.find("<th>violations</th><th>notes</th>"), std::string::npos);
  EXPECT_THROW(write_index(dir.file("missing")), ReportError);
}

TEST(ReportHtmlTest, HelpersEscapeQuoteAndFormat) {
  EXPECT_EQ(report::escape("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(report::ms_coord(12345678), "12.346");
  EXPECT_EQ(report::ms_coord(150000000), "150");
  EXPECT_EQ(report::ms_coord(1500000), "1.5");
  EXPECT_EQ(report::seconds_label(12300000000), "12.300 s");
  EXPECT_EQ(report::duration_label(412000000), "412 ms");
  EXPECT_EQ(report::shell_quote("a b"), "'a b'");
  EXPECT_EQ(report::shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(report::shell_quote("--seed=42"), "--seed=42");
  EXPECT_TRUE(report::is_safe_relative_link("nodes/n1.log"));
  EXPECT_FALSE(report::is_safe_relative_link("javascript:alert(1)"));
  EXPECT_FALSE(report::is_safe_relative_link("/etc/passwd"));
  EXPECT_FALSE(report::is_safe_relative_link("../x"));
  EXPECT_EQ(report::url_path_encode("a b/c"), "a%20b/c");
}

TEST(ReportTest, ALossNoticeIsATickOnTheHoldersLane) {
  report_test::HistoryBuilder b;
  b.hold(1, "lock-0", 0, 2, 300, 1, 100);
  b.add(250, 1, OpType::kInfo, "lost", "lock-0");
  b.hold(2, "lock-0", 310, 311, 400, 2, 100);
  const std::string html = render_report(report_test::sample_config(), b.sorted(), report_test::overlap_results());
  auto tags = parse_ok(html);
  auto tl = subtree(tags, "timeline");
  auto notices = select(tl, "rect", "notice");
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].attrs["data-process"], "1");
  EXPECT_EQ(notices[0].attrs["x"], "250");
  EXPECT_NE(notices[0].attrs["data-tip"].find("said the lock was lost at 0.250 s, 148 ms after its lease ended"),
            std::string::npos)
      << notices[0].attrs["data-tip"];
  EXPECT_NE(html.find("the lock library said the lock was lost"), std::string::npos);
  // Without notices the legend does not mention them.
  const std::string plain =
      render_report(report_test::sample_config(), report_test::overlap_history(), report_test::overlap_results());
  EXPECT_EQ(plain.find("the lock library said the lock was lost"), std::string::npos);
}

}  // namespace
}  // namespace lockcheck

namespace lockcheck {
namespace {

// Issue 36: violations and notes are counted apart (headline and checker table); a nemesis op reads as words
// with its raw fields one click away; the value and error columns of the operations tables wrap.
TEST(ReportTest, ViolationsAndNotesCountedApartAndFaultsInWords) {
  json results = report_test::overlap_results();
  results["checkers"][0]["anomalies"].push_back({{"kind", "lost-before-release"},
                                                 {"severity", "note"},
                                                 {"description", "p2's release failed"},
                                                 {"ops", {11}}});
  results["checkers"][0]["anomalies"].push_back({{"kind", "lost-before-release"},
                                                 {"severity", "note"},
                                                 {"description", "p1's release failed"},
                                                 {"ops", {9}}});
  History h = report_test::overlap_history();
  h[2].value["detail"] = {{"aimed_at", {{"key", "lock-0"}, {"process", 1}}}};
  const std::string html = render_report(report_test::sample_config(), h, results);
  parse_ok(html);
  EXPECT_NE(html.find("id=\"anomaly-count\">1 violation, 2 notes</h3>"), std::string::npos);
  EXPECT_NE(html.find("<th>violations</th><th>notes</th>"), std::string::npos);
  EXPECT_NE(html.find("<td>1</td><td>2</td><td>1 double grant</td>"), std::string::npos);
  EXPECT_NE(html.find("partition n1 n2, aimed at the holder of lock-0 (p1)<details><summary>raw</summary>"),
            std::string::npos);
  EXPECT_NE(html.find("heal n1 n2 (heals partition)<details>"), std::string::npos);
  EXPECT_NE(html.find("&quot;grudge&quot;"), std::string::npos);  // the raw fields, whole
  EXPECT_NE(html.find("<td class=\"error\">"), std::string::npos);
}

}  // namespace
}  // namespace lockcheck

namespace lockcheck {
namespace {

TEST(ReportTest, IndexListsMatrixSummariesAndTrendsBesideTheRuns) {
  TempDir dir;
  write_run(dir.file("run-a"), report_test::sample_config(), report_test::valid_history(),
            report_test::valid_results());
  write_text(dir.file("test-all-quick-1/summary.json"),
             R"({"matrix":"quick","started_at":"2026-12-05T03:00:00Z","met":1,"entries":[{},{}]})");
  write_text(dir.file("test-all-quick-1/summary.html"), "<html></html>");
  write_text(dir.file("test-all-quick-1/trend.html"), "<html></html>");
  write_text(dir.file("test-all-quick-0/summary.json"),
             R"({"matrix":"quick","started_at":"2026-12-04T03:00:00Z","met":2,"entries":[{},{}]})");
  write_text(dir.file("test-all-quick-0/summary.html"), "<html></html>");
  write_text(dir.file("trend-quick-x/trend.json"),
             R"({"worse":true,"nights":[{"matrix":"quick","started_at":"2026-12-04T03:00:00Z"},
                 {"matrix":"<q>","started_at":"2026-12-05T03:00:00Z"}]})");
  write_text(dir.file("trend-quick-x/trend.html"), "<html></html>");
  write_index(dir.str());
  const std::string html = read_text(dir.file("index.html"));
  parse_ok(html);
  const auto summaries = html.find("id=\"summaries\""), trends = html.find("id=\"trends\""),
             runs = html.find("id=\"runs\"");
  ASSERT_NE(summaries, std::string::npos);
  EXPECT_LT(summaries, trends);
  EXPECT_LT(trends, runs);
  EXPECT_LT(html.find("test-all-quick-1/summary.html"), html.find("test-all-quick-0/summary.html"));  // newest first
  EXPECT_NE(html.find("1 of 2 expectations met"), std::string::npos);
  EXPECT_NE(html.find("href=\"test-all-quick-1/trend.html\""), std::string::npos);
  EXPECT_NE(html.find("2 nights, something got worse"), std::string::npos);
  EXPECT_NE(html.find("&lt;q&gt;"), std::string::npos);
  EXPECT_EQ(select(parse_ok(html), "tr", "run").size(), 1u);
}

}  // namespace
}  // namespace lockcheck
