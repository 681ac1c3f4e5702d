#include "report/svg_common.h"

#include <cmath>

namespace lockcheck {
namespace report {

const char* key_color(size_t i) {
  static const char* palette[] = {"#3b6fb6", "#2a9d8f", "#8e5ccf", "#d08c2b", "#5b8c3a",
                                  "#c0508f", "#4aa3c8", "#8c6d46", "#6d7fa8", "#a3a33a"};
  return palette[i % 10];
}

const char* fault_color(const std::string& fault) {
  if (fault == "partition") return "#e0a030";
  if (fault == "delay") return "#c9b458";
  if (fault == "pause") return "#7f7fd5";
  if (fault == "kill") return "#b0413e";
  if (fault == "power-loss") return "#7a1f1c";  // kill's red, darker: a kill that also loses the page cache
  if (fault == "clock") return "#3fa7a0";
  if (fault == "client-pause") return "#a070c0";
  if (fault == "failover") return "#d0603a";
  static const char* others[] = {"#8a8a8a", "#6f9f5f", "#b07aa1", "#9c755f", "#76b7b2"};
  size_t hsh = 0;
  for (char c : fault) hsh = hsh * 31 + static_cast<unsigned char>(c);
  return others[hsh % 5];
}

double nice_step(double lo, double hi, int target) {
  double raw = (hi - lo) / static_cast<double>(target);
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  double p = std::pow(10.0, std::floor(std::log10(raw)));
  double m = raw / p;
  double step = m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10;
  return step * p;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  std::vector<double> ticks;
  double step = nice_step(lo, hi, target);
  double first = std::ceil(lo / step) * step;
  for (int i = 0; i < 1000; ++i) {
    double t = first + step * i;
    if (t > hi + step * 1e-9) break;
    ticks.push_back(t);
  }
  return ticks;
}

}  // namespace report
}  // namespace lockcheck
