// Reading a run folder's JSON for the pages (report.html, index.html): tolerant of missing fields and wrong
// types (a page is rendered for whatever a run left), and the pages' one atomic writer.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/op.h"

namespace lockcheck {
namespace report {

extern const char* const kDash;  // "—": what a page shows for a missing field

// The field name of obj; nullptr when obj is not an object, or the field is missing or null.
const nlohmann::json* find(const nlohmann::json& obj, const char* name);
// A JSON value as plain text (not escaped): strings as they are, numbers and booleans printed, arrays joined.
std::string plain(const nlohmann::json& v);
// The field as escaped text, or "—" when it is missing or empty.
std::string text(const nlohmann::json& obj, const char* name);
// A results.json's verdict ("valid", "invalid", "unknown"): its "valid", else its checkers' merged.
std::string verdict_of(const nlohmann::json& results);

// The file as text; *exists = false (and "") when it cannot be opened. Throws ReportError when it cannot be read.
std::string read_file(const std::string& path, bool* exists);
// The file as JSON; an empty object when missing. Throws ReportError naming the file when it is not JSON.
nlohmann::json parse_json_file(const std::string& path, bool* exists);
// Adds what results.json says beyond the checkers' verdicts, from results["checkers"] and the history:
// "first_anomaly" (checkers/first_anomaly.h: the earliest violation and the fault before it) and "coverage"
// (checkers/coverage.h: which lock state each fault met). pairs: pair_index(h) when the caller has it.
void add_first_anomaly_and_coverage(nlohmann::json& results, const History& h,
                                    const std::vector<int64_t>* pairs = nullptr);

// core/run_files.h's atomic writer; throws ReportError.
void write_atomically(const std::string& path, const std::string& content);

}  // namespace report
}  // namespace lockcheck
