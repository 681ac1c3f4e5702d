// config.json (`run --config FILE`, every stored run's config): from_json into RunConfig, then resolve_plan as a
// run does before it starts anything. ConfigError (exit 2) or a plan, nothing else.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "fuzz/fuzz_common.h"
#include "harness/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::optional<nlohmann::json> parsed = lockcheck::fuzz::json_or_none(data, size);
  if (!parsed) return 0;  // `run --config` says "is not valid JSON" (ConfigError)
  const nlohmann::json& j = *parsed;
  lockcheck::RunConfig c;
  if (!lockcheck::fuzz::expect_only<lockcheck::ConfigError>("from_json(RunConfig)",
                                                            [&] { lockcheck::from_json(j, c); })) {
    return 0;
  }
  // resolve_plan reads the hosts file an ssh config names and asks the server builds for their version: not here.
  if (c.cluster == "ssh" || !c.server_version.empty()) return 0;
  lockcheck::fuzz::expect_only<lockcheck::ConfigError>("resolve_plan", [&] { (void)lockcheck::resolve_plan(c); });
  // A config that was accepted is written back (config.json of the run) and must read back the same.
  nlohmann::json again;
  lockcheck::fuzz::expect_only<>("to_json(RunConfig)", [&] { lockcheck::to_json(again, c); });
  return 0;
}
