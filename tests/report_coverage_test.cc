// report/coverage.h: the report's line from the first anomaly to the fault before it, the fault-timing table, and
// the matrix summary's fault-timing section; on the report fixtures and hand-written coverage.
#include "report/coverage.h"

#include <gtest/gtest.h>

#include "checkers/coverage.h"
#include "report/report.h"
#include "tests/support/html_checker.h"
#include "tests/support/report_fixtures.h"

namespace lockcheck {
namespace {

using nlohmann::json;

std::string rendered(const History& h, const json& results) {
  const std::string html = render_report(report_test::sample_config(), h, results);
  std::vector<report_test::Tag> tags;
  std::string error;
  EXPECT_TRUE(report_test::parse_tags(html, &tags, &error)) << error;
  return html;
}

TEST(ReportCoverageTest, FirstAnomalyLineComputedForARunFromBeforeTheField) {
  // The double grant at 150 ms; the partition started (completed) at 52 ms and healed at 202 ms: in force.
  const std::string html = rendered(report_test::overlap_history(), report_test::overlap_results());
  EXPECT_NE(html.find("id=\"first-anomaly\" class=\"first-anomaly\">first anomaly at 0.150 s (mutex): after "
                      "partition on n1, n2 at 0.052 s (in force) <button"),
            std::string::npos)
      << html.substr(html.find("first-anomaly"), 300);
  // The button shows the fault's start to the anomaly, padded by at least 50 ms on each side.
  EXPECT_NE(html.find("id=\"first-anomaly-zoom\" data-scroll=\"1\" data-view-a=\"2.000\" data-view-b=\"200.000\""),
            std::string::npos);
}

TEST(ReportCoverageTest, FirstAnomalyLineFromResultsJsonHealedBefore) {
  json results = report_test::overlap_results();
  results["first_anomaly"] = {{"at_s", 12.5},
                              {"checker", "mutex"},
                              {"fault_before",
                               {{"fault", "client-pause"},
                                {"targets", {"p<3>"}},
                                {"start_s", 10.0},
                                {"in_force", false},
                                {"healed_before_s", 0.75},
                                {"lock_state", "held-late"}}}};
  const std::string html = rendered(report_test::overlap_history(), results);
  EXPECT_NE(html.find(">first anomaly at 12.5 s (mutex): after client-pause on p&lt;3&gt; at 10.0 s (healed 0.750 s "
                      "before); the fault met the lock held-late <button"),
            std::string::npos);
  // null: the run found nothing; no line.
  results["first_anomaly"] = nullptr;
  EXPECT_EQ(rendered(report_test::overlap_history(), results).find("id=\"first-anomaly\""), std::string::npos);
}

TEST(ReportCoverageTest, FaultTimingTableOfAnOlderRunSaysNothingWasRecorded) {
  const std::string html = rendered(report_test::overlap_history(), report_test::overlap_results());
  EXPECT_NE(html.find("<h2>Fault timing: what each fault met</h2>"), std::string::npos);
  EXPECT_NE(html.find("<tr data-fault=\"partition\"><td>partition</td>"), std::string::npos);
  EXPECT_NE(html.find("<th>unknown</th>"), std::string::npos);
  EXPECT_NE(html.find("No fault recorded the lock state it met"), std::string::npos);
  EXPECT_NE(html.find("Timing: 2 unknown; 0 of 2 faults fell back"), std::string::npos);
}

TEST(ReportCoverageTest, FaultTimingTableFromResultsJson) {
  json results = report_test::overlap_results();
  results["coverage"] = {{"faults", 4},
                         {"grid", {{"client-pause", {{"held-late", 3}, {"free", 1}}}}},
                         {"timing", {{"lock-state", 4}}},
                         {"fallbacks", 1}};
  const std::string html = rendered(report_test::overlap_history(), results);
  EXPECT_NE(html.find("<tr data-fault=\"client-pause\"><td>client-pause</td><td>1</td><td class=\"never\">0</td>"
                      "<td class=\"never\">0</td><td>3</td>"),
            std::string::npos);
  EXPECT_EQ(html.find("<th>unknown</th>"), std::string::npos);
  EXPECT_NE(html.find("Never met: client-pause never met acquiring, held-early, renewing, releasing."),
            std::string::npos);
  EXPECT_NE(html.find("Timing: 4 lock-state; 1 of 4 faults fell back"), std::string::npos);
}

TEST(ReportCoverageTest, NoFaultNoSection) {
  EXPECT_EQ(report::fault_timing_section_html(json::object(), History{}, {}), "");
  EXPECT_EQ(report::first_anomaly_html(json::object(), History{}, {}), "");
  EXPECT_EQ(report::coverage_table_html(json::object(), "x"), "");
  EXPECT_EQ(report::matrix_fault_timing_html(json::object()), "");
}

TEST(ReportCoverageTest, MatrixSummarySectionAddsUpTheEntries) {
  const json a = {{"faults", 2}, {"grid", {{"kill", {{"free", 2}}}}}, {"timing", {{"random", 2}}}, {"fallbacks", 0}};
  const json b = {{"faults", 1}, {"grid", {{"kill", {{"held-late", 1}}}}}, {"timing", {{"random", 1}}}, {"fallbacks", 0}};
  FaultCoverage all = coverage_from_json(a);
  all.add(coverage_from_json(b));
  const json summary = {{"coverage", to_json(all)},
                        {"entries",
                         {{{"name", "e<1>"}, {"coverage", a}},
                          {{"name", "e2"}, {"coverage", b}},
                          {{"name", "healthy"}, {"coverage", to_json(FaultCoverage{})}}}}};
  const std::string html = report::matrix_fault_timing_html(summary);
  EXPECT_NE(html.find("<tr data-fault=\"kill\"><td>kill</td><td>2</td><td class=\"never\">0</td><td class=\"never\">0"
                      "</td><td>1</td>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("kill never met acquiring, held-early, renewing, releasing."), std::string::npos);
  EXPECT_NE(html.find("<tr><td>e&lt;1&gt;</td><td>2</td><td>kill never met acquiring, held-early, held-late, renewing, "
                      "releasing</td><td>2 random</td><td>0</td></tr>"),
            std::string::npos);
  EXPECT_EQ(html.find("healthy"), std::string::npos);  // no fault: no row
  EXPECT_EQ(report::never_met_words(to_json(all)), "kill never met acquiring, held-early, renewing, releasing");
}

}  // namespace
}  // namespace lockcheck
