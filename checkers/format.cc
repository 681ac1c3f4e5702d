#include "checkers/format.h"

#include <cstdio>

namespace lockcheck {

std::string format_time_s(int64_t time_ns) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(time_ns) / 1e9);
  return buf;
}

std::string format_duration_ms(int64_t duration_ns) {
  char buf[64];
  const double ms = static_cast<double>(duration_ns) / 1e6;
  if (ms >= 10.0 || ms <= -10.0) {
    std::snprintf(buf, sizeof buf, "%.0f ms", ms);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g ms", ms);
  }
  return buf;
}

std::string format_percent(int64_t part, int64_t whole) {
  char buf[64];
  const double p = whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
  std::snprintf(buf, sizeof buf, "%.1f%%", p);
  return buf;
}

}  // namespace lockcheck
