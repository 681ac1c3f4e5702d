// Seed search: `lockcheck run --seeds N` runs one configuration with N seeds and says how many found an
// anomaly and how soon (the figures of the findings matrix and of `test-all`'s expectations).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/config.h"

namespace lockcheck {

// `lockcheck run --seeds N`: runs cfg with seeds cfg.seed, cfg.seed+1, ... (cfg.seed 0: 1, 2, ...), prints how
// many found an anomaly and the median time to the first one. Returns 1 if any found one, else the usual.
int run_seeds(const RunConfig& cfg, int n, std::ostream& out);

// The time (ns since the run started) of the run's first anomaly, from results.json (from_ns of the
// anomalies, else the time of their first op); nullopt when it found none. only: the anomalies of these
// checkers (empty: every invalid checker's).
std::optional<int64_t> first_anomaly_ns(const std::string& run_dir, const std::vector<std::string>& only = {});

}  // namespace lockcheck
