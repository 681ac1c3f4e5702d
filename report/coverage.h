// The report's two views of fault timing: the line that links the first anomaly to the fault before it, and
// the table "Fault timing: what each fault met" (results.json's "first_anomaly" and "coverage":
// checkers/first_anomaly.h, checkers/coverage.h). Pure; every string is HTML-escaped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/op.h"

namespace lockcheck {
namespace report {

// "first anomaly at X s (checker): after <fault> on <targets> at Y s (in force | healed Z s before)", with a
// button that shows the fault's start to the anomaly on the lock timeline. From results["first_anomaly"], or
// computed from results and h for a run from before the field. "" when the run found no violation.
std::string first_anomaly_html(const nlohmann::json& results, const History& h, const std::vector<int64_t>& pairs);

// The one sentence of it as plain text (no HTML): what the matrix summary and the console can show.
// "" when first_anomaly is not an object.
std::string first_anomaly_text(const nlohmann::json& first_anomaly);

// A section "Fault timing: what each fault met": per fault, how many starts met each lock state, the states
// never met in words, the timing used and how many fell back. From results["coverage"], or computed from h.
// "" when the run applied no fault.
std::string fault_timing_section_html(const nlohmann::json& results, const History& h,
                                      const std::vector<int64_t>& pairs);

// The grid table alone, for a coverage object (checkers/coverage.h to_json): the run report's and the matrix
// summary's. id: the table's id attribute. "" when it has no fault.
std::string coverage_table_html(const nlohmann::json& coverage, const std::string& id);
// "client-pause never met acquiring, renewing; partition never met releasing", or "" when every fault with a
// known lock state met them all.
std::string never_met_words(const nlohmann::json& coverage);

// The matrix summary's section "Fault timing: what each fault met" from its summary.json (harness/matrix.h):
// the grid over the whole matrix ("coverage"), then per entry with faults its never-met states, timing and
// fallbacks (entries[].coverage). "" when no run of the matrix applied a fault.
std::string matrix_fault_timing_html(const nlohmann::json& summary);

}  // namespace report
}  // namespace lockcheck
