// Small text helpers the checkers share for anomaly descriptions and summaries.
#pragma once

#include <cstdint>
#include <string>

namespace lockcheck {

// A history time as seconds since the run started: "12.345 s".
std::string format_time_s(int64_t time_ns);
// A duration in ms: "412 ms" at 10 ms and above, three significant digits below ("0.531 ms").
std::string format_duration_ms(int64_t duration_ns);
// A percentage with one decimal: "12.5%"; "0.0%" when whole is 0.
std::string format_percent(int64_t part, int64_t whole);

}  // namespace lockcheck
