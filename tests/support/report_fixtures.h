// Fixed histories, configs and results for the report tests: small ones whose every bar and band is known, and
// a large generated one (deterministic, seeded) for the size and render-time checks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/op.h"

namespace lockcheck {
namespace report_test {

using nlohmann::json;

class HistoryBuilder {
 public:
  // Appends an op at t_ms (ms since start); returns its index.
  int64_t add(double t_ms, Process p, OpType type, const std::string& f, const std::string& key = "",
              json value = nullptr, std::optional<int64_t> token = std::nullopt,
              std::optional<int64_t> validity_ms = std::nullopt, const std::string& error = "") {
    Op op;
    op.index = static_cast<int64_t>(h_.size());
    op.time_ns = static_cast<int64_t>(t_ms * 1e6);
    op.process = p;
    op.type = type;
    op.f = f;
    op.key = key;
    op.value = std::move(value);
    op.token = token;
    op.validity_ms = validity_ms;
    op.error = error;
    h_.push_back(std::move(op));
    return h_.back().index;
  }
  // A whole acquire (invoke at t0, ok at t1) and, when t_release >= 0, the release (invoke, ok 1 ms later).
  void hold(Process p, const std::string& key, double t0, double t1, double t_release, int64_t token,
            std::optional<int64_t> validity_ms = std::nullopt) {
    add(t0, p, OpType::kInvoke, "acquire", key);
    add(t1, p, OpType::kOk, "acquire", key, nullptr, token, validity_ms);
    if (t_release >= 0) {
      add(t_release, p, OpType::kInvoke, "release", key);
      add(t_release + 1, p, OpType::kOk, "release", key);
    }
  }
  void fault(double t_start, double t_stop, const std::string& fault, const std::vector<std::string>& targets) {
    json start = {{"fault", fault}, {"phase", "start"}, {"targets", targets}, {"detail", {{"why", "test"}}}};
    add(t_start, kNemesis, OpType::kInvoke, fault, "", start);
    add(t_start + 2, kNemesis, OpType::kOk, fault, "", start);
    if (t_stop >= 0) {
      json stop = {{"fault", fault}, {"phase", "stop"}, {"targets", targets}};
      add(t_stop, kNemesis, OpType::kInvoke, "heal", "", stop);
      add(t_stop + 2, kNemesis, OpType::kOk, "heal", "", stop);
    }
  }
  const History& history() const { return h_; }
  size_t size() const { return h_.size(); }
  // Sorts the ops by time (stable) and renumbers them, as a recorded history would be.
  History sorted() const {
    History h = h_;
    std::stable_sort(h.begin(), h.end(), [](const Op& a, const Op& b) { return a.time_ns < b.time_ns; });
    for (size_t i = 0; i < h.size(); ++i) h[i].index = static_cast<int64_t>(i);
    return h;
  }

