// Where lockcheck finds its own files (harness/install_layout.h): PREFIX/bin/lockcheck beside PREFIX/lib/lockcheck
// is installed; anything else a build tree.
#include "harness/install_layout.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "tests/support/temp_dir.h"

namespace lockcheck {
namespace {

TEST(InstallLayoutTest, InstalledWhenLibLockcheckIsBesideBin) {
  TempDir d;
  std::filesystem::create_directories(d.file("usr/bin"));
  std::filesystem::create_directories(d.file("usr/lib/lockcheck"));
  const InstallLayout l = install_layout(d.file("usr/bin/lockcheck"));
  EXPECT_TRUE(l.installed);
  EXPECT_EQ(l.prefix, d.file("usr"));
  EXPECT_EQ(l.lib_dir, d.file("usr/lib/lockcheck"));
  EXPECT_EQ(l.matrix_dir, d.file("usr/share/lockcheck/matrix"));
}

TEST(InstallLayoutTest, ABuildTreeKeepsItsFilesBesideTheBinary) {
  TempDir d;
  std::filesystem::create_directories(d.file("build"));
  const InstallLayout l = install_layout(d.file("build/lockcheck"));
  EXPECT_FALSE(l.installed);
  EXPECT_EQ(l.lib_dir, d.file("build"));
  EXPECT_EQ(l.matrix_dir.substr(l.matrix_dir.size() - 15), "/harness/matrix");
  // A bin/ without lib/lockcheck beside it is a build tree too (a developer's ~/bin symlink target).
  std::filesystem::create_directories(d.file("opt/bin"));
  EXPECT_FALSE(install_layout(d.file("opt/bin/lockcheck")).installed);
}

TEST(InstallLayoutTest, ExportSetsOnlyWhatTheEnvironmentDoesNotSay) {
  TempDir d;
  std::filesystem::create_directories(d.file("usr/bin"));
  std::filesystem::create_directories(d.file("usr/lib/lockcheck"));
  ::setenv("LOCKCHECK_CLIENTS_DIR", "/given", 1);
  ::unsetenv("LOCKCHECK_SERVERS_DIR");
  const char* shim = std::getenv("LOCKCHECK_CLOCK_SHIM");
  const std::string kept_shim = shim ? shim : "";
  ::unsetenv("LOCKCHECK_CLOCK_SHIM");
  export_install_layout(install_layout(d.file("usr/bin/lockcheck")));
  EXPECT_STREQ(std::getenv("LOCKCHECK_CLIENTS_DIR"), "/given");
  EXPECT_EQ(std::string(std::getenv("LOCKCHECK_SERVERS_DIR")), d.file("usr/lib/lockcheck/servers"));
  EXPECT_EQ(std::string(std::getenv("LOCKCHECK_CLOCK_SHIM")), d.file("usr/lib/lockcheck/liblockcheck_clockshim.so"));
  ::unsetenv("LOCKCHECK_CLIENTS_DIR");
  ::unsetenv("LOCKCHECK_SERVERS_DIR");
  ::unsetenv("LOCKCHECK_POWER_SHIM");
  ::unsetenv("LOCKCHECK_CLOCK_SHIM");
  if (!kept_shim.empty()) ::setenv("LOCKCHECK_CLOCK_SHIM", kept_shim.c_str(), 1);
  // A build tree exports nothing: its defaults are its files.
  export_install_layout(install_layout(d.file("build/lockcheck")));
  EXPECT_EQ(std::getenv("LOCKCHECK_SERVERS_DIR"), nullptr);
}

TEST(InstallLayoutTest, MatrixDirFromTheEnvironmentFirst) {
  ::setenv("LOCKCHECK_MATRIX_DIR", "/m", 1);
  EXPECT_EQ(matrix_dir(), "/m");
  ::unsetenv("LOCKCHECK_MATRIX_DIR");
  EXPECT_EQ(matrix_dir(), this_install_layout().matrix_dir);
}

}  // namespace
}  // namespace lockcheck
