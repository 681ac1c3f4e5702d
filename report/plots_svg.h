// The report's plots, each one <svg class="plot ..."> over the run's time axis with the fault periods as
// bands (rect.plot-band): acquire latency (log scale; circle.pt-ok, rect.pt-fail, path.pt-info), throughput
// (polyline.tp-ok/.tp-fail/.tp-info, ops/s per bin) and cumulative lost updates (polyline.lost-line).
// Latency marks are decimated to one per outcome and cell of c x c pixels (c grows until each outcome has at most
// max_marks_per_outcome marks), so a plot stays small for long runs; the svg's data-points / data-drawn /
// data-cell-px attributes say how many there were, how many are drawn and the cell size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/op.h"
#include "report/run_model.h"

namespace lockcheck {
namespace report {

struct PlotOptions {
  int width_px = 1200;
  int height_px = 240;
  int label_px = 64;  // left margin, matches the timeline's label column
  int right_px = 24;
  int throughput_bins = 120;            // about this many bins (rounded to a nice width)
  size_t max_marks_per_outcome = 3000;  // latency marks of each outcome (ok, fail, info) drawn at most
};

// REQUIRES: span_ns > 0 (the time axis runs from 0 to span_ns).
std::string render_latency_plot(const std::vector<LatencyPoint>& points, const std::vector<FaultBand>& bands,
                                int64_t span_ns, const PlotOptions& opts = {});
std::string render_throughput_plot(const History& h, const std::vector<FaultBand>& bands, int64_t span_ns,
                                   const PlotOptions& opts = {});
std::string render_lost_updates_plot(const LostUpdates& lost, const std::vector<FaultBand>& bands, int64_t span_ns,
                                     const PlotOptions& opts = {});

}  // namespace report
}  // namespace lockcheck
