// What a test-all night ran with and when: the head of its summary.json (harness/matrix.h).
//   {"matrix": NAME, "started_at": "2026-12-06T03:00:00Z", "finished_at": ..., "duration_s": S, "cores": N,
//    "versions": {"lockcheck": "0.1.0 (git 0123456789ab)", "redis": "7.0.15", "redsync": "v4.13.0", ...},
//    "met": K, "entries": [...]}
// versions: lockcheck's own and the commit it was built from; every server version the runs recorded in their
// results.json (several values joined by ", " when runs disagree: redis as the nodes reported it in INFO server
// at the start of each run, else the local redis-server --version; etcd the local etcd --version); every
// shipped lock adapter an entry ran, with the version it pins (locks/adapters.h); cores: the machine's
// (std::thread::hardware_concurrency).
#pragma once

#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockcheck {

// The commit the binary was built from (generated at build time by cmake/git_commit.cmake).
const char* git_commit();

// "2026-12-06T03:00:00Z" for t; and back (nullopt when s is not in that form).
std::string iso_utc(std::time_t t);
std::optional<std::time_t> parse_iso_utc(const std::string& s);

// The versions a night ran with: `locks` the entries' --lock names, `results` the runs' results.json.
nlohmann::json night_versions(const std::vector<std::string>& locks, const std::vector<nlohmann::json>& results);

// Joins the versions of several shards of one night (several values joined by ", ").
nlohmann::json join_versions(const std::vector<nlohmann::json>& versions);

}  // namespace lockcheck
