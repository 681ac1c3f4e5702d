// The inline stylesheet and script of the report and the index. The script is optional: without it the page
// shows the whole run; with it the timeline zooms (buttons, drag to select, click the overview) and shows a
// tooltip for every element with data-tip. It marks <body data-js-ok="1"> when it ran without an exception,
// and window.onerror writes data-js-error, so that a browser test can tell.
#pragma once

namespace lockcheck {
namespace report {

// The one stylesheet of every page: report.html, results/index.html, a test-all summary.html and trend.html.
extern const char* const kPageCss;
extern const char* const kReportJs;

}  // namespace report
}  // namespace lockcheck
