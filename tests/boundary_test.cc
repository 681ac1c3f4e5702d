// `lockcheck boundary` with a fake runner (which values are probed, how a probe is classed and cut short, the
// bisection, the budget, the direction), setting a run parameter by key, flag or lock option, and the command's
// bad input.
#include "harness/boundary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>

#include "core/exit_codes.h"

namespace lockcheck {
namespace {

// Each run takes its time limit plus 2 s of start-up on a fake clock; `invalid(value, try)` decides a run.
class FakeRunner : public ReproRunner {
 public:
  explicit FakeRunner(std::function<bool(double, int)> invalid) : invalid_(std::move(invalid)) {}
  TrialOutcome run(const ReproCase& c, size_t candidate, int try_index) override {
    (void)candidate;
    ++runs;
    clock_s += c.config.time_limit_s + 2.0;
    values.push_back(static_cast<double>(c.config.drift_ppm));
    TrialOutcome t;
    t.reproduced = invalid_(static_cast<double>(c.config.drift_ppm), try_index);
    t.exit_code = t.reproduced ? kExitInvalid : kExitValid;
    if (t.reproduced) t.first_anomaly_s = 3.0;
    return t;
  }
  double now_s() override { return clock_s; }

  int runs = 0;
  double clock_s = 0;
  std::vector<double> values;  // per run

