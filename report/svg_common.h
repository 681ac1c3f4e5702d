// Shared pieces of the report's SVG drawings: colours of keys and faults, "nice" axis ticks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lockcheck {
namespace report {

// The colour of the i-th lock key (cycles through a palette of 10).
const char* key_color(size_t i);
// A stable colour for a fault name ("partition", "pause", ...).
const char* fault_color(const std::string& fault);

// Tick positions for an axis from lo to hi (any unit): multiples of 1, 2 or 5 x 10^k, about `target` of them.
// REQUIRES: hi > lo, target >= 1.
std::vector<double> nice_ticks(double lo, double hi, int target);
// The step nice_ticks would use.
double nice_step(double lo, double hi, int target);

}  // namespace report
}  // namespace lockcheck
