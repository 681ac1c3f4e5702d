#include "report/timeline_svg.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/flat_table.h"
#include "report/html.h"
#include "report/svg_common.h"

namespace lockcheck {
namespace report {

namespace {

bool key_less(const std::string& a, const std::string& b) {
  // "lock-2" before "lock-10".
  if (a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

std::string targets_label(const std::vector<std::string>& targets) {
  std::string s;
  for (size_t i = 0; i < targets.size() && i < 8; ++i) {
    if (i) s += ",";
    s += targets[i];
  }
  if (targets.size() > 8) s += ",...";
  return s;
}

// A fault band's label: the fault, its targets and its words; a client fault's words already name the processes
// it hit ("p3 (slot c3) paused 2.00 s"), so its targets are not said twice.
std::string band_label(const FaultBand& b) {
  if (!b.clients.empty() && !b.words.empty()) return b.fault + " " + b.words;
  return b.fault + " " + targets_label(b.targets) + (b.words.empty() ? "" : " " + b.words);
}

// A hold as drawn: a single hold, or several merged ones.
struct DrawnBar {
  const Hold* hold = nullptr;  // the hold when n == 1; the first merged hold otherwise
  int64_t from_ns = 0, to_ns = 0;
  size_t n = 1;
};
// A DrawnBar's hold is indeterminate: merged ones are merged with their own kind only.
bool maybe(const DrawnBar& d) { return d.hold->kind != HoldKind::kHeld; }

// The union of closed windows, as disjoint windows in order: whether [from, to] meets any of them is one binary
// search.
class WindowUnion {
 public:
  explicit WindowUnion(std::vector<TimeWindow> ws) {
    std::sort(ws.begin(), ws.end(), [](const TimeWindow& a, const TimeWindow& b) { return a.from_ns < b.from_ns; });
    for (const TimeWindow& w : ws) {
      if (!parts_.empty() && w.from_ns <= parts_.back().to_ns) {
        parts_.back().to_ns = std::max(parts_.back().to_ns, w.to_ns);
      } else {
        parts_.push_back(w);
      }
    }
  }
  bool overlaps(int64_t from, int64_t to) const {
    // The first part that ends at or after from; it meets [from, to] when it starts by to.
    auto it = std::lower_bound(parts_.begin(), parts_.end(), from,
                               [](const TimeWindow& w, int64_t t) { return w.to_ns < t; });
    return it != parts_.end() && it->from_ns <= to;
  }

 private:
  std::vector<TimeWindow> parts_;
};

// One lane's holds grouped by key (in key order) with, for each, whether it is drawn exactly (indeterminate, or
// near an anomaly); bars() merges the others that are closer than a distance, as often as the drawing needs.
class LaneBars {
 public:
  LaneBars(const std::vector<const Hold*>& lane, bool aggregate, const WindowUnion& keep_exact) : lane_(lane) {
    if (!aggregate) return;
    std::map<Atom, std::vector<const Hold*>> by_key;  // Atoms order by text
    for (const Hold* h : lane) by_key[h->key].push_back(h);
    for (auto& kv : by_key) {
      Group g;
      for (const Hold* h : kv.second) {
        g.holds.push_back(h);
        g.near_anomaly.push_back(keep_exact.overlaps(h->from_ns, h->to_ns));
      }
      groups_.push_back(std::move(g));
    }
    aggregate_ = true;
  }

  // merge_maybe: indeterminate holds are merged too (among themselves); otherwise each is drawn.
  std::vector<DrawnBar> bars(int64_t merge_ns, bool merge_maybe) const {
    std::vector<DrawnBar> out;
    if (!aggregate_) {
      for (const Hold* h : lane_) out.push_back(DrawnBar{h, h->from_ns, h->to_ns, 1});
      return out;
    }
    // Merge per key, in order of start.
    for (const Group& g : groups_) {
      DrawnBar cur, cur_maybe;
      bool have = false, have_maybe = false;
      for (size_t k = 0; k < g.holds.size(); ++k) {
        const Hold* h = g.holds[k];
        const bool indeterminate = h->kind != HoldKind::kHeld;
        if (g.near_anomaly[k] || (indeterminate && !merge_maybe)) {
          if (have) out.push_back(cur);
          have = false;
          out.push_back(DrawnBar{h, h->from_ns, h->to_ns, 1});
          continue;
        }
        DrawnBar& c = indeterminate ? cur_maybe : cur;
        bool& has = indeterminate ? have_maybe : have;
        if (has && h->from_ns - c.to_ns < merge_ns) {
          c.to_ns = std::max(c.to_ns, h->to_ns);
          ++c.n;
          continue;
        }
        if (has) out.push_back(c);
        c = DrawnBar{h, h->from_ns, h->to_ns, 1};
        has = true;
      }
      if (have) out.push_back(cur);
      if (have_maybe) out.push_back(cur_maybe);
    }
    std::sort(out.begin(), out.end(), [](const DrawnBar& a, const DrawnBar& b) { return a.from_ns < b.from_ns; });
    return out;
  }

 private:
  struct Group {
    std::vector<const Hold*> holds;
    std::vector<bool> near_anomaly;  // drawn exactly
  };
  const std::vector<const Hold*>& lane_;
  bool aggregate_ = false;
  std::vector<Group> groups_;
};

class SvgOut {
 public:
  std::ostringstream& s() { return s_; }
  std::string str() const { return s_.str(); }

 private:
  std::ostringstream s_;
};

}  // namespace

namespace {

// Widens [lo, hi] to the holds in [begin, end) that overlap [from, to] (on a's key and processes).
void widen(const Anomaly& a, const Hold* begin, const Hold* end, int64_t from, int64_t to, int64_t* lo, int64_t* hi) {
  for (const Hold* h = begin; h != end; ++h) {
    if (h->from_ns > to || h->to_ns < from) continue;
    if (!a.key.empty() && h->key != a.key) continue;
    if (!a.processes.empty() && std::find(a.processes.begin(), a.processes.end(), h->process) == a.processes.end()) {
      continue;
    }
    *lo = std::min(*lo, h->from_ns);
    *hi = std::max(*hi, h->to_ns);
  }
}

TimeWindow with_margin(int64_t lo, int64_t hi, int64_t to, int64_t end_ns) {
  int64_t margin = std::max<int64_t>((hi - lo) / 4, 20000000);
  TimeWindow w{std::max<int64_t>(0, lo - margin), hi + margin};
  if (end_ns > 0) w.to_ns = std::min(w.to_ns, std::max(end_ns, to));
  if (w.to_ns <= w.from_ns) w.to_ns = w.from_ns + 1000000;
  return w;
}

}  // namespace

TimeWindow anomaly_view(const Anomaly& a, const std::vector<Hold>& holds, int64_t end_ns) {
  int64_t lo = a.from_ns.value_or(0), hi = a.to_ns.value_or(lo);
  const int64_t from = lo, to = hi;
  widen(a, holds.data(), holds.data() + holds.size(), from, to, &lo, &hi);
  return with_margin(lo, hi, to, end_ns);
}

HoldIndex::HoldIndex(const std::vector<Hold>& holds) : holds_(holds) {
  for (size_t b = 0; b < holds.size(); b += kBlock) {
    int64_t mn = holds[b].from_ns, mx = holds[b].to_ns;
    for (size_t i = b; i < std::min(holds.size(), b + kBlock); ++i) {
      mn = std::min(mn, holds[i].from_ns);
      mx = std::max(mx, holds[i].to_ns);
    }
    min_from_.push_back(mn);
    max_to_.push_back(mx);
  }
}

TimeWindow HoldIndex::view(const Anomaly& a, int64_t end_ns) const {
  int64_t lo = a.from_ns.value_or(0), hi = a.to_ns.value_or(lo);
  const int64_t from = lo, to = hi;
  for (size_t k = 0; k < min_from_.size(); ++k) {
    if (min_from_[k] > to || max_to_[k] < from) continue;  // no hold of the block overlaps [from, to]
    const size_t b = k * kBlock, e = std::min(holds_.size(), b + kBlock);
    widen(a, holds_.data() + b, holds_.data() + e, from, to, &lo, &hi);
  }
  return with_margin(lo, hi, to, end_ns);
}

std::string render_timeline(const std::vector<Hold>& holds, const std::vector<FaultBand>& bands,
                            const std::vector<Anomaly>& anomalies, int64_t end_ns, const TimelineOptions& opts) {
  return render_timeline(holds, HoldIndex(holds), bands, anomalies, end_ns, opts);
}

std::string render_timeline(const std::vector<Hold>& holds, const HoldIndex& index, const std::vector<FaultBand>& bands,
                            const std::vector<Anomaly>& anomalies, int64_t end_ns, const TimelineOptions& opts) {
  // Lanes: every client process that held (or may have held) a key, and every process an anomaly names.
  std::vector<Process> procs;  // sorted and unique once the anomalies' are in (a set cost 15% of a 10^6-op check)
  std::set<std::string, bool (*)(const std::string&, const std::string&)> keys(key_less);
  FlatTable<size_t> holds_of;  // process -> its holds
  auto pkey = [](Process p) { return static_cast<uint64_t>(static_cast<uint32_t>(p)); };
  {
    std::unordered_set<Atom> seen_keys;
    const Atom* last_key = nullptr;
    for (const Hold& h : holds) {
      ++holds_of[pkey(h.process)];
      if (last_key == nullptr || *last_key != h.key) {
        seen_keys.insert(h.key);
        last_key = &h.key;
      }
    }
    holds_of.for_each([&](uint64_t p, size_t) { procs.push_back(static_cast<Process>(static_cast<uint32_t>(p))); });
    for (const Atom& k : seen_keys) keys.insert(k.str());
  }
  std::vector<const Anomaly*> timed;  // anomalies with a time window, at most max_violations
  for (const Anomaly& a : anomalies) {
    if (!a.from_ns) continue;
    if (timed.size() >= opts.max_violations) break;
    timed.push_back(&a);
    procs.insert(procs.end(), a.processes.begin(), a.processes.end());
  }
  std::sort(procs.begin(), procs.end());
  procs.erase(std::unique(procs.begin(), procs.end()), procs.end());
  int64_t span_ns = end_ns;
  for (const Anomaly* a : timed) span_ns = std::max(span_ns, *a->to_ns);
  if (procs.empty() && bands.empty()) {
    return "<p class=\"empty-note\">No lock operations and no faults in this history: nothing to draw.</p>\n";
  }
  span_ns = std::max<int64_t>(span_ns, 1000000);
  const std::string span_ms = ms_coord(span_ns);

  std::map<std::string, size_t> key_index;
  for (const auto& k : keys) key_index.emplace(k, key_index.size());
  std::vector<Process> lanes = std::move(procs);
  // Many processes (a long info-heavy run retires one per info op): keep the lanes of the processes the
  // anomalies name, then the busiest, up to max_lanes; the note under the drawing counts the rest.
  size_t hidden_lanes = 0, hidden_holds = 0;
  if (lanes.size() > opts.max_lanes) {
    auto count = [&](Process p) {
      const size_t* n = holds_of.find(pkey(p));
      return n == nullptr ? size_t{0} : *n;
    };
    std::set<Process> named;
    for (const Anomaly* a : timed) named.insert(a->processes.begin(), a->processes.end());
    // The first max_lanes by (named first, then most holds, then the lower id: lanes are in id order and the
    // choice is stable), found without sorting them all.
    struct Rank {
      bool named;
      size_t holds;
      Process p;
      bool operator<(const Rank& o) const {
        if (named != o.named) return named;
        if (holds != o.holds) return holds > o.holds;
        return p < o.p;
      }
    };
    std::vector<Rank> ranks;
    ranks.reserve(lanes.size());
    for (Process p : lanes) ranks.push_back(Rank{named.count(p) > 0, count(p), p});
    std::nth_element(ranks.begin(), ranks.begin() + static_cast<std::ptrdiff_t>(opts.max_lanes), ranks.end());
    size_t kept_holds = 0;
    for (size_t i = 0; i < opts.max_lanes; ++i) kept_holds += ranks[i].holds;
    hidden_holds = holds.size() - kept_holds;  // every hold's process is a lane
    hidden_lanes = lanes.size() - opts.max_lanes;
    lanes.resize(opts.max_lanes);
    for (size_t i = 0; i < opts.max_lanes; ++i) lanes[i] = ranks[i].p;
    std::sort(lanes.begin(), lanes.end());
  }
  std::unordered_map<Process, size_t> lane_of;
  for (size_t i = 0; i < lanes.size(); ++i) lane_of[lanes[i]] = i;

  std::vector<std::string> fault_rows;  // distinct faults in order of first appearance
  for (const FaultBand& b : bands) {
    if (std::find(fault_rows.begin(), fault_rows.end(), b.fault) == fault_rows.end()) fault_rows.push_back(b.fault);
  }

  const int L = opts.label_px;
  const int P = std::max(100, opts.width_px - opts.label_px - opts.right_px);
  const int W = opts.width_px;
  const size_t nl = std::max<size_t>(1, lanes.size());
  const int lane_h = static_cast<int>(std::clamp<size_t>(640 / nl, 4, 22));
  const int bar_pad = lane_h >= 10 ? 3 : (lane_h >= 6 ? 1 : 0);
  const int overview_y = 4, overview_h = 16;
  const int row_h = 16;
  const int rows_y = overview_y + overview_h + 8;
  const int rows_h = static_cast<int>(fault_rows.size()) * row_h;
  const int strip_y = rows_y + rows_h + 5, strip_h = 10;
  const int lanes_y = strip_y + strip_h + 4;
  const int lanes_h = static_cast<int>(lanes.size()) * lane_h;
  const int axis_y = lanes_y + std::max(lanes_h, lane_h);
  const int H = axis_y + 30;
  const double px_per_ms = static_cast<double>(P) / (static_cast<double>(span_ns) / 1e6);
  const int64_t px_ns = std::max<int64_t>(1, span_ns / P);
  // Width (ms) of something that must stay visible at full view: 1.5 px.
  const std::string min_w_ms = ms_coord(std::max<int64_t>(1, span_ns * 3 / (2 * P)));
  auto min_w = [&](int64_t from, int64_t to) {
    int64_t w = to - from;
    return w * 2 * P >= span_ns * 3 ? ms_coord(w) : min_w_ms;
  };

  std::vector<TimeWindow> views;
  for (const Anomaly* a : timed) views.push_back(index.view(*a, end_ns));

  SvgOut out;
  auto& s = out.s();
  s << "<svg id=\"timeline\" class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\""
    << H << "\" viewBox=\"0 0 " << W << " " << H << "\" data-left=\"" << L << "\" data-plotw=\"" << P
    << "\" data-span-ms=\"" << span_ms << "\" data-lanes=\"" << lanes.size() << "\"";
  if (!views.empty()) {
    s << " data-init-a=\"" << ms_coord(views[0].from_ns) << "\" data-init-b=\"" << ms_coord(views[0].to_ns) << "\"";
  }
  s << ">\n";

  // Overview: the whole run, fault bands, anomaly marks and the window currently shown.
  s << "<text class=\"row-label\" x=\"" << (L - 6) << "\" y=\"" << (overview_y + 12) << "\">run</text>\n";
  s << "<svg class=\"tl-overview\" x=\"" << L << "\" y=\"" << overview_y << "\" width=\"" << P << "\" height=\""
    << overview_h << "\" viewBox=\"0 0 " << span_ms << " " << overview_h << "\" preserveAspectRatio=\"none\">\n";
  s << "<rect class=\"ov-bg\" x=\"0\" y=\"0\" width=\"" << span_ms << "\" height=\"" << overview_h << "\"/>\n";
  for (const FaultBand& b : bands) {
    s << "<rect class=\"ov-band\" x=\"" << ms_coord(b.from_ns) << "\" y=\"0\" width=\"" << min_w(b.from_ns, b.to_ns)
      << "\" height=\"" << overview_h << "\" fill=\"" << fault_color(b.fault) << "\"/>\n";
  }
  for (const Anomaly* a : timed) {
    s << "<rect class=\"ov-violation\" x=\"" << ms_coord(*a->from_ns) << "\" y=\"0\" width=\""
      << min_w(*a->from_ns, *a->to_ns) << "\" height=\"" << overview_h << "\"/>\n";
  }
  s << "<rect id=\"tl-window\" class=\"ov-window\" x=\"0\" y=\"0.5\" width=\"" << span_ms << "\" height=\""
    << (overview_h - 1) << "\"/>\n";
  s << "</svg>\n";

  // Fault rows: one per kind of fault, a strip per period, its label above the lanes.
  if (!fault_rows.empty()) {
    s << "<svg class=\"zoomable tl-faultrows\" x=\"" << L << "\" y=\"" << rows_y << "\" width=\"" << P << "\" height=\""
      << rows_h << "\" viewBox=\"0 0 " << span_ms << " " << rows_h << "\" preserveAspectRatio=\"none\">\n";
    for (const FaultBand& b : bands) {
      size_t row = std::find(fault_rows.begin(), fault_rows.end(), b.fault) - fault_rows.begin();
      s << "<rect class=\"band-strip\" x=\"" << ms_coord(b.from_ns) << "\" y=\"" << (row * row_h + 2) << "\" width=\""
        << min_w(b.from_ns, b.to_ns) << "\" height=\"" << (row_h - 3) << "\" fill=\"" << fault_color(b.fault)
        << "\"/>\n";
    }
    s << "</svg>\n";
    for (size_t r = 0; r < fault_rows.size(); ++r) {
      s << "<text class=\"row-label\" x=\"" << (L - 6) << "\" y=\"" << (rows_y + r * row_h + 12) << "\">"
        << escape(fault_rows[r].size() > 10 ? fault_rows[r].substr(0, 9) + "." : fault_rows[r]) << "</text>\n";
    }
    for (const FaultBand& b : bands) {
      size_t row = std::find(fault_rows.begin(), fault_rows.end(), b.fault) - fault_rows.begin();
      const double x = L + static_cast<double>(b.from_ns) / 1e6 * px_per_ms + 2;
      const std::string label = band_label(b);
      // Shown only where the band has room for it (the script re-decides on zoom).
      const double room = static_cast<double>(b.to_ns - b.from_ns) / 1e6 * px_per_ms;
      const bool fits = room >= 6.0 * static_cast<double>(label.size()) + 4;
      s << "<text class=\"tl-text fault-label\" x=\"" << fixed(x, 1) << "\" y=\"" << (rows_y + row * row_h + 12)
        << "\" data-a=\"" << ms_coord(b.from_ns) << "\" data-b=\"" << ms_coord(b.to_ns) << "\""
        << (fits ? "" : " style=\"display:none\"") << ">" << escape(label) << "</text>\n";
    }
  }

  // Anomaly strip: a red mark per anomaly window, visible at any zoom.
  s << "<text class=\"row-label\" x=\"" << (L - 6) << "\" y=\"" << (strip_y + 9) << "\">anomalies</text>\n";
  s << "<svg class=\"zoomable tl-strip\" x=\"" << L << "\" y=\"" << strip_y << "\" width=\"" << P << "\" height=\""
    << strip_h << "\" viewBox=\"0 0 " << span_ms << " " << strip_h << "\" preserveAspectRatio=\"none\">\n";
  for (const Anomaly* a : timed) {
    s << "<rect class=\"violation-mark\" data-anomaly=\"" << a->number << "\" x=\"" << ms_coord(*a->from_ns)
      << "\" y=\"0\" width=\"" << min_w(*a->from_ns, *a->to_ns) << "\" height=\"" << strip_h << "\" data-tip=\""
      << escape("anomaly " + std::to_string(a->number + 1) + ": " + sentence_of(*a)) << "\"/>\n";
  }
  s << "</svg>\n";

  // Lane backgrounds and labels (outside the zoomable part: they do not move).
  const int label_font = std::min(12, std::max(6, lane_h - 4));
  const size_t label_every = lane_h >= 8 ? 1 : static_cast<size_t>((8 + lane_h - 1) / lane_h) * 2;
  for (size_t i = 0; i < lanes.size(); ++i) {
    s << "<rect class=\"lane-bg" << (i % 2 ? " odd" : "") << "\" x=\"" << L << "\" y=\"" << (lanes_y + i * lane_h)
      << "\" width=\"" << P << "\" height=\"" << lane_h << "\"/>\n";
    if (i % label_every == 0) {
      s << "<text class=\"lane-label\" x=\"" << (L - 6) << "\" y=\""
        << (lanes_y + i * lane_h + lane_h / 2 + label_font / 2 - 1) << "\" font-size=\"" << label_font << "\">"
        << process_name(lanes[i]) << "</text>\n";
    }
  }

  // The lanes: bands, leases, bars, violations, in ms coordinates.
  const int lh_total = std::max(lanes_h, lane_h);
  s << "<svg class=\"zoomable tl-lanes\" x=\"" << L << "\" y=\"" << lanes_y << "\" width=\"" << P << "\" height=\""
    << lh_total << "\" viewBox=\"0 0 " << span_ms << " " << lh_total << "\" preserveAspectRatio=\"none\">\n";
  s << "<g class=\"bands\">\n";
  for (const FaultBand& b : bands) {
    std::string tip = band_label(b) + ": " +
                      seconds_label(b.from_ns) + " to " +
                      (b.healed ? seconds_label(b.to_ns) : std::string("end (not healed)")) + " (" +
                      duration_label(b.to_ns - b.from_ns) + ")";
    if (!b.detail.empty()) tip += " " + b.detail;
    s << "<rect class=\"band\" data-fault=\"" << escape(b.fault) << "\" x=\"" << ms_coord(b.from_ns)
      << "\" y=\"0\" width=\"" << min_w(b.from_ns, b.to_ns) << "\" height=\"" << lh_total << "\" fill=\""
      << fault_color(b.fault) << "\" data-tip=\"" << escape(tip) << "\"/>\n";
  }
  s << "</g>\n";

  // The client faults' marks (a paused or crashed process), drawn over their process's lane.
  std::map<Process, std::vector<std::pair<const FaultBand*, const FaultBand::ClientMark*>>> marks_of;
  for (const FaultBand& b : bands) {
    for (const auto& m : b.clients) marks_of[m.process].emplace_back(&b, &m);
  }
  std::map<Process, std::vector<const Hold*>> by_lane;  // the drawn lanes' holds
  for (const Hold& h : holds) {
    if (lane_of.count(h.process)) by_lane[h.process].push_back(&h);
  }
  const bool aggregate = holds.size() > opts.aggregate_above_holds;
  // The bars of every lane, merged over 1 px, or over 2, 4, ... px when there would be more than max_bars.
  const WindowUnion exact_windows(views);
  std::vector<std::optional<LaneBars>> lane_groups(lanes.size());
  for (size_t i = 0; i < lanes.size(); ++i) {
    auto it = by_lane.find(lanes[i]);
    if (it != by_lane.end()) lane_groups[i].emplace(it->second, aggregate, exact_windows);
  }
  std::vector<std::vector<DrawnBar>> lane_bars(lanes.size());
  // Indeterminate holds are each drawn unless that alone is too many: then they are merged among themselves too.
  int64_t merge_px = 1;
  bool merge_maybe = false;
  for (;;) {
    size_t total = 0;
    for (size_t i = 0; i < lanes.size(); ++i) {
      if (!lane_groups[i]) continue;
      lane_bars[i] = lane_groups[i]->bars(px_ns * merge_px, merge_maybe);
      total += lane_bars[i].size();
    }
    if (!aggregate || total <= opts.max_bars || (merge_px >= P && merge_maybe)) break;
    if (merge_px == 1 && !merge_maybe) {
      merge_maybe = true;  // over the cap already at 1 px: every kind of hold is merged from here on
      continue;
    }
    merge_px *= 2;
  }
  for (size_t i = 0; i < lanes.size(); ++i) {
    const Process p = lanes[i];
    const int y = static_cast<int>(i) * lane_h + bar_pad;
    const int bh = std::max(1, lane_h - 2 * bar_pad);
    s << "<g class=\"lane\" data-process=\"" << p << "\">\n";
    auto it = by_lane.find(p);
    if (it != by_lane.end()) {
      const std::vector<DrawnBar>& drawn = lane_bars[i];
      // Lease windows first, so that the bars lie on top of them.
      for (const DrawnBar& d : drawn) {
        if (d.n != 1 || !d.hold->lease_end_ns || d.hold->kind != HoldKind::kHeld) continue;
        const Hold& h = *d.hold;
        const int64_t lease_end = std::min(*h.lease_end_ns, span_ns);
        if (lease_end <= h.from_ns) continue;
        s << "<rect class=\"lease\" x=\"" << ms_coord(h.from_ns) << "\" y=\"" << y << "\" width=\""
          << ms_coord(lease_end - h.from_ns) << "\" height=\"" << bh << "\" fill=\"" << key_color(key_index[h.key])
          << "\"/>\n";
      }
      for (const DrawnBar& d : drawn) {
        const Hold* h = d.hold;
        std::string tip;
        std::string cls = "bar";
        const std::string& keyname = h->key;
        if (d.n == 1) {
          if (h->kind == HoldKind::kIndeterminate) {
            cls += " maybe";
            tip = process_name(p) + " " + h->key + ": acquire indeterminate (info) at " +
                  seconds_label(h->invoke_ns) + "; may have held it to " + seconds_label(h->to_ns);
          } else {
            tip = process_name(p) + " " + h->key + ": held " + seconds_label(h->from_ns) + " to " +
                  (h->open ? std::string("end (no release)") : seconds_label(h->to_ns)) + " (" +
                  duration_label(h->to_ns - h->from_ns) + ")";
            if (h->token) tip += ", token " + std::to_string(*h->token);
            if (h->lease_end_ns) tip += ", lease to " + seconds_label(*h->lease_end_ns);
          }
          tip += ", op " + std::to_string(h->acquire_index);
          if (h->open) cls += " open";
        } else {
          cls += maybe(d) ? " maybe agg" : " agg";
          tip = process_name(p) + " " + keyname + ": " + std::to_string(d.n) +
                (maybe(d) ? " indeterminate acquires merged, " : " holds merged, ") + seconds_label(d.from_ns) +
                " to " + seconds_label(d.to_ns) + " (holds closer than " + std::to_string(merge_px) +
                " px at full width are merged; exact around anomalies)";
        }
        s << "<rect class=\"" << cls << "\" data-process=\"" << p << "\" data-key=\"" << escape(keyname) << "\"";
        if (d.n != 1) s << " data-n=\"" << d.n << "\"";
        s << " x=\"" << ms_coord(d.from_ns) << "\" y=\"" << y << "\" width=\""
          << ms_coord(std::max<int64_t>(0, d.to_ns - d.from_ns)) << "\" height=\"" << bh << "\" fill=\""
          << key_color(key_index[keyname]) << "\" data-tip=\"" << escape(tip) << "\"/>\n";
        if (d.n == 1 && h->kind == HoldKind::kHeld && h->lease_end_ns && *h->lease_end_ns < h->to_ns) {
          const int64_t from = std::max(*h->lease_end_ns, h->from_ns);
          s << "<rect class=\"overrun\" data-process=\"" << p << "\" x=\"" << ms_coord(from) << "\" y=\"" << y
            << "\" width=\"" << ms_coord(h->to_ns - from) << "\" height=\"" << bh << "\" data-tip=\""
            << escape(process_name(p) + " " + h->key + ": still held " + duration_label(h->to_ns - from) +
                      " after its lease ended at " + seconds_label(*h->lease_end_ns))
            << "\"/>\n";
        }
        if (d.n == 1 && h->kind == HoldKind::kHeld && h->loss_notice_ns) {
          const int64_t at = *h->loss_notice_ns;
          std::string note = process_name(p) + " " + h->key + ": its lock library said the lock was lost at " +
                             seconds_label(at);
          if (h->lease_end_ns) {
            note += at >= *h->lease_end_ns ? ", " + duration_label(at - *h->lease_end_ns) + " after its lease ended"
                                           : ", " + duration_label(*h->lease_end_ns - at) + " before its lease ended";
          }
          if (!h->open && at > h->to_ns) note += " (after its release at " + seconds_label(h->to_ns) + ")";
          s << "<rect class=\"notice\" data-process=\"" << p << "\" x=\"" << ms_coord(at) << "\" y=\"" << y
            << "\" width=\"" << ms_coord(std::max<int64_t>(1, span_ns * 3 / P)) << "\" height=\"" << bh << "\" data-tip=\""
            << escape(note) << "\"/>\n";  // 3 px wide at full view
        }
      }
    }
    if (auto mk = marks_of.find(p); mk != marks_of.end()) {
      for (const auto& [band, m] : mk->second) {
        s << "<rect class=\"client-fault\" data-process=\"" << p << "\" data-fault=\"" << escape(band->fault)
          << "\" x=\"" << ms_coord(m->from_ns) << "\" y=\"" << y << "\" width=\"" << min_w(m->from_ns, m->to_ns)
          << "\" height=\"" << bh << "\" fill=\"none\" stroke=\"" << fault_color(band->fault)
          << "\" stroke-width=\"2\" vector-effect=\"non-scaling-stroke\" data-tip=\""
          << escape(band->fault + ": " + m->words + " from " + seconds_label(m->from_ns) +
                    (m->to_ns > m->from_ns ? " to " + seconds_label(m->to_ns) : std::string()))
          << "\"/>\n";
      }
    }
    s << "</g>\n";
  }

  // Violations: for each anomaly with a window, an outline over the lane of each process it names.
  s << "<g class=\"violations\">\n";
  for (const Anomaly* a : timed) {
    const std::string tip = "anomaly " + std::to_string(a->number + 1) + ": " + sentence_of(*a);
    bool drawn = false;
    for (Process p : a->processes) {
      auto lit = lane_of.find(p);
      if (lit == lane_of.end()) continue;
      s << "<rect class=\"violation\" data-anomaly=\"" << a->number << "\" data-process=\"" << p << "\" x=\""
        << ms_coord(*a->from_ns) << "\" y=\"" << (lit->second * lane_h + 1) << "\" width=\""
        << min_w(*a->from_ns, *a->to_ns) << "\" height=\"" << std::max(2, lane_h - 2) << "\" data-tip=\"" << escape(tip)
        << "\"/>\n";
      drawn = true;
    }
    if (!drawn) {
      s << "<rect class=\"violation\" data-anomaly=\"" << a->number << "\" data-process=\"all\" x=\""
        << ms_coord(*a->from_ns) << "\" y=\"0\" width=\"" << min_w(*a->from_ns, *a->to_ns) << "\" height=\"" << lh_total
        << "\" data-tip=\"" << escape(tip) << "\"/>\n";
    }
  }
  s << "</g>\n";
  s << "</svg>\n";

  // Time axis (the script redraws it on zoom).
  s << "<g id=\"tl-axis\" class=\"axis\" data-y=\"" << axis_y << "\">\n";
  s << "<line x1=\"" << L << "\" y1=\"" << axis_y << "\" x2=\"" << (L + P) << "\" y2=\"" << axis_y << "\"/>\n";
  const double span_s = static_cast<double>(span_ns) / 1e9;
  const double step = nice_step(0, span_s, 10);
  const int decimals = step >= 1 ? 0 : step >= 0.1 ? 1 : step >= 0.01 ? 2 : 3;
  for (double t : nice_ticks(0, span_s, 10)) {
    const double x = L + t / span_s * P;
    s << "<line x1=\"" << fixed(x, 1) << "\" y1=\"" << axis_y << "\" x2=\"" << fixed(x, 1) << "\" y2=\"" << (axis_y + 5)
      << "\"/><text x=\"" << fixed(x, 1) << "\" y=\"" << (axis_y + 17) << "\">" << fixed(t, decimals) << "</text>\n";
  }
  s << "<text class=\"axis-unit\" x=\"" << (L + P) << "\" y=\"" << (axis_y + 28) << "\">seconds since start</text>\n";
  s << "</g>\n";
  s << "<rect id=\"tl-sel\" class=\"tl-sel\" x=\"0\" y=\"" << lanes_y << "\" width=\"0\" height=\"" << lh_total
    << "\"/>\n";
  s << "</svg>\n";
  if (hidden_lanes > 0) {
    s << "<p class=\"note\">" << hidden_lanes << " more processes (" << hidden_holds
      << " holds) are not drawn: the timeline shows the " << lanes.size()
      << " processes named by anomalies first, then the busiest.</p>\n";
  }
  return out.str();
}

}  // namespace report
}  // namespace lockcheck
