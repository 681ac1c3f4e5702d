// `lockcheck rerun RUN_DIR`: a stored run's configuration and seed again, to reproduce an anomaly by hand.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <utility>

#include "core/history.h"

namespace lockcheck {

// The stored config and seed again, in the same results folder; says how far the new run's fault timeline
// matched the old one (and records it in the new results.json under "rerun").
int rerun(const std::string& run_dir, std::ostream& out);

// How many of the old run's faults the new run repeated in order (same f, fault, targets), out of how many.
std::pair<size_t, size_t> fault_timeline_match(const History& old_run, const History& new_run);

}  // namespace lockcheck
