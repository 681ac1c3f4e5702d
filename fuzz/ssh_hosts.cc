// The SSH hosts file (`--cluster ssh --hosts FILE`, cluster/ssh_hosts.h): parse_ssh_hosts. ConfigError naming the
// field, or the hosts, nothing else.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "cluster/ssh_hosts.h"
#include "core/config.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::optional<nlohmann::json> parsed = lockcheck::fuzz::json_or_none(data, size);
  if (!parsed) return 0;  // load_ssh_hosts says it is not JSON (ConfigError)
  const nlohmann::json& j = *parsed;
  lockcheck::fuzz::expect_only<lockcheck::ConfigError>("parse_ssh_hosts",
                                                       [&] { (void)lockcheck::parse_ssh_hosts(j, "fuzz.json"); });
  return 0;
}
