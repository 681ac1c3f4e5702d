#include "harness/night.h"

#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "core/version.h"
#include "locks/adapters.h"

namespace lockcheck {

std::string iso_utc(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::ostringstream s;
  s << std::put_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
  return s.str();
}

std::optional<std::time_t> parse_iso_utc(const std::string& s) {
  std::tm tm{};
  std::istringstream in(s);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
  if (in.fail()) return std::nullopt;
  return timegm(&tm);
}

namespace {

// name -> the set of values seen, then joined.
nlohmann::json joined(const std::map<std::string, std::set<std::string>>& seen) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, values] : seen) {
    std::string v;
    for (const auto& x : values) v += (v.empty() ? "" : ", ") + x;
    out[name] = v;
  }
  return out;
}

void add_value(std::map<std::string, std::set<std::string>>& seen, const std::string& name, const nlohmann::json& v) {
  if (v.is_string()) {
    // a joined value ("7.0.15, 7.2.4") splits again, so that joining shards does not nest
    std::string s = v.get<std::string>();
    size_t start = 0;
    while (start <= s.size()) {
      size_t comma = s.find(", ", start);
      const std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!part.empty()) seen[name].insert(part);
      if (comma == std::string::npos) break;
      start = comma + 2;
    }
  } else if (!v.is_null()) {
    seen[name].insert(v.dump());
  }
}

}  // namespace

nlohmann::json night_versions(const std::vector<std::string>& locks, const std::vector<nlohmann::json>& results) {
  std::map<std::string, std::set<std::string>> seen;
  seen["lockcheck"].insert(std::string(kLockcheckVersion) + " (git " + git_commit() + ")");
  for (const auto& r : results) {
    if (!r.is_object()) continue;
    auto v = r.find("versions");
    if (v == r.end() || !v->is_object()) continue;
    for (auto it = v->begin(); it != v->end(); ++it) {
      if (it.key() != "lockcheck") add_value(seen, it.key(), it.value());  // lockcheck's: this binary's, above
    }
  }
  for (const auto& lock : locks) {
    if (const LockAdapter* a = find_lock_adapter(lock)) seen[a->name].insert(a->version);
  }
  return joined(seen);
}

nlohmann::json join_versions(const std::vector<nlohmann::json>& versions) {
  std::map<std::string, std::set<std::string>> seen;
  for (const auto& v : versions) {
    if (!v.is_object()) continue;
    for (auto it = v.begin(); it != v.end(); ++it) add_value(seen, it.key(), it.value());
  }
  return joined(seen);
}

}  // namespace lockcheck
