// The command line: `run`'s flags (harness/cli.h parse_run_flags, then resolve_plan as run does) and boundary's
// --anomaly (parse_anomaly_flag). The input is split into arguments at newlines; a first argument "--anomaly"
// sends the second to parse_anomaly_flag. ConfigError or boost::program_options::error (both exit 2), or a
// config, nothing else.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <boost/program_options/errors.hpp>

#include "fuzz/fuzz_common.h"
#include "harness/boundary.h"
#include "harness/cli.h"
#include "harness/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args;
  size_t pos = 0;
  while (pos <= text.size() && args.size() < 64) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    args.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  using lockcheck::ConfigError;
  namespace po = boost::program_options;
  if (args.size() >= 2 && args[0] == "--anomaly") {
    lockcheck::fuzz::expect_only<ConfigError>("parse_anomaly_flag",
                                              [&] { (void)lockcheck::parse_anomaly_flag(args[1]); });
    return 0;
  }
  lockcheck::RunConfig c;
  if (!lockcheck::fuzz::expect_only<ConfigError, po::error>("parse_run_flags",
                                                            [&] { c = lockcheck::parse_run_flags(args); })) {
    return 0;
  }
  if (c.cluster == "ssh" || !c.server_version.empty()) return 0;  // reads files, asks server builds: not here
  lockcheck::fuzz::expect_only<ConfigError>("resolve_plan", [&] { (void)lockcheck::resolve_plan(c); });
  return 0;
}
