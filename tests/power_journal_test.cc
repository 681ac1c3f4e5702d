// The power shim's journal replayed on hand-written journals (cluster/power_loss.h): what a power loss drops.
#include "cluster/power_loss.h"

#include <gtest/gtest.h>

#include "core/config.h"

namespace lockcheck {
namespace {

using Stats = std::map<std::string, std::optional<FileStat>>;
using Kind = PowerLossAction::Kind;

std::vector<PowerLossAction> plan(const std::string& journal, const Stats& now, std::vector<std::string>* notes,
                                  const std::string& scope = "/d") {
  return PowerJournal::parse(journal).plan(now, scope, notes);
}

TEST(PowerJournal, TruncatesToTheLastSyncedLength) {
  // An AOF opened at 100 bytes, synced at 150 (fdatasync: size before the call), written on to 190.
  const std::string j =
      "B 1 7 100 /d/aof/incr.aof\n"
      "S 1 7 150 /d/aof/incr.aof\n";
  std::vector<std::string> notes;
  const auto a = plan(j, {{"/d/aof/incr.aof", FileStat{1, 7, 190}}}, &notes);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, Kind::kTruncate);
  EXPECT_EQ(a[0].size, 190);
  EXPECT_EQ(a[0].keep, 150);
  EXPECT_TRUE(notes.empty());
  // Nothing written since the sync: nothing dropped.
  EXPECT_TRUE(plan(j, {{"/d/aof/incr.aof", FileStat{1, 7, 150}}}, &notes).empty());
  // Never synced in this incarnation: back to the length it had when opened.
  EXPECT_EQ(plan("B 1 7 100 /d/aof/incr.aof\n", {{"/d/aof/incr.aof", FileStat{1, 7, 130}}}, &notes)[0].keep, 100);
}

TEST(PowerJournal, CreatedFilesNeedTheirDirectorySynced) {
  const std::string created = "C 1 8 0 /d/aof/new.aof\nS 1 8 40 /d/aof/new.aof\n";
  std::vector<std::string> notes;
  const Stats now = {{"/d/aof/new.aof", FileStat{1, 8, 40}}};
  // Data synced, name not: the file is gone.
  auto a = plan(created, now, &notes);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, Kind::kRemove);
  // Its directory synced afterwards: kept whole. Another directory's sync does not count.
  EXPECT_TRUE(plan(created + "Y 1 3 0 /d/aof\n", now, &notes).empty());
  EXPECT_EQ(plan(created + "Y 1 4 0 /d/other\n", now, &notes).size(), 1u);
  // Created, renamed into place (over nothing), directory synced: durable under its new name (Redis' BASE file).
  const std::string renamed = "C 1 9 0 /d/tmp.rdb\nS 1 9 89 /d/tmp.rdb\nR 1 9 0 /d/aof/base.rdb\nY 1 3 0 /d/aof\n";
  EXPECT_TRUE(plan(renamed, {{"/d/aof/base.rdb", FileStat{1, 9, 89}}}, &notes).empty());
  EXPECT_TRUE(notes.empty());
}

TEST(PowerJournal, AFileReplacedByARenameIsNoLongerTracked) {
  // Redis persists its manifest as temp file, fdatasync, rename over the old one, folder fsync: twice here.
  const std::string j =
      "C 1 9 0 /d/aof/temp.manifest\nS 1 9 88 /d/aof/temp.manifest\nR 1 9 1 /d/aof/manifest\nY 1 3 0 /d/aof\n"
      "C 1 10 0 /d/aof/temp.manifest\nS 1 10 90 /d/aof/temp.manifest\nR 1 10 1 /d/aof/manifest\nY 1 3 0 /d/aof\n";
  std::vector<std::string> notes;
  EXPECT_TRUE(plan(j, {{"/d/aof/manifest", FileStat{1, 10, 90}}}, &notes).empty());
  EXPECT_TRUE(notes.empty()) << notes[0];
  EXPECT_EQ(PowerJournal::parse(j).paths("/d"), (std::vector<std::string>{"/d/aof/manifest"}));
}