 private:
  History h_;
};

// Three processes take turns on lock-0: no overlap.
inline History valid_history() {
  HistoryBuilder b;
  b.hold(0, "lock-0", 0, 2, 100, 1, 1000);
  b.hold(1, "lock-0", 120, 123, 250, 2, 1000);
  b.hold(2, "lock-0", 260, 262, 400, 3, 1000);
  return b.history();
}

// Process 1 holds lock-0 from 2 ms; its lease (100 ms) ends, process 2 acquires at 150 ms while 1 still holds it
// to 300 ms; a partition of n1,n2 runs 52..202 ms, and a pause of n3 starts at 352 ms and is never healed;
// process 3 never releases; process 4's acquire times out (info). In time order, indices as commented.
inline History overlap_history() {
  HistoryBuilder b;
  json part_start = {
      {"fault", "partition"}, {"phase", "start"}, {"targets", {"n1", "n2"}}, {"detail", {{"grudge", "n1,n2|n3"}}}};
  json part_stop = {{"fault", "partition"}, {"phase", "stop"}, {"targets", {"n1", "n2"}}};
  json pause_start = {{"fault", "pause"}, {"phase", "start"}, {"targets", {"n3"}}};
  b.add(0, 1, OpType::kInvoke, "acquire", "lock-0");                                                  // 0
  b.add(2, 1, OpType::kOk, "acquire", "lock-0", nullptr, 10, 100);                                    // 1
  b.add(50, kNemesis, OpType::kInvoke, "partition", "", part_start);                                  // 2
  b.add(52, kNemesis, OpType::kOk, "partition", "", part_start);                                      // 3
  b.add(148, 2, OpType::kInvoke, "acquire", "lock-0");                                                // 4
  b.add(150, 2, OpType::kOk, "acquire", "lock-0", nullptr, 11, 100);                                  // 5
  b.add(200, kNemesis, OpType::kInvoke, "heal", "", part_stop);                                       // 6
  b.add(202, kNemesis, OpType::kOk, "heal", "", part_stop);                                           // 7
  b.add(300, 1, OpType::kInvoke, "release", "lock-0");                                                // 8
  b.add(301, 1, OpType::kOk, "release", "lock-0");                                                    // 9
  b.add(320, 2, OpType::kInvoke, "release", "lock-0");                                                // 10
  b.add(321, 2, OpType::kOk, "release", "lock-0");                                                    // 11
  b.add(330, 3, OpType::kInvoke, "acquire", "lock-0");                                                // 12
  b.add(332, 3, OpType::kOk, "acquire", "lock-0", nullptr, 12, 100);                                  // 13
  b.add(350, kNemesis, OpType::kInvoke, "pause", "", pause_start);                                    // 14
  b.add(352, kNemesis, OpType::kOk, "pause", "", pause_start);                                        // 15
  b.add(400, 4, OpType::kInvoke, "acquire", "lock-0");                                                // 16
  b.add(900, 4, OpType::kInfo, "acquire", "lock-0", nullptr, std::nullopt, std::nullopt, "timeout");  // 17
  return b.history();
}

inline json overlap_results() {
  return json{{"run_id", "20261202T101500Z-single-lock"},
              {"valid", "invalid"},
              {"started_at", "2026-12-02T10:15:00Z"},
              {"duration_s", 0.9},
              {"ops", {{"ok", 9}, {"fail", 0}, {"info", 1}}},
              {"checkers",
               {{{"checker", "mutex"},
                 {"valid", "invalid"},
                 {"summary", "1 double grant"},
                 {"anomalies",
                  {{{"kind", "double-grant"},
                    {"description", "p1 and p2 both held lock-0 for 150 ms from t=0.150 s"},
                    {"ops", {1, 5, 8}},
                    {"key", "lock-0"},
                    {"processes", {1, 2}},
                    {"from_ns", 150000000},
                    {"to_ns", 300000000}}}},
                 {"stats", json::object()}},
                {{"checker", "stats"}, {"valid", "valid"}, {"summary", "ok"}, {"anomalies", json::array()}}}},
              {"nodes",
               {{{"name", "n1"}, {"role", "master"}, {"endpoint", "127.0.0.1:40001"}, {"log", "nodes/n1.log"}},
                {{"name", "n2"}, {"role", "master"}, {"endpoint", "127.0.0.1:40002"}, {"log", "nodes/n2.log"}},
                {{"name", "n3"}, {"role", "master"}, {"endpoint", "127.0.0.1:40003"}, {"log", "nodes/n3.log"}}}},
              {"versions", {{"lockcheck", "0.1.0"}, {"redis", "7.0.15"}}}};
}

inline json valid_results() {
  return json{
      {"run_id", "20261202T100000Z-valid"},
      {"valid", "valid"},
      {"started_at", "2026-12-02T10:00:00Z"},
      {"checkers",
       {{{"checker", "mutex"}, {"valid", "valid"}, {"summary", "linearizable"}, {"anomalies", json::array()}}}}};
}

inline json sample_config() {
  return json{{"cluster", "local"},
              {"topology", "independent"},
              {"nodes", 3},
              {"persistence", "none"},
              {"lock", "single"},
              {"workload", "lock"},
              {"nemesis", {"partition", "pause"}},
              {"nemesis_targeting", "random"},
              {"nemesis_interval_s", 5.0},
              {"restart_delay_ms", 0},
              {"time_limit_s", 10.0},
              {"concurrency", 5},
              {"keys", 1},
              {"ttl_ms", 100},
              {"hold_ms_max", -1},
              {"work_ms", -1},
              {"op_timeout_ms", 500},
              {"fencing", false},
              {"client_cmd", ""},
              {"wait_replicas", 0},
              {"checker_timeout_s", 60},
              {"seed", 42},
              {"results_dir", "results"},
              {"redis_server", "redis-server"},
              {"argv", {"lockcheck", "run", "--lock", "single", "--nemesis", "partition,pause", "--seed", "42"}}};
}

// A long lock run: `processes` clients on `keys` keys, each process taking turns on its own key with short
// gaps, faults every 5 s, and a double grant every 20 s (from_ns/to_ns set in the returned results).
struct LargeRun {
  History history;
  json results;
};

inline LargeRun large_run(size_t target_ops, int processes = 10, int keys = 4, uint64_t seed = 7) {
  HistoryBuilder b;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> hold_ms(5, 60), gap_ms(0.5, 8), lat_ms(0.2, 3);
  std::vector<double> next(static_cast<size_t>(processes), 0.0);
  json anomalies = json::array();
  double t = 0;
  double next_fault = 2000;
  int64_t token = 1;
  // Interleave processes in time order: pick the process with the earliest next time.
  while (b.size() < target_ops) {
    size_t p = static_cast<size_t>(std::min_element(next.begin(), next.end()) - next.begin());
    t = next[p];
    if (t >= next_fault) {
      b.fault(next_fault, next_fault + 1500, (static_cast<int>(next_fault / 5000) % 2) ? "pause" : "partition",
              {"n" + std::to_string(1 + static_cast<int>(next_fault / 5000) % 5)});
      next_fault += 5000;
    }
    const std::string key = "lock-" + std::to_string(p % static_cast<size_t>(keys));
    const double t0 = t, t1 = t0 + lat_ms(rng), tr = t1 + hold_ms(rng);
    const int kind = static_cast<int>(rng() % 20);
    if (kind == 0) {
      b.add(t0, static_cast<Process>(p), OpType::kInvoke, "acquire", key);
      b.add(t1, static_cast<Process>(p), OpType::kFail, "acquire", key);
      next[p] = t1 + gap_ms(rng);
      continue;
    }
    b.hold(static_cast<Process>(p), key, t0, t1, tr, token++, 100);
    next[p] = tr + 1 + gap_ms(rng);
  }
  History h = b.sorted();
  const int64_t end_ns = h.back().time_ns;
  for (int64_t at = 20000000000LL; at < end_ns; at += 20000000000LL) {
    anomalies.push_back({{"kind", "double-grant"},
                         {"description", "processes 0 and 4 both held lock-0 (generated)"},
                         {"ops", json::array()},
                         {"key", "lock-0"},
                         {"processes", {0, 4}},
                         {"from_ns", at},
                         {"to_ns", at + 30000000}});
  }
  json results = {{"run_id", "large"},
                  {"valid", anomalies.empty() ? "valid" : "invalid"},
                  {"checkers",
                   {{{"checker", "mutex"},
                     {"valid", anomalies.empty() ? "valid" : "invalid"},
                     {"summary", "generated"},
                     {"anomalies", anomalies}}}}};
  return LargeRun{std::move(h), results};
}

}  // namespace report_test
}  // namespace lockcheck
