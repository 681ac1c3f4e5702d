#include "report/plots_svg.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <unordered_set>

#include "report/html.h"
#include "report/svg_common.h"

namespace lockcheck {
namespace report {

namespace {

constexpr int kTop = 22;     // room for the legend
constexpr int kBottom = 34;  // room for the time axis

// The frame of a plot: geometry and the helpers every plot needs.
struct Frame {
  int L, P, W, H, PH;  // left margin, plot width, total width, total height, plot height
  int64_t span_ns;

  double x(int64_t ns) const { return L + static_cast<double>(ns) / static_cast<double>(span_ns) * P; }
  int y0() const { return kTop; }
  int y1() const { return kTop + PH; }
};

Frame frame_of(const PlotOptions& o, int64_t span_ns) {
  Frame f;
  f.L = o.label_px;
  f.W = o.width_px;
  f.P = std::max(100, o.width_px - o.label_px - o.right_px);
  f.H = o.height_px;
  f.PH = std::max(40, o.height_px - kTop - kBottom);
  f.span_ns = std::max<int64_t>(1, span_ns);
  return f;
}

void open_svg(std::ostringstream& s, const Frame& f, const std::string& cls, const std::string& extra_attrs) {
  s << "<svg class=\"plot " << cls << "\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << f.W << "\" height=\"" << f.H
    << "\" viewBox=\"0 0 " << f.W << " " << f.H << "\"" << extra_attrs << ">\n";
  s << "<rect class=\"plot-bg\" x=\"" << f.L << "\" y=\"" << f.y0() << "\" width=\"" << f.P << "\" height=\"" << f.PH
    << "\"/>\n";
}

void bands_and_time_axis(std::ostringstream& s, const Frame& f, const std::vector<FaultBand>& bands) {
  for (const FaultBand& b : bands) {
    double x0 = f.x(b.from_ns), x1 = std::max(f.x(b.to_ns), x0 + 1);
    x1 = std::min<double>(x1, f.L + f.P);
    if (x0 >= f.L + f.P) continue;
    s << "<rect class=\"plot-band\" data-fault=\"" << escape(b.fault) << "\" x=\"" << fixed(x0, 1) << "\" y=\""
      << f.y0() << "\" width=\"" << fixed(x1 - x0, 1) << "\" height=\"" << f.PH << "\" fill=\"" << fault_color(b.fault)
      << "\" data-tip=\"" << escape(b.fault + ": " + seconds_label(b.from_ns) + " to " + seconds_label(b.to_ns))
      << "\"/>\n";
  }
  s << "<g class=\"axis\">\n";
  s << "<line x1=\"" << f.L << "\" y1=\"" << f.y1() << "\" x2=\"" << (f.L + f.P) << "\" y2=\"" << f.y1() << "\"/>\n";
  const double span_s = static_cast<double>(f.span_ns) / 1e9;
  const double step = nice_step(0, span_s, 10);
  const int decimals = step >= 1 ? 0 : step >= 0.1 ? 1 : step >= 0.01 ? 2 : 3;
  for (double t : nice_ticks(0, span_s, 10)) {
    const double x = f.L + t / span_s * f.P;
    s << "<line x1=\"" << fixed(x, 1) << "\" y1=\"" << f.y1() << "\" x2=\"" << fixed(x, 1) << "\" y2=\"" << (f.y1() + 5)
      << "\"/><text x=\"" << fixed(x, 1) << "\" y=\"" << (f.y1() + 17) << "\">" << fixed(t, decimals) << "</text>\n";
  }
  s << "<text class=\"axis-unit\" x=\"" << (f.L + f.P) << "\" y=\"" << (f.y1() + 29)
    << "\">seconds since start</text>\n";
  s << "</g>\n";
}

// Horizontal grid and labels for a linear y axis from 0 to max.
void linear_y_axis(std::ostringstream& s, const Frame& f, double max, const std::string& unit) {
  s << "<g class=\"axis y-axis\">\n";
  for (double v : nice_ticks(0, max, 4)) {
    const double y = f.y1() - v / max * f.PH;
    s << "<line class=\"grid\" x1=\"" << f.L << "\" y1=\"" << fixed(y, 1) << "\" x2=\"" << (f.L + f.P) << "\" y2=\""
      << fixed(y, 1) << "\"/><text class=\"y-label\" x=\"" << (f.L - 6) << "\" y=\"" << fixed(y + 4, 1) << "\">"
      << fixed(v, v == std::floor(v) ? 0 : 1) << "</text>\n";
  }
  s << "<text class=\"y-unit\" x=\"" << (f.L - 6) << "\" y=\"" << (f.y0() - 8) << "\">" << escape(unit) << "</text>\n";
  s << "</g>\n";
}

void legend(std::ostringstream& s, const Frame& f, const std::vector<std::pair<std::string, std::string>>& items) {
  // items: (css class of the swatch, label)
  double x = f.L + 8;
  s << "<g class=\"legend\">\n";
  for (const auto& it : items) {
    s << "<rect class=\"" << it.first << " swatch\" x=\"" << fixed(x, 1) << "\" y=\"" << (f.y0() - 14)
      << "\" width=\"10\" height=\"10\"/><text x=\"" << fixed(x + 14, 1) << "\" y=\"" << (f.y0() - 5) << "\">"
      << escape(it.second) << "</text>\n";
    x += 26 + 6.5 * static_cast<double>(it.second.size());
  }
  s << "</g>\n";
}

}  // namespace

std::string render_latency_plot(const std::vector<LatencyPoint>& points, const std::vector<FaultBand>& bands,
                                int64_t span_ns, const PlotOptions& opts) {
  const Frame f = frame_of(opts, span_ns);
  double min_ms = 1e300, max_ms = 0;
  for (const auto& p : points) {
    const double ms = std::max(1e-3, static_cast<double>(p.latency_ns) / 1e6);
    min_ms = std::min(min_ms, ms);
    max_ms = std::max(max_ms, ms);
  }
  if (points.empty()) min_ms = max_ms = 1;
  double lo = std::pow(10.0, std::floor(std::log10(min_ms)));
  double hi = std::pow(10.0, std::ceil(std::log10(max_ms)));
  if (hi <= lo) hi = lo * 10;
  const double llo = std::log10(lo), lhi = std::log10(hi);
  auto y_of = [&](int64_t latency_ns) {
    const double ms = std::max(1e-3, static_cast<double>(latency_ns) / 1e6);
    return f.y1() - (std::log10(ms) - llo) / (lhi - llo) * f.PH;
  };

  // Decimate: one mark per (outcome, cell), cells of c x c pixels, c the smallest of 1, 2, 3, 4, 6, 8, ... px
  // that keeps the marks of each outcome within max_marks_per_outcome. Each point's position is computed once;
  // the cells of one outcome and size are marked in a bitmap over their bounding box.
  const OpType order[] = {OpType::kOk, OpType::kFail, OpType::kInfo};
  struct Pos {
    double x, y;
  };
  // Per outcome, in the order of the points: their positions and the box around them.
  struct Outcome {
    std::vector<Pos> pos;
    double x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  };
  Outcome outcomes[3];
  {
    size_t count[3] = {0, 0, 0};  // reserved exactly: no copy as they grow
    for (const auto& p : points) ++count[p.outcome == OpType::kOk ? 0 : p.outcome == OpType::kFail ? 1 : 2];
    for (int o = 0; o < 3; ++o) outcomes[o].pos.reserve(count[o]);
  }
  // Failed acquires by the last latency seen: a contended lock's acquires mostly fail after the same wait (their
  // timeout), and log10 is most of a point's cost. (Failures only: other latencies seldom repeat.)
  int64_t last_fail_ns = std::numeric_limits<int64_t>::min();
  double last_fail_y = 0;
  for (const auto& p : points) {
    const int o = p.outcome == OpType::kOk ? 0 : p.outcome == OpType::kFail ? 1 : 2;
    Outcome& out = outcomes[o];
    double y;
    if (o != 1) {
      y = y_of(p.latency_ns);
    } else if (p.latency_ns == last_fail_ns) {
      y = last_fail_y;
    } else {
      y = last_fail_y = y_of(p.latency_ns);
      last_fail_ns = p.latency_ns;
    }
    const Pos q{f.x(p.invoke_ns), y};
    if (out.pos.empty()) {
      out.x0 = out.x1 = q.x;
      out.y0 = out.y1 = q.y;
    }
    out.x0 = std::min(out.x0, q.x);
    out.x1 = std::max(out.x1, q.x);
    out.y0 = std::min(out.y0, q.y);
    out.y1 = std::max(out.y1, q.y);
    out.pos.push_back(q);
  }
  // The cells of one outcome at one size: a bitmap over the box of its cells when that is small enough (it is
  // for any plot of a sane size), a hash set otherwise.
  class Cells {
   public:
    Cells(const Outcome& o, double c) : c_(c) {
      if (o.pos.empty()) return;
      // floor is monotonic: the box of the cells is the cells of the box.
      x0_ = cell(o.x0);
      x1_ = cell(o.x1);
      y0_ = cell(o.y0);
      y1_ = cell(o.y1);
      if ((x1_ - x0_ + 1) <= (int64_t{1} << 16) && (y1_ - y0_ + 1) <= (int64_t{1} << 16) &&
          (x1_ - x0_ + 1) * (y1_ - y0_ + 1) <= (int64_t{1} << 24)) {
        bits_.assign(static_cast<size_t>((x1_ - x0_ + 1) * (y1_ - y0_ + 1)), 0);
      }
    }
    // Marks the cell of a point; true when it was not marked before.
    bool insert(const Pos& p) {
      const int64_t cx = cell(p.x), cy = cell(p.y);
      if (!bits_.empty()) {
        const size_t k = static_cast<size_t>((cy - y0_) * (x1_ - x0_ + 1) + (cx - x0_));
        if (bits_[k]) return false;
        bits_[k] = 1;
        ++size_;
        return true;
      }
      const bool added = set_.insert((cx << 20) | (cy & 0xfffff)).second;
      size_ += added;
      return added;
    }
    size_t size() const { return size_; }

   private:
    int64_t cell(double v) const { return static_cast<int64_t>(std::floor(v / c_)); }
    double c_;
    int64_t x0_ = 0, x1_ = 0, y0_ = 0, y1_ = 0;
    std::vector<uint8_t> bits_;  // bytes: faster to test and set than std::vector<bool>
    std::unordered_set<int64_t> set_;
    size_t size_ = 0;
  };
  double cell = 1;
  for (const double c : {1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0}) {
    cell = c;
    // A size fits when no outcome has more marked cells than the limit: decided at the first outcome that goes
    // past it (the rest of its points, and the other outcomes, are not marked at this size).
    bool fits = true;
    for (const Outcome& o : outcomes) {
      Cells cells(o, c);
      for (const Pos& p : o.pos) {
        if (cells.insert(p) && cells.size() > opts.max_marks_per_outcome) {
          fits = false;
          break;
        }
      }
      if (!fits) break;
    }
    if (fits) break;
  }
  std::ostringstream marks;
  size_t drawn = 0;
  for (int o = 0; o < 3; ++o) {
    const OpType t = order[o];
    Cells cells(outcomes[o], cell);
    for (const Pos& p : outcomes[o].pos) {
      if (!cells.insert(p)) continue;
      ++drawn;
      // The first point of each cell is drawn where it is.
      const double x = p.x, y = p.y;
      const std::string xs = fixed(x, 1), ys = fixed(y, 1);
      switch (t) {
        case OpType::kOk:
          marks << "<circle class=\"pt-ok\" cx=\"" << xs << "\" cy=\"" << ys << "\" r=\"1.8\"/>\n";
          break;
        case OpType::kFail:
          marks << "<rect class=\"pt-fail\" x=\"" << fixed(x - 1.5, 1) << "\" y=\"" << fixed(y - 1.5, 1)
                << "\" width=\"3\" height=\"3\"/>\n";
          break;
        default:
          marks << "<path class=\"pt-info\" d=\"M" << fixed(x - 2.5, 1) << " " << fixed(y - 2.5, 1)
                << "l5 5m0-5l-5 5\"/>\n";
      }
    }
  }

  std::ostringstream s;
  open_svg(s, f, "plot-latency",
           " data-points=\"" + std::to_string(points.size()) + "\" data-drawn=\"" + std::to_string(drawn) +
               "\" data-cell-px=\"" + fixed(cell, 0) + "\"");
  bands_and_time_axis(s, f, bands);
  s << "<g class=\"axis y-axis\">\n";
  for (double e = llo; e <= lhi + 1e-9; e += 1) {
    const double v = std::pow(10.0, e);
    const double y = f.y1() - (e - llo) / (lhi - llo) * f.PH;
    s << "<line class=\"grid\" x1=\"" << f.L << "\" y1=\"" << fixed(y, 1) << "\" x2=\"" << (f.L + f.P) << "\" y2=\""
      << fixed(y, 1) << "\"/><text class=\"y-label\" x=\"" << (f.L - 6) << "\" y=\"" << fixed(y + 4, 1) << "\">"
      << (v >= 1 ? fixed(v, 0) : fixed(v, static_cast<int>(std::lround(-e)))) << "</text>\n";
  }
  s << "<text class=\"y-unit\" x=\"" << (f.L - 6) << "\" y=\"" << (f.y0() - 8) << "\">ms (log)</text>\n";
  s << "</g>\n";
  legend(s, f, {{"sw-ok", "ok"}, {"sw-fail", "fail"}, {"sw-info", "info (indeterminate)"}});
  s << "<g class=\"marks\">\n" << marks.str() << "</g>\n";
  if (points.empty()) {
    s << "<text class=\"plot-empty\" x=\"" << (f.L + f.P / 2) << "\" y=\"" << (f.y0() + f.PH / 2)
      << "\">no acquire operations</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

std::string render_throughput_plot(const History& h, const std::vector<FaultBand>& bands, int64_t span_ns,
                                   const PlotOptions& opts) {
  const Frame f = frame_of(opts, span_ns);
  const double span_s = static_cast<double>(f.span_ns) / 1e9;
  double bin_s = nice_step(0, span_s, std::max(1, opts.throughput_bins));
  const size_t nbins = std::max<size_t>(1, static_cast<size_t>(std::ceil(span_s / bin_s)));
  std::vector<double> ok(nbins), fail(nbins), info(nbins);
  size_t completions = 0;
  for (const Op& op : h) {
    if (!op.is_client() || op.is_invoke() || op.is_notice()) continue;
    size_t b = static_cast<size_t>(static_cast<double>(op.time_ns) / 1e9 / bin_s);
    b = std::min(b, nbins - 1);
    (op.is_ok() ? ok : op.is_fail() ? fail : info)[b] += 1;
    ++completions;
  }
  // The last bin may be partial: scale by its real width.
  double max_rate = 1;
  std::vector<double> width(nbins, bin_s);
  width.back() = std::max(bin_s * 0.05, span_s - bin_s * static_cast<double>(nbins - 1));
  for (size_t i = 0; i < nbins; ++i) {
    ok[i] /= width[i];
    fail[i] /= width[i];
    info[i] /= width[i];
    max_rate = std::max({max_rate, ok[i], fail[i], info[i]});
  }
  max_rate = nice_ticks(0, max_rate, 4).back() < max_rate ? max_rate * 1.1 : max_rate;
  auto line = [&](const std::vector<double>& v, const char* cls) {
    std::ostringstream l;
    l << "<polyline class=\"" << cls << "\" points=\"";
    for (size_t i = 0; i < nbins; ++i) {
      const double t0 = bin_s * static_cast<double>(i), t1 = std::min(span_s, t0 + bin_s);
      const double y = f.y1() - v[i] / max_rate * f.PH;
      l << fixed(f.L + t0 / span_s * f.P, 1) << "," << fixed(y, 1) << " " << fixed(f.L + t1 / span_s * f.P, 1) << ","
        << fixed(y, 1) << " ";
    }
    l << "\"/>\n";
    return l.str();
  };
  std::ostringstream s;
  open_svg(s, f, "plot-throughput",
           " data-points=\"" + std::to_string(completions) + "\" data-bin-s=\"" + fixed(bin_s, 3) + "\"");
  bands_and_time_axis(s, f, bands);
  linear_y_axis(s, f, max_rate, "ops/s");
  legend(s, f, {{"sw-ok", "ok"}, {"sw-fail", "fail"}, {"sw-info", "info"}});
  s << line(ok, "tp-ok") << line(fail, "tp-fail") << line(info, "tp-info");
  s << "</svg>\n";
  return s.str();
}

std::string render_lost_updates_plot(const LostUpdates& lost, const std::vector<FaultBand>& bands, int64_t span_ns,
                                     const PlotOptions& opts) {
  const Frame f = frame_of(opts, span_ns);
  const size_t n = lost.lost_completion_ns.size();
  const double max = std::max<double>(1, static_cast<double>(n));
  const double ymax = nice_ticks(0, max, 4).back() < max ? max * 1.1 : max;
  std::ostringstream s;
  open_svg(s, f, "plot-lost",
           " data-lost=\"" + std::to_string(n) + "\" data-acknowledged=\"" + std::to_string(lost.acknowledged) + "\"");
  bands_and_time_axis(s, f, bands);
  linear_y_axis(s, f, ymax, "lost adds");
  legend(s, f, {{"sw-lost", "cumulative acknowledged adds missing from the final read"}});
  // A step line, decimated to one vertex pair per pixel column.
  s << "<polyline class=\"lost-line\" points=\"" << f.L << "," << f.y1() << " ";
  auto y_of = [&](size_t count) { return fixed(f.y1() - static_cast<double>(count) / ymax * f.PH, 1); };
  size_t i = 0;
  while (i < n) {
    const long px = std::lround(f.x(lost.lost_completion_ns[i]));
    size_t j = i;
    while (j + 1 < n && std::lround(f.x(lost.lost_completion_ns[j + 1])) == px) ++j;
    const std::string xs = fixed(f.x(lost.lost_completion_ns[i]), 1);
    s << xs << "," << y_of(i) << " " << xs << "," << y_of(j + 1) << " ";
    i = j + 1;
  }
  s << (f.L + f.P) << "," << y_of(n) << "\"/>\n";
  s << "</svg>\n";
  return s.str();
}

}  // namespace report
}  // namespace lockcheck
