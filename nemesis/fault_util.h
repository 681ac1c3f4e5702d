// Small helpers shared by the nemeses: deterministic choices from the schedule's RNG, node-count modes, and
// reading and writing the op value shape of nemesis.h. Header-only.
#pragma once

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/random.h"
#include "nemesis/link_faults.h"
#include "nemesis/nemesis.h"

namespace lockcheck {
namespace nemesis_util {

// Fisher-Yates with harness uniform(): the same permutation for the same RNG state.
template <typename T>
void shuffle(std::vector<T>& v, std::mt19937_64& rng) {
  for (size_t i = v.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(uniform(rng, 0, static_cast<int64_t>(i) - 1));
    std::swap(v[i - 1], v[j]);
  }
}

template <typename T>
const T& pick(const std::vector<T>& v, std::mt19937_64& rng) {
  if (v.empty()) throw std::invalid_argument("pick from an empty list");
  return v[static_cast<size_t>(uniform(rng, 0, static_cast<int64_t>(v.size()) - 1))];
}

// How many of n nodes a node fault hits: "one", "minority" (at most (n-1)/2, at least 1), "majority"
// (n/2+1) or "all".
inline size_t count_for(const std::string& mode, size_t n) {
  if (n == 0) return 0;
  if (mode == "one") return 1;
  if (mode == "minority") return std::max<size_t>(1, (n - 1) / 2);
  if (mode == "majority") return std::min(n, n / 2 + 1);
  if (mode == "all") return n;
  throw std::invalid_argument("unknown node-count mode '" + mode + "'");
}
inline const std::vector<std::string>& count_modes() {
  static const std::vector<std::string> m = {"one", "minority", "majority", "all"};
  return m;
}

// Party order for target lists: nodes, then Sentinels, then client slots, then processes; n2 before n10.
inline bool party_less(const std::string& a, const std::string& b) {
  auto rank = [](const std::string& s) {
    const char c = s.empty() ? '?' : s[0];
    return c == 'n' ? 0 : c == 's' ? 1 : c == 'c' ? 2 : c == 'p' ? 3 : 4;
  };
  if (rank(a) != rank(b)) return rank(a) < rank(b);
  if (a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

// k nodes drawn without replacement, in party order.
inline std::vector<std::string> pick_nodes(const std::vector<std::string>& nodes, size_t k, std::mt19937_64& rng) {
  std::vector<std::string> v = nodes;
  shuffle(v, rng);
  v.resize(std::min(k, v.size()));
  std::sort(v.begin(), v.end(), party_less);
  return v;
}

// Holder targeting of a node fault: how many of the nodes that hold the key to hit. At least the planned
// count, and enough to take the key from a majority of the cluster (holding - quorum + 1 with quorum n/2+1:
// what a quorum lock such as Redlock needs to lose), never more than hold it.
inline size_t aimed_count(size_t planned, size_t holding, size_t n) {
  const size_t quorum = n / 2 + 1;
  const size_t to_break = holding >= quorum ? holding - quorum + 1 : 1;
  return std::min(holding, std::max(planned, to_break));
}

// Index of node `name` in cluster.nodes(). Throws std::invalid_argument when there is none.
inline size_t node_index(const Cluster& c, const std::string& name) {
  const auto& nodes = c.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].name == name) return i;
  }
  throw std::invalid_argument("no node named '" + name + "'");
}

// Every client slot of the run, "c0" .. "c<concurrency-1>": what a client fault aimed at the next holder arms.
inline nlohmann::json all_slots(int concurrency) {
  nlohmann::json all = nlohmann::json::array();
  for (int s = 0; s < concurrency; ++s) all.push_back("c" + std::to_string(s));
  return all;
}

inline std::vector<std::string> strings(const nlohmann::json& j) {
  std::vector<std::string> out;
  if (!j.is_array()) return out;
  for (const auto& e : j) {
    if (e.is_string()) out.push_back(e.get<std::string>());
  }
  return out;
}

inline std::string phase_of(const Op& op) {
  if (!op.value.is_object() || !op.value.contains("phase") || !op.value["phase"].is_string()) {
    throw std::invalid_argument("nemesis op " + op.f + ": value has no \"phase\"");
  }
  return op.value["phase"].get<std::string>();
}

inline nlohmann::json detail_of(const Op& op) {
  if (op.value.is_object() && op.value.contains("detail") && op.value["detail"].is_object()) return op.value["detail"];
  return nlohmann::json::object();
}

// The completion of invoke op with type t and value targets/detail replaced (the fault and phase kept).
inline Op complete(const Op& invoke, OpType t, const nlohmann::json& targets, const nlohmann::json& detail,
                   const std::string& error = "") {
  Op done = invoke;
  done.type = t;
  done.value["targets"] = targets;
  done.value["detail"] = detail;
  done.error = error;
  return done;
}


// The stop of a nemesis that cuts links (partition, leader-partition): heals every link `owner` cut; the op is
// ok with the healed pairs, or info with the error and the pairs healed before it.
inline Op heal_owned_links(LinkFaults& links, Network& net, const std::string& owner, const Op& op) {
  nlohmann::json healed = nlohmann::json::array();
  const nlohmann::json targets = op.value.value("targets", nlohmann::json::array());
  try {
    for (const auto& p : links.uncut_all(net, owner)) healed.push_back({p.first, p.second});
  } catch (const ClusterError& e) {
    return complete(op, OpType::kInfo, targets, {{"healed", healed}}, e.what());
  }
  return complete(op, OpType::kOk, targets, {{"healed", healed}});
}

// Teardown of such a nemesis: heals what `owner` cut; if that fails, every link.
inline void teardown_owned_links(LinkFaults& links, Network& net, const std::string& owner) noexcept {
  try {
    links.uncut_all(net, owner);
  } catch (...) {
    links.heal_all(net);
  }
}

}  // namespace nemesis_util
}  // namespace lockcheck
