// How much sooner holder targeting (--nemesis-targeting holder) finds an anomaly than random targets.
// For each case (lock algorithm + nemesis) and each seed, runs the same short test twice, once per targeting,
// and takes the time to the first anomaly: the earliest from_ns among the mutex checker's anomalies, counted
// from the first op of the history (so cluster start-up is not in it). A run without an anomaly is censored
// at its time limit. Prints, per case and targeting, how many seeds found one and the median time (">T" when
// half or more did not), then every seed's figure; --json FILE writes the same as JSON.
// The two runs of a seed share the schedule's times (same seed): only the aiming differs.
//
//   nemesis_targeting_bench [--seeds N] [--first-seed S] [--time-limit S] [--interval S] [--ttl-ms MS]
//                           [--case LOCK/NEMESIS ...] [--results DIR] [--json FILE]
// Defaults: 10 seeds from 1, 15 s runs, 1 s interval, TTL 500 ms, 5 clients, 1 key, cases
// single/client-pause single/kill single/clock redlock/client-pause redlock/clock (cases whose lock is not in
// the build are skipped). redlock/kill is not a default: redlock's fan-out can hang when nodes are killed
// under it (branch locks, NodeFanout::notice_closed_connections spinning); pass --case redlock/kill to try.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "core/history.h"
#include "harness/runner.h"
#include "locks/lock_client.h"

namespace {

using lockcheck::RunConfig;
using nlohmann::json;

struct Options {
  int seeds = 10;
  uint64_t first_seed = 1;
  double time_limit_s = 15;
  double interval_s = 1;
  int64_t ttl_ms = 500;
  std::vector<std::string> cases;
  std::string results = "";
  std::string json_out;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "nemesis_targeting_bench: " << why << "\n"
            << "usage: nemesis_targeting_bench [--seeds N] [--first-seed S] [--time-limit S] [--interval S]\n"
            << "       [--ttl-ms MS] [--case LOCK/NEMESIS ...] [--results DIR] [--json FILE]\n";
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--seeds")
        o.seeds = std::stoi(value());
      else if (a == "--first-seed")
        o.first_seed = std::stoull(value());
      else if (a == "--time-limit")
        o.time_limit_s = std::stod(value());
      else if (a == "--interval")
        o.interval_s = std::stod(value());
      else if (a == "--ttl-ms")
        o.ttl_ms = std::stoll(value());
      else if (a == "--case")
        o.cases.push_back(value());
      else if (a == "--results")
        o.results = value();
      else if (a == "--json")
        o.json_out = value();
      else
        usage("unknown flag " + a);
    } catch (const std::logic_error&) {
      usage("bad value for " + a);
    }
  }
  if (o.seeds < 1) usage("--seeds must be >= 1");
  if (o.cases.empty()) {
    o.cases = {"single/client-pause", "single/kill", "single/clock", "redlock/client-pause", "redlock/clock"};
  }
  return o;
}

struct FirstAnomaly {
  double seconds = 0;  // from the first op of the history
  std::string kind;    // the mutex checker's kind, e.g. "double-grant"
};

// The run's first mutex anomaly; nullopt when none.
std::optional<FirstAnomaly> time_to_first_anomaly(const std::string& run_dir) {
  std::ifstream in(run_dir + "/results.json");
  if (!in) return std::nullopt;
  json r = json::parse(in);
  int64_t first = std::numeric_limits<int64_t>::max();
  std::string kind;
  for (const auto& c : r.value("checkers", json::array())) {
    if (c.value("checker", "") != "mutex") continue;
    for (const auto& a : c.value("anomalies", json::array())) {
      if (a.contains("from_ns") && a["from_ns"].is_number_integer() && a["from_ns"].get<int64_t>() < first) {
        first = a["from_ns"].get<int64_t>();
        kind = a.value("kind", "?");
      }
    }
  }
  if (first == std::numeric_limits<int64_t>::max()) return std::nullopt;
  lockcheck::History h = lockcheck::read_history(run_dir + "/history.jsonl");
  const int64_t start = h.empty() ? 0 : h.front().time_ns;
  return FirstAnomaly{static_cast<double>(first - start) / 1e9, kind};
}

