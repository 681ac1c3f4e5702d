// The mutex checker on hand-written histories, and on generated ones (bench/history_gen.h).
#include "checkers/mutex.h"

#include <gtest/gtest.h>

#include "bench/history_gen.h"
#include "tests/support/history_builder.h"

namespace lockcheck {
namespace {

using testing::HistoryBuilder;

CheckResult check(const History& h, MutexOptions mo = {},
                  std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  MutexChecker c(mo);
  CheckOptions opts;
  opts.timeout = timeout;
  return run_checker(c, h, opts);
}

TEST(MutexChecker, EmptyHistoryIsUnknown) {
  CheckResult r = check(History{});
  EXPECT_EQ(r.valid, Validity::kUnknown);
  EXPECT_EQ(r.checker, "mutex");
  EXPECT_TRUE(r.anomalies.empty());
  EXPECT_EQ(r.stats["lock_ops"], 0);
}

TEST(MutexChecker, SequentialHoldsAreValid) {
  HistoryBuilder b;
  b.invoke(0, "acquire");
  b.ok(0, "acquire");
  b.invoke(0, "release");
  b.ok(0, "release");
  b.invoke(1, "acquire");
  b.ok(1, "acquire");
  b.invoke(1, "extend");
  b.ok(1, "extend");
  b.invoke(1, "release");
  b.ok(1, "release");
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["per_key"]["lock-0"]["ops"], 5);
}

TEST(MutexChecker, ConcurrentAcquireCompletingAfterReleaseInvokeIsValid) {
  HistoryBuilder b;
  b.invoke(0, "acquire");
  b.invoke(1, "acquire");  // waits
  b.ok(0, "acquire");
  b.invoke(0, "release");
  b.ok(1, "acquire");  // granted once 0's release took effect
  b.ok(0, "release");
  b.invoke(2, "acquire");
  b.invoke(1, "release");
  b.ok(1, "release");
  b.ok(2, "acquire");
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

TEST(MutexChecker, TwoOverlappingAcquiresAreADoubleGrant) {
  HistoryBuilder b;
  b.invoke(0, "acquire");  // t=0
  b.ok(0, "acquire");      // t=1 ms
  b.invoke(1, "acquire");  // t=2
  b.ok(1, "acquire");      // t=3: 0 still holds
  b.invoke(0, "release");  // t=4
  b.ok(0, "release");
  b.invoke(1, "release");  // t=6
  b.ok(1, "release");
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  ASSERT_EQ(r.anomalies.size(), 1u);
  const auto& a = r.anomalies[0];
  EXPECT_EQ(a["kind"], "double-grant");
  EXPECT_EQ(a["key"], "lock-0");
  EXPECT_EQ(a["processes"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(a["from_ns"], 3000000);
  EXPECT_EQ(a["to_ns"], 4000000);
  EXPECT_EQ(a["description"].get<std::string>().rfind("p0 and p1 both held lock-0 for 1 ms from t=0.003 s", 0),
            0u)
      << a["description"];
  // The ops: both acquires (invoke and ok) and the releases that ended the holds.
  for (int i : {0, 1, 2, 3}) {
    EXPECT_NE(std::find(a["ops"].begin(), a["ops"].end(), i), a["ops"].end()) << i;
  }
  EXPECT_EQ(r.summary, a["description"]);
}

TEST(MutexChecker, ReleaseByNonHolderIsInvalid) {
  HistoryBuilder b;
  b.invoke(0, "acquire");
  b.ok(0, "acquire");
  b.invoke(1, "release");
  b.ok(1, "release");
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  const auto& a = r.anomalies[0];
  EXPECT_EQ(a["kind"], "no-linearization");
  EXPECT_NE(a["description"].get<std::string>().find("did not hold"), std::string::npos) << a["description"];
  EXPECT_NE(a["description"].get<std::string>().find("held by p0"), std::string::npos) << a["description"];
}

// A release that took effect on a free lock removed the process's own leftover key, or nothing (it had
// expired): no two processes used the lock at once.
TEST(MutexChecker, ASucceededReleaseOfAFreeLockIsANoOp) {
  HistoryBuilder b;
  b.invoke(0, "release");
  b.ok(0, "release");
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
}

TEST(MutexChecker, AnExtendAfterTheUseEndedIsANoOpOnAFreeLock) {
  HistoryBuilder b;
  b.invoke(0, "acquire");
  b.ok(0, "acquire");
  b.invoke(0, "release");
  b.ok(0, "release");
  b.invoke(0, "extend");
  b.ok(0, "extend");
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

TEST(MutexChecker, AnExtendWhileAnotherProcessHoldsTheLockIsInvalid) {
  HistoryBuilder b;
  b.invoke(0, "acquire");
  b.ok(0, "acquire");
  b.invoke(0, "release");
  b.ok(0, "release");
  b.invoke(1, "acquire");
  b.ok(1, "acquire");
  b.invoke(0, "extend");  // process 1 holds it all along
  b.ok(0, "extend");
  b.invoke(1, "release");
  b.ok(1, "release");
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  EXPECT_NE(r.summary.find("extend of lock-0 succeeded"), std::string::npos) << r.summary;
  EXPECT_NE(r.summary.find("held by p1"), std::string::npos) << r.summary;
}

TEST(MutexChecker, FailedOpsAreRemoved) {
  HistoryBuilder b;
  b.invoke(0, "acquire");
  b.ok(0, "acquire");
  b.invoke(1, "acquire");
  b.fail(1, "acquire");
  b.invoke(1, "release");
  b.fail(1, "release");
  b.invoke(0, "release");
  b.ok(0, "release");
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["per_key"]["lock-0"]["failed_removed"], 2);
}

TEST(MutexChecker, InfoAcquireNeedNotTakeEffect) {
  // Process 1's acquire timed out; if it had taken effect, 2 could not have acquired. It may never take effect.
  HistoryBuilder b;
  b.invoke(1, "acquire");
  b.info(1, "acquire");
  b.invoke(2, "acquire");
  b.ok(2, "acquire");
  b.invoke(2, "release");
  b.ok(2, "release");
  b.invoke(3, "acquire");
  b.ok(3, "acquire");
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

TEST(MutexChecker, InfoAcquireMustBeAllowedToTakeEffect) {
  // A process that keeps going after an info acquire (not the workload's convention, but a legal history):
  // its release can only succeed if the timed-out acquire took effect.
  HistoryBuilder b;
  b.invoke(1, "acquire");
  b.info(1, "acquire");
  b.invoke(1, "release");
  b.ok(1, "release");
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

TEST(MutexChecker, AReleaseNeedsNoAcquireBeforeIt) {
  HistoryBuilder b;
  b.invoke(1, "release");  // completes before the acquire is even invoked: a no-op on the free lock
  b.ok(1, "release");
  b.invoke(1, "acquire");
  b.info(1, "acquire");
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

TEST(MutexChecker, InfoReleaseMustBeAllowedToTakeEffect) {
  HistoryBuilder b;
  b.invoke(0, "acquire");
  b.ok(0, "acquire");
  b.invoke(0, "release");
  b.info(0, "release");  // process 0 retires; the release did happen
  b.invoke(1, "acquire");
  b.ok(1, "acquire");
  b.invoke(1, "release");
  b.ok(1, "release");
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

TEST(MutexChecker, InfoReleaseCannotTakeEffectBeforeItsInvoke) {
  HistoryBuilder b;
  b.invoke(0, "acquire");
  b.ok(0, "acquire");
  b.invoke(1, "acquire");
  b.ok(1, "acquire");  // before 0 even tried to release
  b.invoke(0, "release");
  b.info(0, "release");
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  EXPECT_EQ(r.anomalies[0]["kind"], "double-grant");
}

TEST(MutexChecker, CrashedClientsAreOptional) {
  HistoryBuilder b;
  b.invoke(0, "acquire");
  b.ok(0, "acquire");
  b.invoke(0, "release");  // never completes: the client crashed, the release did happen
  b.invoke(2, "acquire");  // never completes either
  b.invoke(1, "acquire");
  b.ok(1, "acquire");
  b.invoke(3, "acquire");  // never completes: must not be required
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

TEST(MutexChecker, CrashedAcquireDoesNotExplainADoubleGrant) {
  HistoryBuilder b;
  b.invoke(0, "acquire");
  b.ok(0, "acquire");
  b.invoke(2, "release");  // crashed, by a process that never held the lock
  b.invoke(1, "acquire");
  b.ok(1, "acquire");
  EXPECT_EQ(check(b.history()).valid, Validity::kInvalid);
}

TEST(MutexChecker, KeysAreIndependent) {
  HistoryBuilder b;
  b.invoke(0, "acquire", "lock-0");
  b.ok(0, "acquire", "lock-0");
  b.invoke(1, "acquire", "lock-1");
  b.ok(1, "acquire", "lock-1");  // two keys held at once by two processes: fine
  b.invoke(0, "release", "lock-0");
  b.ok(0, "release", "lock-0");
  b.invoke(1, "release", "lock-1");
  b.ok(1, "release", "lock-1");
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["keys"], 2);
}

TEST(MutexChecker, AViolationOnOneKeyDoesNotHideBehindAnother) {
  HistoryBuilder b;
  for (int i = 0; i < 20; ++i) {  // plenty of valid traffic on lock-0
    b.invoke(i % 3, "acquire", "lock-0");
    b.ok(i % 3, "acquire", "lock-0");
    b.invoke(i % 3, "release", "lock-0");
    b.ok(i % 3, "release", "lock-0");
  }
  b.invoke(5, "acquire", "lock-1");
  b.ok(5, "acquire", "lock-1");
  b.invoke(6, "acquire", "lock-1");
  b.ok(6, "acquire", "lock-1");
  b.invoke(7, "acquire", "lock-2");
  b.ok(7, "acquire", "lock-2");
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  ASSERT_EQ(r.anomalies.size(), 1u);
  EXPECT_EQ(r.anomalies[0]["key"], "lock-1");
  EXPECT_EQ(r.anomalies[0]["processes"], nlohmann::json::array({5, 6}));
  EXPECT_EQ(r.stats["per_key"]["lock-0"]["verdict"], "valid");
  EXPECT_EQ(r.stats["per_key"]["lock-1"]["verdict"], "invalid");
  EXPECT_EQ(r.stats["per_key"]["lock-2"]["verdict"], "valid");
}

TEST(MutexChecker, NemesisAndOtherOpsAreIgnored) {
  HistoryBuilder b;
  b.invoke(kNemesis, "partition", "");
  b.invoke(0, "acquire");
  b.info(kNemesis, "partition", "", {{"fault", "partition"}});
  b.ok(0, "acquire");
  b.invoke(1, "add", "lock-0", 5);  // a write on a key with the lock's name: not a lock op
  b.ok(1, "add", "lock-0", 5);
  b.invoke(2, "read", "lock-0");
  b.ok(2, "read", "lock-0", nlohmann::json::array({5}));
  b.invoke(kNemesis, "heal", "");
  b.info(kNemesis, "heal", "");
  b.invoke(0, "release");
  b.ok(0, "release");
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["lock_ops"], 2);
}

TEST(MutexChecker, MemoryCapGivesUnknown) {
  HistoryBuilder b;
  b.invoke(0, "acquire");
  b.ok(0, "acquire");
  b.invoke(0, "release");
  b.ok(0, "release");
  b.invoke(1, "acquire");
  b.ok(1, "acquire");
  b.invoke(2, "acquire");
  b.ok(2, "acquire");
  MutexOptions mo;
  mo.max_cache_bytes = 1024;  // too small for the first cache entry
  CheckResult r = check(b.history(), mo);
  EXPECT_EQ(r.valid, Validity::kUnknown);
  EXPECT_NE(r.summary.find("cap"), std::string::npos) << r.summary;
  EXPECT_EQ(check(b.history()).valid, Validity::kInvalid);
}

TEST(MutexChecker, SearchBudgetGivesUnknown) {
  LockHistoryOptions go;
  go.ops = 20000;
  go.processes = 5;
  History h = generate_lock_history(go);
  CheckResult r = check(h, {}, std::chrono::milliseconds(0));
  EXPECT_EQ(r.valid, Validity::kUnknown);
  EXPECT_NE(r.summary.find("budget"), std::string::npos) << r.summary;
}

// --- Retried releases: `fail` means the release did not happen, so the lock is still the process's
// own or has expired; a retry that succeeds is legal unless another process holds the lock meanwhile. ---

TEST(MutexRetriedRelease, ASucceededRetryAfterAFailedReleaseIsValid) {
  // The history: p2 invoke acquire; p2 ok acquire; p2 invoke release; p2 fail release; p2 invoke release;
  // p2 ok release.
  HistoryBuilder b;
  b.invoke(2, "acquire");
  b.ok(2, "acquire");
  b.invoke(2, "release");
  b.fail(2, "release");
  b.invoke(2, "release");
  b.ok(2, "release");
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
}

TEST(MutexChecker, ADoubleGrantNamesAThirdProcesssReleaseThatOverlappedTheHold) {
  // p2's release is slow: it is still in flight when p3 is granted the lock, and answers ok after. p4 is then
  // granted the lock while p3 holds it. The description names p2's release, the likely way the lock was freed.
  HistoryBuilder b;
  b.invoke(2, "acquire");
  b.ok(2, "acquire");
  b.invoke(2, "release");  // op 2
  b.invoke(3, "acquire");
  b.ok(3, "acquire");      // op 4: p3 holds from here
  b.ok(2, "release");      // op 5
  b.invoke(4, "acquire");
  b.ok(4, "acquire");      // op 7: while p3 holds
  b.invoke(3, "release");
  b.ok(3, "release");
  b.invoke(4, "release");
  b.ok(4, "release");
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  ASSERT_EQ(r.anomalies.size(), 1u);
  const auto& a = r.anomalies[0];
  EXPECT_EQ(a["kind"], "double-grant");
  const std::string d = a["description"];
  EXPECT_EQ(d.rfind("p3 and p4 both held lock-0", 0), 0u) << d;
  EXPECT_NE(d.find("in between, p2's release of lock-0 (op 5) answered ok"), std::string::npos) << d;
  EXPECT_NE(std::find(a["processes"].begin(), a["processes"].end(), 2), a["processes"].end()) << a["processes"];
  for (int i : {2, 5}) EXPECT_NE(std::find(a["ops"].begin(), a["ops"].end(), i), a["ops"].end()) << i;
}

TEST(MutexChecker, ADoubleGrantWithNoThirdReleaseNamesNone) {
  HistoryBuilder b;
  b.invoke(0, "acquire");
  b.ok(0, "acquire");
  b.invoke(1, "acquire");
  b.ok(1, "acquire");
  b.invoke(2, "release");  // p2's release comes after both grants: not between them
  b.fail(2, "release");
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  EXPECT_EQ(r.anomalies[0]["description"].get<std::string>().find("in between"), std::string::npos);
}

TEST(MutexRetriedRelease, ASucceededRetryWhileAnotherProcessHoldsTheLockIsInvalid) {
  HistoryBuilder b;
  b.invoke(2, "acquire");
  b.ok(2, "acquire");
  b.invoke(2, "release");
  b.fail(2, "release");
  b.invoke(3, "acquire");
  b.ok(3, "acquire");  // process 3 holds the lock from here ...
  b.invoke(2, "release");
  b.ok(2, "release");  // ... so this retry removed process 3's lock, or the lock was granted twice
  b.invoke(3, "release");
  b.ok(3, "release");
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  ASSERT_EQ(r.anomalies.size(), 1u);
  const std::string d = r.anomalies[0]["description"];
  EXPECT_NE(d.find("p2's release of lock-0 succeeded (op 7"), std::string::npos) << d;
  EXPECT_NE(d.find("held by p3 from op 4"), std::string::npos) << d;
}

TEST(MutexRetriedRelease, ASucceededRetryAfterAnotherProcessHeldAndReleasedIsValid) {
  // The lock expired, process 3 held it and released it; the retry finds it free again.
  HistoryBuilder b;
  b.invoke(2, "acquire");
  b.ok(2, "acquire");
  b.invoke(2, "release");
  b.fail(2, "release");
  b.invoke(3, "acquire");
  b.ok(3, "acquire");
  b.invoke(3, "release");
  b.ok(3, "release");
  b.invoke(2, "release");
  b.ok(2, "release");
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

TEST(MutexRetriedRelease, ARetryConcurrentWithAnotherHoldIsValidWhenItCanComeFirst) {
  HistoryBuilder b;
  b.invoke(2, "acquire");
  b.ok(2, "acquire");
  b.invoke(2, "release");
  b.fail(2, "release");
  b.invoke(2, "release");  // the retry ...
  b.invoke(3, "acquire");
  b.ok(3, "acquire");
  b.ok(2, "release");  // ... may have taken effect before process 3's acquire
  b.invoke(3, "release");
  b.ok(3, "release");
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

TEST(MutexRetriedRelease, InfoVariants) {
  {  // a first release that timed out ends the use too; the retry succeeds on a free lock
    HistoryBuilder b;
    b.invoke(2, "acquire");
    b.ok(2, "acquire");
    b.invoke(2, "release");
    b.info(2, "release");
    b.invoke(2, "release");
    b.ok(2, "release");
    CheckResult r = check(b.history());
    EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  }
  {  // a retry that timed out while another process holds the lock may never have happened
    HistoryBuilder b;
    b.invoke(2, "acquire");
    b.ok(2, "acquire");
    b.invoke(2, "release");
    b.fail(2, "release");
    b.invoke(3, "acquire");
    b.ok(3, "acquire");
    b.invoke(2, "release");
    b.info(2, "release");
    b.invoke(3, "release");
    b.ok(3, "release");
    CheckResult r = check(b.history());
    EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  }
  {  // the first release timed out, another process got the lock, then the retry succeeded while it held it
    HistoryBuilder b;
    b.invoke(2, "acquire");
    b.ok(2, "acquire");
    b.invoke(2, "release");
    b.info(2, "release");
    b.invoke(3, "acquire");
    b.ok(3, "acquire");
    b.invoke(2, "release");
    b.ok(2, "release");
    b.invoke(3, "release");
    b.ok(3, "release");
    CheckResult r = check(b.history());
    EXPECT_EQ(r.valid, Validity::kInvalid) << r.summary;
  }
}

TEST(MutexRetriedRelease, CrashedVariants) {
  {  // the retry never completes (the client crashed): it may have happened at any point, or never
    HistoryBuilder b;
    b.invoke(2, "acquire");
    b.ok(2, "acquire");
    b.invoke(2, "release");
    b.fail(2, "release");
    b.invoke(2, "release");
    b.invoke(3, "acquire");
    b.ok(3, "acquire");
    b.invoke(3, "release");
    b.ok(3, "release");
    CheckResult r = check(b.history());
    EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  }
  {  // the same retry invoked while another process holds the lock: still only optional
    HistoryBuilder b;
    b.invoke(2, "acquire");
    b.ok(2, "acquire");
    b.invoke(2, "release");
    b.fail(2, "release");
    b.invoke(3, "acquire");
    b.ok(3, "acquire");
    b.invoke(2, "release");
    CheckResult r = check(b.history());
    EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  }
  {  // a holder that crashed in its release: another process may acquire after any point of that release
    HistoryBuilder b;
    b.invoke(2, "acquire");
    b.ok(2, "acquire");
    b.invoke(2, "release");
    b.invoke(3, "acquire");
    b.ok(3, "acquire");
    b.invoke(3, "release");
    b.ok(3, "release");
    b.invoke(4, "release");  // a process that never held it, retrying someone's release: a no-op when free
    b.ok(4, "release");
    CheckResult r = check(b.history());
    EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  }
}

TEST(MutexRetriedRelease, ARetriedExtendFollowsTheSameRule) {
  {  // a failed extend ended the use; the retry succeeds on a free lock
    HistoryBuilder b;
    b.invoke(2, "acquire");
    b.ok(2, "acquire");
    b.invoke(2, "extend");
    b.fail(2, "extend");
    b.invoke(2, "extend");
    b.ok(2, "extend");
    b.invoke(2, "release");
    b.ok(2, "release");
    CheckResult r = check(b.history());
    EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  }
  {  // the retried extend succeeds while another process holds the lock
    HistoryBuilder b;
    b.invoke(2, "acquire");
    b.ok(2, "acquire");
    b.invoke(2, "extend");
    b.fail(2, "extend");
    b.invoke(3, "acquire");
    b.ok(3, "acquire");
    b.invoke(2, "extend");
    b.ok(2, "extend");
    b.invoke(3, "release");
    b.ok(3, "release");
    CheckResult r = check(b.history());
    EXPECT_EQ(r.valid, Validity::kInvalid) << r.summary;
  }
}

// --- Generated histories ---

TEST(MutexCheckerGenerated, CorrectMutexHistoriesAreValid) {
  for (int processes : {1, 2, 5, 20}) {
    for (double info : {0.0, 0.05, 0.3}) {
      LockHistoryOptions go;
      go.ops = 5000;
      go.processes = processes;
      go.keys = processes > 2 ? 3 : 1;
      go.info_fraction = info;
      go.nemesis_interval_us = 20000;
      go.seed = static_cast<uint64_t>(processes * 100 + info * 10);
      LockHistoryInfo gi;
      History h = generate_lock_history(go, &gi);
      CheckResult r = check(h);
      EXPECT_EQ(r.valid, Validity::kValid) << "processes " << processes << " info " << info << ": " << r.summary;
      EXPECT_EQ(gi.injected_violations, 0);
      if (info > 0) {
        EXPECT_GT(gi.info, 0);
      }
    }
  }
}

TEST(MutexCheckerGenerated, InjectedDoubleGrantsAreFound) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    LockHistoryOptions go;
    go.ops = 3000;
    go.processes = 6;
    go.info_fraction = 0.05;
    go.violation_fraction = 0.01;
    go.seed = seed;
    LockHistoryInfo gi;
    History h = generate_lock_history(go, &gi);
    CheckResult r = check(h);
    if (gi.injected_violations == 0) {
      EXPECT_EQ(r.valid, Validity::kValid) << seed;
      continue;
    }
    ASSERT_EQ(r.valid, Validity::kInvalid) << "seed " << seed << ": " << r.summary;
    EXPECT_EQ(r.anomalies[0]["kind"], "double-grant") << r.anomalies[0].dump();
  }
}

TEST(MutexCheckerGenerated, ProcessesThatAreNotRetiredAfterInfoAreSearchedUnpruned) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    LockHistoryOptions go;
    go.ops = 2000;
    go.processes = 5;
    go.info_fraction = 0.05;
    go.retire_after_info = false;
    go.violation_fraction = seed > 3 ? 0.02 : 0.0;
    go.seed = seed;
    LockHistoryInfo gi;
    History h = generate_lock_history(go, &gi);
    CheckResult r = check(h);
    EXPECT_EQ(r.valid, gi.injected_violations > 0 ? Validity::kInvalid : Validity::kValid)
        << "seed " << seed << ": " << r.summary;
    EXPECT_GT(r.stats["per_key"]["lock-0"]["non_sequential_processes"].get<int>(), 0);
  }
}

}  // namespace
}  // namespace lockcheck

namespace lockcheck {
namespace {

using testing::HistoryBuilder;

CheckResult check_use_view(const History& h) { return run_checker(*make_checker("mutex"), h, CheckOptions{}); }

// The use view: a holder's release ends its use whatever the outcome. A release sent inside the lease that
// arrived after the key expired (it fails "not held") is no violation, even though another process got the lock
// before the release completed.
TEST(MutexUseView, AReleaseThatFailsAfterExpiryStillEndsTheUse) {
  HistoryBuilder b;
  b.at_ms(0).invoke(0, "acquire");
  b.at_ms(1).ok(0, "acquire");
  b.validity_ms(10);
  b.at_ms(9).invoke(0, "release");
  b.at_ms(14).invoke(1, "acquire");
  b.at_ms(15).ok(1, "acquire");
  b.validity_ms(10);
  b.at_ms(20).fail(0, "release");
  b.error("not held (expired or taken)");
  b.at_ms(21).invoke(1, "release");
  b.at_ms(22).ok(1, "release");
  CheckResult r = check_use_view(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
}

// A holder that kept using the lock past its lease (a paused holder) while another got it: stale-holder.
TEST(MutexUseView, AHolderPastItsLeaseIsAStaleHolder) {
  HistoryBuilder b;
  b.at_ms(0).invoke(0, "acquire");
  b.at_ms(1).ok(0, "acquire");
  b.validity_ms(10);  // lease to 11 ms
  b.at_ms(19).invoke(1, "acquire");
  b.at_ms(20).ok(1, "acquire");
  b.validity_ms(10);
  b.at_ms(30).invoke(0, "release");  // 0 woke up at 30 ms
  b.at_ms(31).fail(0, "release");
  b.error("not held (expired or taken)");
  CheckResult r = check_use_view(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  EXPECT_EQ(r.anomalies[0]["kind"], "stale-holder");
  const std::string d = r.anomalies[0]["description"];
  EXPECT_NE(d.find("kept using lock-0 after its lease ended at t=0.011 s"), std::string::npos) << d;
  EXPECT_NE(d.find("which ended fail: not held"), std::string::npos) << d;
  // The failed release is among the ops named.
  EXPECT_NE(std::find(r.anomalies[0]["ops"].begin(), r.anomalies[0]["ops"].end(), 5), r.anomalies[0]["ops"].end());
}

// Two holders within the first one's lease: double-grant.
TEST(MutexUseView, AnotherGrantWithinTheLeaseIsADoubleGrant) {
  HistoryBuilder b;
  b.at_ms(0).invoke(0, "acquire");
  b.at_ms(1).ok(0, "acquire");
  b.validity_ms(100);
  b.at_ms(19).invoke(1, "acquire");
  b.at_ms(20).ok(1, "acquire");
  b.validity_ms(100);
  b.at_ms(30).invoke(0, "release");
  b.at_ms(31).ok(0, "release");
  CheckResult r = check_use_view(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  EXPECT_EQ(r.anomalies[0]["kind"], "double-grant");
  EXPECT_NE(r.anomalies[0]["description"].get<std::string>().find("within its lease"), std::string::npos);
}

// The harness's own thread woke late (a loaded machine) after a release planned inside the lease: unknown, named
// harness-stall, never an anomaly of the lock.
TEST(MutexUseView, AReleaseMadeLateByTheHarnessIsAStallNotAnAnomaly) {
  HistoryBuilder b;
  b.at_ms(0).invoke(0, "acquire");
  b.at_ms(1).ok(0, "acquire");
  b.validity_ms(10);  // lease to 11 ms
  b.at_ms(19).invoke(1, "acquire");
  b.at_ms(20).ok(1, "acquire");
  b.validity_ms(10);
  b.at_ms(30).invoke(0, "release", "lock-0", {{"stalled_ms", 25}});  // planned for 5 ms
  b.at_ms(31).fail(0, "release");
  CheckResult r = check_use_view(b.history());
  EXPECT_EQ(r.valid, Validity::kUnknown) << r.summary;
  ASSERT_EQ(r.anomalies.size(), 1u);
  EXPECT_EQ(r.anomalies[0]["kind"], "harness-stall");
  EXPECT_NE(r.summary.find("woke 25 ms late"), std::string::npos) << r.summary;
}

// A failed extend ends the use: the holder stops, and a later grant to another process is no violation.
TEST(MutexUseView, AFailedExtendEndsTheUse) {
  HistoryBuilder b;
  b.at_ms(0).invoke(0, "acquire");
  b.at_ms(1).ok(0, "acquire");
  b.at_ms(5).invoke(0, "extend");
  b.at_ms(6).fail(0, "extend");
  b.at_ms(7).invoke(1, "acquire");
  b.at_ms(8).ok(1, "acquire");
  EXPECT_EQ(check_use_view(b.history()).valid, Validity::kValid);
}

}  // namespace
}  // namespace lockcheck
