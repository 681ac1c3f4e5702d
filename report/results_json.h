// Reading a run folder's JSON for the pages (report.html, index.html): tolerant of missing fields and wrong
// types (a page is rendered for whatever a run left), and the pages' one atomic writer.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

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
// core/run_files.h's atomic writer; throws ReportError.
void write_atomically(const std::string& path, const std::string& content);

}  // namespace report
}  // namespace lockcheck
