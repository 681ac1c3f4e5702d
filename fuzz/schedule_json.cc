// schedule.json (`run --schedule FILE`, `reproduce`): schedule_from_json, then the checks a replay makes
// (check_schedule_nemeses) and the edits reproduce makes of it (faults, without one, cut, slid). ConfigError or a
// schedule, nothing else.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "fuzz/fuzz_common.h"
#include "nemesis/schedule.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::optional<nlohmann::json> parsed = lockcheck::fuzz::json_or_none(data, size);
  if (!parsed) return 0;  // read_schedule_file says it is not JSON (ConfigError)
  const nlohmann::json& j = *parsed;
  lockcheck::Schedule s;
  using lockcheck::ConfigError;
  if (!lockcheck::fuzz::expect_only<ConfigError>("schedule_from_json",
                                                 [&] { s = lockcheck::schedule_from_json(j, "fuzz"); })) {
    return 0;
  }
  lockcheck::fuzz::expect_only<ConfigError>("check_schedule_nemeses",
                                            [&] { lockcheck::check_schedule_nemeses(s, s.nemesis, "--schedule"); });
  lockcheck::fuzz::expect_only<>("schedule edits", [&] {
    const auto faults = lockcheck::schedule_faults(s);
    if (!faults.empty()) (void)lockcheck::without_fault(s, faults.front());
    (void)lockcheck::cut_schedule(s, 1000);
    // Its precondition (reproduce keeps it): nothing moves before the start.
    int64_t earliest = 250;
    for (const auto& e : s.plan) earliest = std::min(earliest, e.at_ms);
    if (earliest >= 0) (void)lockcheck::slid_schedule(s, earliest);
    (void)lockcheck::to_json(s);
  });
  return 0;
}