 private:
  std::function<bool(double, int)> invalid_;
};

RunConfig drift_run() {
  RunConfig c;
  c.lock = "redlock";
  c.nemesis = {"clock:drift"};
  c.time_limit_s = 8;
  c.seed = 1;
  return c;
}

BoundaryOptions drift_options(double from, double to) {
  BoundaryOptions o;
  o.param = "drift_ppm";
  o.from = from;
  o.to = to;
  o.seeds = 10;
  o.resolution = 1000;
  o.budget_min = 600;
  return o;
}

std::vector<double> probed(const BoundaryResult& r) {
  std::vector<double> v;
  for (const auto& p : r.probes) v.push_back(p.value);
  return v;
}

// A sharp flip at 30000: every run at or above it is invalid.
TEST(BoundarySearchTest, BisectsASharpFlipToTheResolution) {
  FakeRunner runner([](double v, int) { return v >= 30000; });
  std::ostringstream log;
  const BoundaryResult r = boundary_search(drift_run(), drift_options(0, 64000), runner, log);
  // ends first, then midpoints of the bracket around the flip
  ASSERT_GE(r.probes.size(), 3u);
  EXPECT_EQ(r.probes[0].value, 0);
  EXPECT_EQ(r.probes[1].value, 64000);
  EXPECT_EQ(r.probes[2].value, 32000);
  EXPECT_EQ(r.probes[3].value, 16000);
  ASSERT_TRUE(r.last_safe && r.first_unsafe);
  EXPECT_LT(*r.last_safe, 30000);
  EXPECT_GE(*r.first_unsafe, 30000);
  EXPECT_LE(*r.first_unsafe - *r.last_safe, 1000);
  EXPECT_TRUE(r.unsafe_above);
  EXPECT_TRUE(r.resolved);
  EXPECT_TRUE(r.notes.empty()) << r.notes.front();
  for (const auto& p : r.probes) {
    if (p.cls == ProbeClass::kSafe) EXPECT_EQ(p.tries, 10) << "safe needs every seed";
    if (p.cls == ProbeClass::kUnsafe) EXPECT_EQ(p.tries, 9) << "unsafe is certain at 9 of 10";
  }
  EXPECT_NE(log.str().find("drift_ppm = 32000"), std::string::npos);
}

// Between 20000 and 40000 some seeds fail (seed k at value >= 40000 - 2000 k): a mixed zone, whose two edges
// are searched separately.
TEST(BoundarySearchTest, AMixedZoneHasTwoEdges) {
  FakeRunner runner([](double v, int k) { return v >= 40000 - 2000.0 * k; });
  std::ostringstream log;
  const BoundaryResult r = boundary_search(drift_run(), drift_options(0, 64000), runner, log);
  ASSERT_TRUE(r.last_safe && r.first_unsafe);
  // safe: no seed fails, below 40000 - 2000 * 9 = 22000; unsafe: 9 of 10 fail from 40000 - 2000 * 1 = 38000
  EXPECT_LT(*r.last_safe, 22000);
  EXPECT_GE(*r.last_safe, 21000);
  EXPECT_GE(*r.first_unsafe, 38000);
  EXPECT_LE(*r.first_unsafe, 39000);
  bool mixed = false;
  for (const auto& p : r.probes) {
    if (p.cls == ProbeClass::kMixed) {
      mixed = true;
      EXPECT_GT(p.invalid, 0);
      EXPECT_LT(p.invalid, 9);
    }
  }
  EXPECT_TRUE(mixed);
  EXPECT_TRUE(r.resolved);
}

// A larger value is safer here (a TTL, a drift factor): the search finds the direction from the ends.
TEST(BoundarySearchTest, TheUnsafeEndMayBeTheSmallerValue) {
  FakeRunner runner([](double v, int) { return v < 10000; });
  std::ostringstream log;
  const BoundaryResult r = boundary_search(drift_run(), drift_options(0, 64000), runner, log);
  EXPECT_FALSE(r.unsafe_above);
  ASSERT_TRUE(r.last_safe && r.first_unsafe);
  EXPECT_GE(*r.last_safe, 10000);
  EXPECT_LT(*r.first_unsafe, 10000);
  EXPECT_LE(*r.last_safe - *r.first_unsafe, 1000);
}

TEST(BoundarySearchTest, ARangeThatIsSafeThroughoutSaysSoAfterTwoProbes) {
  FakeRunner runner([](double, int) { return false; });
  std::ostringstream log;
  const BoundaryResult r = boundary_search(drift_run(), drift_options(1000, 5000), runner, log);
  EXPECT_EQ(r.probes.size(), 2u);
  EXPECT_TRUE(r.last_safe.has_value());
  EXPECT_FALSE(r.first_unsafe.has_value());
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.back().find("unsafe edge lies outside the range"), std::string::npos);
}

TEST(BoundarySearchTest, TheBudgetIsHardAndSaysWhereItStopped) {
  FakeRunner runner([](double v, int) { return v >= 30000; });
  BoundaryOptions o = drift_options(0, 64000);
  o.budget_min = 5;  // 300 s: 30 runs of 10 s
  std::ostringstream log;
  const BoundaryResult r = boundary_search(drift_run(), o, runner, log);
  EXPECT_TRUE(r.budget_exhausted);
  EXPECT_FALSE(r.resolved);
  EXPECT_LE(runner.clock_s, 300.0) << "no run may end past the budget";
  EXPECT_EQ(r.stopped, "budget ran out");
  EXPECT_EQ(r.probes.back().cls, ProbeClass::kUndecided);
}

TEST(BoundarySearchTest, EveryProbeRunsTheSameSeeds) {
  std::vector<int> tries;
  FakeRunner runner([&](double, int k) {
    tries.push_back(k);
    return false;
  });
  BoundaryOptions o = drift_options(0, 100);
  o.seeds = 3;
  std::ostringstream log;
  boundary_search(drift_run(), o, runner, log);
  EXPECT_EQ(tries, (std::vector<int>{0, 1, 2, 0, 1, 2}));
}

TEST(BoundaryParamTest, AParameterIsAConfigKeyAFlagOrALockOption) {
  RunConfig c;
  EXPECT_EQ(set_run_param(c, "drift_ppm", 12345.6), 12346);  // an integer field: rounded
  EXPECT_EQ(c.drift_ppm, 12346);
  set_run_param(c, "--pause-ms", 1500);
  EXPECT_EQ(c.pause_ms, 1500);
  set_run_param(c, "ttl-ms", 2000);
  EXPECT_EQ(c.ttl_ms, 2000);
  set_run_param(c, "nemesis_interval_s", 2.5);
  EXPECT_EQ(c.nemesis_interval_s, 2.5);
  set_run_param(c, "lock-opt:drift_factor", 0.05);
  EXPECT_EQ(c.lock_opts["drift_factor"].dump(), "0.05");
  EXPECT_THROW(set_run_param(c, "no_such_setting", 1), ConfigError);
  EXPECT_THROW(set_run_param(c, "lock", 1), ConfigError);       // not numeric
  EXPECT_THROW(set_run_param(c, "ttl_ms", 1), ConfigError);     // below the field's range
  EXPECT_THROW(set_run_param(c, "lock-opt:", 1), ConfigError);
  try {
    set_run_param(c, "ttl_ms", 1);
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--ttl-ms"), std::string::npos) << e.what();
  }
}

TEST(BoundaryCommandTest, BadRangesAndOptionsAreUsageErrors) {
  RunConfig c = drift_run();
  std::ostringstream out;
  BoundaryOptions o = drift_options(5, 5);
  EXPECT_THROW(boundary(c, o, out), ConfigError);  // from == to
  o = drift_options(0, NAN);
  EXPECT_THROW(boundary(c, o, out), ConfigError);
  o = drift_options(-2000000, 0);  // a clock cannot run backwards: the field refuses the end
  EXPECT_THROW(boundary(c, o, out), ConfigError);
  o = drift_options(0, 1000);
  o.log_scale = true;  // log needs both ends > 0
  EXPECT_THROW(boundary(c, o, out), ConfigError);
  o = drift_options(0, 1000);
  o.unsafe_at = 11;  // more than the seeds
  EXPECT_THROW(boundary(c, o, out), ConfigError);
  o = drift_options(0, 1000);
  o.param = "";
  EXPECT_THROW(boundary(c, o, out), ConfigError);
  o = drift_options(0, 1000);
  o.budget_min = 0;
  EXPECT_THROW(boundary(c, o, out), ConfigError);
  // a fault's setting without the fault would search nothing
  c.nemesis = {"pause"};
  o = drift_options(1000, 5000);
  EXPECT_THROW(boundary(c, o, out), ConfigError);
}

}  // namespace
}  // namespace lockcheck
