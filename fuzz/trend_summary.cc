// `lockcheck trend`'s reader of a night's summary.json (harness/trend.h night_from_json), and the trend of the
// nights read. The input is one or two summary.json documents (split at a line "---"). ConfigError naming the
// folder, or nights and their trend, nothing else.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "fuzz/fuzz_common.h"
#include "harness/trend.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> docs;
  const size_t cut = text.find("\n---\n");
  docs.push_back(text.substr(0, cut));
  if (cut != std::string::npos) docs.push_back(text.substr(cut + 5));
  std::vector<lockcheck::Night> nights;
  int n = 0;
  for (const auto& d : docs) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(d);
    } catch (const nlohmann::json::exception&) {  // parse_error, out_of_range (1e400)
      return 0;  // read_night says "summary.json unreadable" (ConfigError)
    }
    lockcheck::Night night;
    const std::string dir = "night" + std::to_string(++n);
    if (!lockcheck::fuzz::expect_only<lockcheck::ConfigError>("night_from_json",
                                                              [&] { night = lockcheck::night_from_json(j, dir); })) {
      return 0;
    }
    nights.push_back(std::move(night));
  }
  std::unique_ptr<lockcheck::Trend> t;
  if (!lockcheck::fuzz::expect_only<lockcheck::ConfigError>("compute_trend",
                                                            [&] { t = lockcheck::compute_trend(nights, 0.05); })) {
    return 0;
  }
  lockcheck::fuzz::expect_only<>("the trend's outputs", [&] {
    (void)lockcheck::trend_json(*t);
    (void)lockcheck::trend_html(*t);
  });
  return 0;
}