TEST(PowerJournal, SaysWhatItCannotUndo) {
  std::vector<std::string> notes;
  // A rename over an existing file without a directory sync: the old file would come back; the model has not
  // kept it, so the rename stays, and the report says so.
  const std::string j = "C 1 9 0 /d/tmp.manifest\nS 1 9 88 /d/tmp.manifest\nR 1 9 1 /d/manifest\n"
                        "U 1 5 0 /d/old.aof\n";
  EXPECT_TRUE(plan(j, {{"/d/manifest", FileStat{1, 9, 88}}}, &notes).empty());
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("the rename is not undone"), std::string::npos) << notes[0];
  EXPECT_NE(notes[1].find("the unlink is not undone"), std::string::npos) << notes[1];
  // A file no longer where the journal saw it (another inode there now) is left alone, and said.
  notes.clear();
  EXPECT_TRUE(plan("B 1 7 10 /d/a\n", {{"/d/a", FileStat{1, 99, 50}}}, &notes).empty());
  EXPECT_EQ(notes.size(), 1u);
}

TEST(PowerJournal, LeavesFilesOutsideScopeAndSyncWritesAlone) {
  std::vector<std::string> notes;
  // The node's log (outside its data folder) is evidence: never touched.
  EXPECT_TRUE(plan("B 1 2 10 /logs/n1.log\n", {{"/logs/n1.log", FileStat{1, 2, 90}}}, &notes).empty());
  EXPECT_TRUE(PowerJournal::parse("B 1 2 10 /logs/n1.log\n").paths("/d").empty());
  // O_SYNC / O_DSYNC: every write is durable.
  EXPECT_TRUE(plan("D 1 7 10 /d/f\n", {{"/d/f", FileStat{1, 7, 90}}}, &notes).empty());
}

TEST(PowerJournal, SkipsATornLastLine) {
  const PowerJournal j = PowerJournal::parse("B 1 7 100 /d/f\nS 1 7 1");
  EXPECT_EQ(j.records(), 1);
  EXPECT_EQ(j.malformed(), 1);
  std::vector<std::string> notes;
  EXPECT_EQ(j.plan({{"/d/f", FileStat{1, 7, 300}}}, "/d", &notes)[0].keep, 100);
}

TEST(PowerJournal, ReportCountsBytesAndRelativePaths) {
  const PowerLossReport r = power_loss_report(
      {{Kind::kTruncate, "/d/aof/incr.aof", 190, 150}, {Kind::kRemove, "/d/new", 40, 0}}, {}, 4, "/d");
  EXPECT_EQ(r.bytes, 80);
  ASSERT_EQ(r.files.size(), 2u);
  EXPECT_EQ(r.files[0].path, "aof/incr.aof");
  EXPECT_TRUE(r.files[1].removed);
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["bytes"], 80);
  EXPECT_EQ(j["files"][0]["kept"], 150);
  EXPECT_EQ(j["journal_records"], 4);
}

TEST(PowerJournal, PreloadListAndWhenTheShimIsNeeded) {
  EXPECT_EQ(preload_list({"/a.so", "", "/b.so"}), "/a.so:/b.so");
  std::map<std::string, std::string> env = {{"LD_PRELOAD", "/clock.so"}};
  add_power_shim_env(env, "/j");
  EXPECT_EQ(env["LD_PRELOAD"], "/clock.so:" + power_shim_library());
  EXPECT_EQ(env[kPowerJournalEnv], "/j");
  RunConfig c;
  EXPECT_FALSE(needs_power_shim(c));
  c.nemesis = {"kill", "power-loss:one"};
  EXPECT_TRUE(needs_power_shim(c));
}

}  // namespace
}  // namespace lockcheck