// Median with censored runs counted as +infinity.
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string fmt(double s, double limit) {
  if (!std::isfinite(s)) return ">" + std::to_string(static_cast<int>(limit)) + "s";
  std::ostringstream o;
  o << std::fixed << std::setprecision(2) << s << "s";
  return o.str();
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  namespace fs = boost::filesystem;
  const fs::path results =
      o.results.empty() ? fs::temp_directory_path() / fs::unique_path("lockcheck-bench-%%%%%%%%") : fs::path(o.results);
  std::cout << "nemesis targeting: time to first mutex anomaly, " << o.seeds << " seeds, " << o.time_limit_s
            << " s runs, interval " << o.interval_s << " s, TTL " << o.ttl_ms << " ms\n"
            << "runs under " << results.string() << "\n";
  json report = json::array();
  std::cout << std::left << std::setw(24) << "case" << std::setw(10) << "targeting" << std::setw(8) << "found"
            << std::setw(10) << "median"
            << "per seed\n";
  for (const auto& c : o.cases) {
    const auto slash = c.find('/');
    if (slash == std::string::npos) usage("--case " + c + ": expected LOCK/NEMESIS");
    const std::string lock = c.substr(0, slash), nemesis = c.substr(slash + 1);
    if (!lockcheck::find_lock_algorithm(lock)) {
      std::cout << std::setw(24) << c << "skipped: lock " << lock << " not in this build\n";
      continue;
    }
    json entry = {{"case", c}};
    for (const std::string targeting : {"random", "holder"}) {
      std::vector<double> times;
      json per_seed = json::array();
      std::map<std::string, int> kinds;
      for (int k = 0; k < o.seeds; ++k) {
        RunConfig cfg;
        cfg.lock = lock;
        cfg.nemesis = {nemesis};
        cfg.nemesis_targeting = targeting;
        cfg.nemesis_interval_s = o.interval_s;
        cfg.time_limit_s = o.time_limit_s;
        cfg.ttl_ms = o.ttl_ms;
        cfg.seed = o.first_seed + static_cast<uint64_t>(k);
        cfg.results_dir = results.string();
        cfg.label = lock + "-" + nemesis.substr(0, nemesis.find(':')) + "-" + targeting;
        cfg.progress = false;
        std::ostringstream sink;
        lockcheck::RunOutcome out = lockcheck::run_test(cfg, sink);
        std::optional<FirstAnomaly> t = out.run_dir.empty() ? std::nullopt : time_to_first_anomaly(out.run_dir);
        times.push_back(t ? t->seconds : std::numeric_limits<double>::infinity());
        per_seed.push_back(t ? json{{"seed", cfg.seed}, {"s", t->seconds}, {"kind", t->kind}}
                             : json{{"seed", cfg.seed}, {"s", nullptr}});
        if (t) kinds[t->kind]++;
        if (out.exit_code == 3) std::cerr << c << " " << targeting << " seed " << cfg.seed << ": " << sink.str();
      }
      const int found =
          static_cast<int>(std::count_if(times.begin(), times.end(), [](double x) { return std::isfinite(x); }));
      const double med = median(times);
      std::cout << std::setw(24) << c << std::setw(10) << targeting << std::setw(8)
                << (std::to_string(found) + "/" + std::to_string(o.seeds)) << std::setw(10) << fmt(med, o.time_limit_s);
      for (double t : times) std::cout << fmt(t, o.time_limit_s) << " ";
      for (const auto& kv : kinds) std::cout << " " << kv.first << " x" << kv.second;
      std::cout << "\n" << std::flush;
      entry[targeting] = {{"found", found},
                          {"median_s", std::isfinite(med) ? json(med) : json(nullptr)},
                          {"first_anomaly", per_seed},
                          {"kinds", kinds}};
    }
    report.push_back(entry);
  }
  if (!o.json_out.empty()) {
    std::ofstream out(o.json_out);
    out << json({{"seeds", o.seeds},
                 {"first_seed", o.first_seed},
                 {"time_limit_s", o.time_limit_s},
                 {"interval_s", o.interval_s},
                 {"ttl_ms", o.ttl_ms},
                 {"cases", report}})
               .dump(2)
        << "\n";
  }
  if (o.results.empty()) {
    boost::system::error_code ec;
    fs::remove_all(results, ec);
  }
  return 0;
}
