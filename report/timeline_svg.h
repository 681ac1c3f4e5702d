// The lock timeline of a report: one lane per client process, a bar for each hold of a lock key, the lease
// window lighter behind it, fault periods as bands across all lanes, every anomaly's window outlined in red.
// Output is one <svg id="timeline"> element with stable class names and data- attributes:
//   g.lane[data-process]                      one per lane
//   rect.bar[data-process][data-key]          one per drawn hold (rect.bar.agg[data-n]: merged holds)
//   rect.bar.maybe                            an indeterminate (info) acquire
//   rect.lease / rect.overrun                 lease window; part of a hold past its lease
//   rect.notice[data-process]                 when the process's lock library said the hold's lock was lost
//   rect.band[data-fault]                     one per fault period, across all lanes
//   rect.client-fault[data-process][data-fault]  a client fault's paused or crashed process, on its own lane
//   rect.violation[data-anomaly][data-process]  one per (anomaly, process lane) ("all" when it has none)
// The lanes, fault rows and anomaly strip are nested <svg class="zoomable"> elements in ms coordinates; the
// report's script zooms by changing their viewBox (without script the whole run is shown).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/anomalies.h"
#include "report/run_model.h"

namespace lockcheck {
namespace report {

struct TimelineOptions {
  int width_px = 1200;  // the whole drawing
  int label_px = 64;    // the lane label column on the left
  int right_px = 24;
  // Above this many holds, holds of one lane and key closer than one pixel at full width are merged into one
  // bar (except around anomalies), so that the drawing stays small for long runs.
  size_t aggregate_above_holds = 2000;
  // Bars drawn at most when merging (a long run with many processes has many holds more than a pixel apart): the
  // merge distance doubles (1, 2, 4, ... px) until the bars fit. Bars kept exact around anomalies count too, but
  // are never merged.
  size_t max_bars = 4000;
  size_t max_violations = 1000;  // anomalies outlined at most
  size_t max_lanes = 32;         // process lanes drawn at most (anomalies' processes first, then the busiest)
};

struct TimeWindow {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
};

// Where the timeline zooms for an anomaly: its window widened to the holds of its processes (on its key, when
// given) that overlap it, plus a margin of a quarter of that width on each side (at least 20 ms). Clipped to
// [0, end_ns]. REQUIRES: a.from_ns and a.to_ns are set.
TimeWindow anomaly_view(const Anomaly& a, const std::vector<Hold>& holds, int64_t end_ns);

// The same for many anomalies over many holds: the holds in blocks, each with the earliest start and latest end
// of its holds, so that a view looks only into the blocks that can overlap the anomaly's window. Gives exactly
// anomaly_view's windows. holds must outlive the index and stay unchanged.
class HoldIndex {
 public:
  explicit HoldIndex(const std::vector<Hold>& holds);
  TimeWindow view(const Anomaly& a, int64_t end_ns) const;

 private:
  static constexpr size_t kBlock = 64;
  const std::vector<Hold>& holds_;
  std::vector<int64_t> min_from_, max_to_;  // per block
};

// The <svg> element, or a short <p> saying there is nothing to draw.
std::string render_timeline(const std::vector<Hold>& holds, const std::vector<FaultBand>& bands,
                            const std::vector<Anomaly>& anomalies, int64_t end_ns, const TimelineOptions& opts = {});
// The same with an index of the holds (a report builds it once for every anomaly view).
std::string render_timeline(const std::vector<Hold>& holds, const HoldIndex& index, const std::vector<FaultBand>& bands,
                            const std::vector<Anomaly>& anomalies, int64_t end_ns, const TimelineOptions& opts = {});

}  // namespace report
}  // namespace lockcheck
