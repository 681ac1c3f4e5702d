#include "report/run_model.h"

#include <cmath>

#include <iomanip>

#include <sstream>

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/flat_table.h"
#include "core/huge_pages.h"
#include "core/nearly_sorted.h"
#include "report/html.h"

namespace lockcheck {
namespace report {

int64_t history_end_ns(const History& h) {
  int64_t end = 0;
  for (const Op& op : h) end = std::max(end, op.time_ns);
  return end;
}

namespace {

// The invoke of a completion, or nullptr.
const Op* invoke_of(const History& h, const std::vector<int64_t>& pairs, size_t i) {
  int64_t p = pairs[i];
  if (p < 0 || static_cast<size_t>(p) >= h.size()) return nullptr;
  return &h[static_cast<size_t>(p)];
}

}  // namespace

std::vector<Hold> lock_holds(const History& h, const HoldOptions& opts) {
  return lock_holds(h, opts, pair_index(h), history_end_ns(h));
}

std::vector<Hold> lock_holds(const History& h, const HoldOptions& opts, const std::vector<int64_t>& pairs,
                             int64_t end) {
  static const Atom kAcquire("acquire"), kExtend("extend"), kRelease("release");
  std::vector<Hold> holds;
  // At most one per completion: reserved address space, touched as holds come (no copy on growth).
  holds.reserve(h.size() / 2 + 1);
  advise_huge_pages(holds);
  // (key id << 32 | process) -> index in holds (most histories have one key or a few).
  std::unordered_map<Atom, uint64_t> key_ids;
  FlatTable<size_t> open;  // the hold's index in holds
  FlatTable<size_t> last;  // the process's latest hold of the key (ok acquire), open or not: for loss notices
  Atom last_key;
  bool have_key = false;
  uint64_t last_id = 0;

  for (size_t i = 0; i < h.size(); ++i) {
    prefetch_pair(h, pairs, i);
    const Op& op = h[i];
    if (!op.is_client()) continue;
    const bool release = op.f == kRelease, acquire = op.f == kAcquire, extend = op.f == kExtend;
    const bool notice = op.is_notice();
    if (!release && !acquire && !extend && !notice) continue;
    if (!have_key || last_key != op.key) {
      auto it = key_ids.emplace(op.key, key_ids.size()).first;
      last_key = op.key;
      have_key = true;
      last_id = it->second;
    }
    const uint64_t pk = (last_id << 32) | static_cast<uint32_t>(op.process);
    if (notice) {
      if (const size_t* at = last.find(pk)) {
        Hold& hold = holds[*at];
        if (!hold.loss_notice_ns) hold.loss_notice_ns = op.time_ns;
      }
    } else if (release && op.is_invoke()) {
      if (const size_t* at = open.find(pk)) {
        Hold& hold = holds[*at];
        hold.to_ns = std::max(hold.from_ns, op.time_ns);
        hold.open = false;
        open.erase(pk);
      }
    } else if (acquire && (op.is_ok() || op.is_info())) {
      const Op* inv = invoke_of(h, pairs, i);
      const int64_t invoke_ns = inv ? inv->time_ns : op.time_ns;
      if (const size_t* at = open.find(pk)) {
        // A second acquire without a release in between: the earlier hold ends where the new one starts.
        Hold& prev = holds[*at];
        prev.to_ns = std::max(prev.from_ns, invoke_ns);
        prev.open = false;
        open.erase(pk);
      }
      Hold hold;
      hold.process = op.process;
      hold.key = op.key;
      hold.invoke_ns = invoke_ns;
      hold.acquire_index = op.index;
      hold.token = op.token;
      // The lease the client was told: validity is what remained at the end of the acquire (the lease checker's
      // window [ok, ok + validity_ms]).
      if (op.validity_ms) hold.lease_end_ns = op.time_ns + *op.validity_ms * 1000000;
      if (op.is_ok()) {
        hold.kind = HoldKind::kHeld;
        hold.from_ns = op.time_ns;
        hold.to_ns = end;
        hold.open = true;
        holds.push_back(hold);
        open[pk] = holds.size() - 1;
        last[pk] = holds.size() - 1;
      } else {
        hold.kind = HoldKind::kIndeterminate;
        hold.from_ns = invoke_ns;
        hold.to_ns = end;
        if (opts.ttl_ms) hold.to_ns = std::min(end, invoke_ns + *opts.ttl_ms * 1000000);
        hold.to_ns = std::max(hold.to_ns, hold.from_ns);
        hold.open = true;
        holds.push_back(hold);
      }
    } else if (extend && op.is_ok() && op.validity_ms) {
      if (const size_t* at = open.find(pk)) holds[*at].lease_end_ns = op.time_ns + *op.validity_ms * 1000000;
    }
  }
  auto by_start = [](const Hold& a, const Hold& b) { return a.from_ns < b.from_ns; };
  if (std::is_sorted(holds.begin(), holds.end(), by_start)) return holds;
  // A stable sort by start: the permutation found on (start, position) pairs, which come nearly in order (the
  // indeterminate holds start at their invoke, earlier than their place), then the holds moved once into it.
  std::vector<int64_t> starts(holds.size());
  for (size_t i = 0; i < holds.size(); ++i) starts[i] = holds[i].from_ns;
  std::vector<Hold> sorted;
  sorted.reserve(holds.size());
  for (size_t i : stable_order(starts)) sorted.push_back(std::move(holds[i]));
  return sorted;
}

namespace {

// The nemesis value of a completion: its own when it describes the fault, else its invoke's.
const nlohmann::json* nemesis_value(const History& h, const std::vector<int64_t>& pairs, size_t i) {
  const Op& op = h[i];
  auto describes = [](const nlohmann::json& v) {
    return v.is_object() && v.contains("fault") && v["fault"].is_string() && v.contains("phase") &&
           v["phase"].is_string();
  };
  if (describes(op.value)) return &op.value;
  const Op* inv = invoke_of(h, pairs, i);
  if (inv && describes(inv->value)) return &inv->value;
  return nullptr;
}

// What a fault measured it dropped, per node ({"n1": {"bytes": B, "files": [...]}, ...}: the power-loss
// nemesis): "dropped n1 127 B in 1 file, n2 nothing; ", or "" when the detail has no such part.
std::string dropped_summary(const nlohmann::json& d) {
  const auto it = d.find("dropped");
  if (it == d.end() || !it->is_object() || it->empty()) return "";
  std::string s = "dropped";
  const char* sep = " ";
  for (const auto& [node, what] : it->items()) {
    const auto bytes = what.find("bytes");
    const auto files = what.find("files");
    if (bytes == what.end() || !bytes->is_number_integer()) continue;
    const int64_t b = bytes->get<int64_t>();
    const size_t n = files != what.end() && files->is_array() ? files->size() : 0;
    s += sep + node + " " +
         (b == 0 && n == 0 ? std::string("nothing")
                           : std::to_string(b) + " B in " + std::to_string(n) + (n == 1 ? " file" : " files"));
    sep = ", ";
  }
  return s + "; ";
}

// The client processes a client fault's stop names (detail "paused" or "crashed"), as marks on band b, found in
// the history between the band's start and the stop (history index stop_i).
void add_client_marks(const History& h, const nlohmann::json& stop_value, size_t stop_i, FaultBand& b) {
  const auto d = stop_value.find("detail");
  if (d == stop_value.end() || !d->is_object()) return;
  const bool pause = d->contains("paused");
  const auto list = d->find(pause ? "paused" : "crashed");
  if (list == d->end() || !list->is_array() || list->empty()) return;
  static const Atom kAcquire("acquire");
  const size_t from_i = b.start_index >= 0 ? static_cast<size_t>(b.start_index) : 0;
  std::vector<std::string> targets;
  std::string words;
  for (const auto& x : *list) {
    if (!x.is_object() || !x.contains("process") || !x["process"].is_number_integer()) continue;
    FaultBand::ClientMark m;
    m.process = x["process"].get<Process>();
    if (x.contains("slot") && x["slot"].is_number_integer()) m.slot = x["slot"].get<int>();
    m.from_ns = b.from_ns;
    m.to_ns = b.to_ns;
    const std::string who =
        process_name(m.process) + (m.slot >= 0 ? " (slot c" + std::to_string(m.slot) + ")" : std::string());
    if (pause) {
      int64_t lasted_ms = 0;
      for (const char* k : {"lasted_ms", "pause_ms"}) {
        if (x.contains(k) && x[k].is_number_integer()) {
          lasted_ms = x[k].get<int64_t>();
          break;
        }
      }
      // The pause point is right after an ok acquire: the process's first one after the arm that its next op
      // follows by most of the pause (else its first one at all).
      std::optional<int64_t> first_ok, paused_at;
      for (size_t j = from_i; j <= stop_i && j < h.size() && !paused_at; ++j) {
        const Op& op = h[j];
        if (op.process != m.process || !op.is_ok() || op.f != kAcquire) continue;
        if (!first_ok) first_ok = op.time_ns;
        for (size_t k = j + 1; k < h.size(); ++k) {
          if (h[k].process != m.process) continue;
          if (h[k].time_ns - op.time_ns >= lasted_ms * 1000000 * 8 / 10) paused_at = op.time_ns;
          break;
        }
      }
      if (paused_at || first_ok) m.from_ns = paused_at ? *paused_at : *first_ok;
      m.to_ns = m.from_ns + lasted_ms * 1000000;
      m.words = who + " paused " + duration_label(lasted_ms * 1000000);
    } else {
      const std::string point = x.contains("point") && x["point"].is_string() ? x["point"].get<std::string>() : "";
      for (size_t j = from_i; j <= stop_i && j < h.size(); ++j) {
        const Op& op = h[j];
        if (op.process == m.process && op.is_info() && !op.is_notice()) {
          m.from_ns = m.to_ns = op.time_ns;
          break;
        }
      }
      m.words = who + " crashed" + (point.empty() ? "" : " " + point);
    }
    targets.push_back(process_name(m.process));
    words += (words.empty() ? "" : "; ") + m.words;
    b.clients.push_back(std::move(m));
  }
  if (b.clients.empty()) return;
  b.targets = targets;
  b.words = words;
}

std::vector<std::string> targets_of(const nlohmann::json& v) {
  std::vector<std::string> out;
  auto it = v.find("targets");
  if (it == v.end() || !it->is_array()) return out;
  for (const auto& t : *it) out.push_back(t.is_string() ? t.get<std::string>() : t.dump());
  return out;
}

}  // namespace

std::vector<FaultBand> fault_bands(const History& h) { return fault_bands(h, pair_index(h), history_end_ns(h)); }

std::vector<FaultBand> fault_bands(const History& h, const std::vector<int64_t>& pairs, int64_t end) {
  std::vector<FaultBand> bands;
  std::map<std::string, std::vector<size_t>> open;  // fault -> indices of its open bands
  for (size_t i = 0; i < h.size(); ++i) {
    const Op& op = h[i];
    if (op.process != kNemesis || op.is_invoke() || op.is_fail()) continue;
    const nlohmann::json* v = nemesis_value(h, pairs, i);
    if (!v) continue;
    const std::string fault = (*v)["fault"].get<std::string>();
    const std::string phase = (*v)["phase"].get<std::string>();
    if (phase == "start") {
      FaultBand b;
      b.fault = fault;
      b.targets = targets_of(*v);
      b.from_ns = op.time_ns;
      b.to_ns = end;
      b.healed = false;
      b.start_index = op.index;
      auto d = v->find("detail");
      if (d != v->end() && !d->is_null()) {
        b.detail = d->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        // A holder-targeted fault that found nothing to aim at says so first, whatever the length of the rest.
        if (d->is_object() && d->contains("aimed") && (*d)["aimed"].is_boolean() && !(*d)["aimed"].get<bool>()) {
          const auto why = d->find("not_aimed_because");
          b.detail = "not aimed at the holder" +
                     (why != d->end() && why->is_string() ? " (" + why->get<std::string>() + ")" : std::string()) +
                     "; " + b.detail;
        }
        // What the fault measured it dropped comes first too (the full detail is in the history).
        if (d->is_object()) b.detail = dropped_summary(*d) + b.detail;
        if (b.detail.size() > 200) b.detail = b.detail.substr(0, 197) + "...";
        // A drifting clock: its rate and direction (clock:drift's rate_ppm; 50000 is 5% fast).
        if (d->is_object() && d->value("mode", "") == "drift" && d->contains("rate_ppm") &&
            (*d)["rate_ppm"].is_number()) {
          const double pct = (*d)["rate_ppm"].get<double>() / 10000.0;
          std::ostringstream w;
          w << "runs " << std::setprecision(3) << std::fabs(pct) << "% " << (pct >= 0 ? "fast" : "slow");
          b.words = w.str();
        }
      }
      bands.push_back(b);
      open[fault].push_back(bands.size() - 1);
    } else if (phase == "stop") {
      for (size_t bi : open[fault]) {
        bands[bi].to_ns = std::max(bands[bi].from_ns, op.time_ns);
        bands[bi].healed = true;
      }
      if (!open[fault].empty()) add_client_marks(h, *v, i, bands[open[fault].back()]);
      open[fault].clear();
    }
  }
  std::stable_sort(bands.begin(), bands.end(),
                   [](const FaultBand& a, const FaultBand& b) { return a.from_ns < b.from_ns; });
  return bands;
}

std::vector<LatencyPoint> acquire_latencies(const History& h) { return acquire_latencies(h, pair_index(h)); }

std::vector<LatencyPoint> acquire_latencies(const History& h, const std::vector<int64_t>& pairs) {
  static const Atom kAcquire("acquire");
  std::vector<LatencyPoint> points;
  // A point needs an invoke and its completion: at most h.size() / 2 of them. Reserved address space (touched
  // as the points come): the vector is never moved, and a contended history's 10^5 failed acquires no longer
  // copy and touch it twice over.
  points.reserve(h.size() / 2);
  advise_huge_pages(points);
  for (size_t i = 0; i < h.size(); ++i) {
    prefetch_pair(h, pairs, i);
    const Op& op = h[i];
    if (!op.is_client() || op.is_invoke() || op.f != kAcquire) continue;
    const Op* inv = invoke_of(h, pairs, i);
    if (!inv) continue;
    LatencyPoint p;
    p.invoke_ns = inv->time_ns;
    p.latency_ns = std::max<int64_t>(0, op.time_ns - inv->time_ns);
    p.outcome = op.type;
    points.push_back(p);
  }
  return points;
}

bool has_set_ops(const History& h) {
  static const Atom kAdd("add");
  for (const Op& op : h) {
    if (op.is_client() && op.f == kAdd) return true;
  }
  return false;
}

namespace {

bool is_int_array(const nlohmann::json& v) {
  if (!v.is_array()) return false;
  for (const auto& e : v) {
    if (!e.is_number_integer()) return false;
  }
  return true;
}

}  // namespace

LostUpdates lost_updates(const History& h) { return lost_updates(h, pair_index(h)); }

LostUpdates lost_updates(const History& h, const std::vector<int64_t>& pairs) {
  LostUpdates out;
  // The final read of each key: the last ok read of integers.
  std::map<std::string, size_t> final_read;
  for (size_t i = 0; i < h.size(); ++i) {
    const Op& op = h[i];
    if (op.is_client() && op.is_ok() && op.f == "read" && is_int_array(op.value)) final_read[op.key] = i;
  }
  if (final_read.empty()) return out;
  out.has_final_read = true;
  struct Final {
    int64_t invoke_ns;
    std::unordered_set<int64_t> elements;
  };
  std::map<std::string, Final> finals;
  for (const auto& kv : final_read) {
    const Op& read = h[kv.second];
    out.final_read_indices.push_back(read.index);
    const Op* inv = invoke_of(h, pairs, kv.second);
    Final f{inv ? inv->time_ns : read.time_ns, {}};
    for (const auto& e : read.value) f.elements.insert(e.get<int64_t>());
    finals.emplace(kv.first, std::move(f));
  }
  std::sort(out.final_read_indices.begin(), out.final_read_indices.end());

  // History order is completion order, so the lost adds come out in ascending completion time.
  for (size_t i = 0; i < h.size(); ++i) {
    const Op& op = h[i];
    if (!op.is_client() || !op.is_ok() || op.f != "add") continue;
    const nlohmann::json* element = nullptr;
    if (op.value.is_number_integer()) {
      element = &op.value;
    } else if (const Op* inv = invoke_of(h, pairs, i); inv && inv->value.is_number_integer()) {
      element = &inv->value;
    }
    if (!element) continue;
    auto f = finals.find(op.key);
    if (f == finals.end() || op.time_ns > f->second.invoke_ns) {
      ++out.unjudged;
      continue;
    }
    ++out.acknowledged;
    const int64_t e = element->get<int64_t>();
    if (f->second.elements.count(e) == 0) {
      out.lost_completion_ns.push_back(op.time_ns);
      out.lost_elements.push_back(e);
    }
  }
  return out;
}

}  // namespace report
}  // namespace lockcheck
