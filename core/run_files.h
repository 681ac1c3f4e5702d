// Writing the files of a run folder (config.json, results.json, schedule.json, report.html, index.html): one
// atomic writer, so a reader (the report, `lockcheck check`, a merge of shards, a browser) never sees half a
// file, and a crash mid-write leaves the old file.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace lockcheck {

// Writes content to path.tmp, then renames it onto path. Throws RunFileError naming the file.
class RunFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
void write_file_atomically(const std::string& path, const std::string& content);

// j.dump(2) and a newline, atomically.
void write_json_file(const std::string& path, const nlohmann::json& j);

}  // namespace lockcheck
