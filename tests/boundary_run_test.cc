// `lockcheck boundary` end to end on real redis-server processes: a short search over the holder's pause
// against a 300 ms TTL (single + client-pause), two probes of one 4 s run each; the folder, its pages and every
// run are there afterwards. Kept short: the search's logic is tests/boundary_test.cc's.
#include "harness/boundary.h"

#include <gtest/gtest.h>

#include <boost/filesystem.hpp>
#include <sstream>

#include "core/exit_codes.h"
#include "core/run_files.h"
#include "sys/process.h"
#include "tests/support/ci.h"
#include "tests/support/test_util.h"

namespace lockcheck {
namespace {

namespace fs = boost::filesystem;

using testing_util::have_redis_server;

TEST(BoundaryRunTest, AShortSearchOverThePauseLengthKeepsEveryRunAndWritesItsPages) {
  LOCKCHECK_NEED(have_redis_server(), "redis-server is not installed");
  TempDir dir;
  RunConfig c;
  c.results_dir = dir.str() + "/results";
  c.lock = "single";
  c.nemesis = {"client-pause"};
  c.nemesis_targeting = "holder";
  c.time_limit_s = 4;
  c.nemesis_interval_s = 1;
  c.ttl_ms = 300;
  c.seed = 11;
  BoundaryOptions o;
  o.param = "pause_ms";
  o.from = 20;
  o.to = 1500;  // five TTLs: the next holder takes the lock while the paused one still uses it
  o.seeds = 1;
  o.resolution = 5000;  // wider than the range: the two ends only
  o.budget_min = 3;
  std::ostringstream out;
  const int code = boundary(c, o, out, LOCKCHECK_BINARY);
  EXPECT_TRUE(code == kExitValid || code == kExitUnknown) << code << "\n" << out.str();
  fs::path work;
  for (const auto& e : fs::directory_iterator(c.results_dir)) {
    if (e.path().filename().string().rfind("boundary-pause-ms-single-", 0) == 0) work = e.path();
  }
  ASSERT_FALSE(work.empty()) << out.str();
  for (const char* f : {"boundary.json", "boundary.md", "boundary.html"}) {
    EXPECT_TRUE(fs::exists(work / f)) << f;
  }
  const nlohmann::json j = read_json_file((work / "boundary.json").string());
  ASSERT_EQ(j["probes"].size(), 2u) << j.dump(2);
  EXPECT_EQ(j["probes"][1]["value"], 1500);
  EXPECT_EQ(j["probes"][1]["class"], "unsafe") << "a holder paused for five TTLs is a stale holder";
  EXPECT_TRUE(fs::exists(work / "candidates" / "00" / "config.json"));
  size_t runs = 0;
  for (const auto& e : fs::directory_iterator(work / "runs")) {
    if (!fs::is_symlink(e.path()) && fs::exists(e.path() / "report.html")) ++runs;  // not "latest"
  }
  EXPECT_EQ(runs, 2u) << "every probe's run is kept, with its report";
}

}  // namespace
}  // namespace lockcheck
