#include "harness/install_layout.h"

#include <cstdlib>
#include <filesystem>

namespace lockcheck {

namespace {

namespace layout_fs = std::filesystem;

void set_unless_given(const char* name, const std::string& value) {
  if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return;
  ::setenv(name, value.c_str(), 1);
}

}  // namespace

InstallLayout install_layout(const std::string& exe) {
  InstallLayout l;
  l.exe = exe;
  const layout_fs::path dir = layout_fs::path(exe).parent_path();
  std::error_code ec;
  if (dir.filename() == "bin" && layout_fs::is_directory(dir.parent_path() / "lib" / "lockcheck", ec)) {
    l.installed = true;
    l.prefix = dir.parent_path().string();
    l.lib_dir = (dir.parent_path() / "lib" / "lockcheck").string();
    l.matrix_dir = (dir.parent_path() / "share" / "lockcheck" / "matrix").string();
  } else {
    l.lib_dir = dir.string();
    l.matrix_dir = LOCKCHECK_SOURCE_DIR "/harness/matrix";
  }
  return l;
}

const InstallLayout& this_install_layout() {
  static const InstallLayout layout = [] {
    std::error_code ec;
    const layout_fs::path exe = layout_fs::read_symlink("/proc/self/exe", ec);
    return install_layout(ec ? std::string("lockcheck") : exe.string());
  }();
  return layout;
}

void export_install_layout(const InstallLayout& l) {
  if (!l.installed) return;
  set_unless_given("LOCKCHECK_CLOCK_SHIM", l.lib_dir + "/liblockcheck_clockshim.so");
  set_unless_given("LOCKCHECK_POWER_SHIM", l.lib_dir + "/liblockcheck_powershim.so");
  set_unless_given("LOCKCHECK_CLIENTS_DIR", l.lib_dir + "/clients");
  set_unless_given("LOCKCHECK_SERVERS_DIR", l.lib_dir + "/servers");
}

std::string matrix_dir() {
  if (const char* v = std::getenv("LOCKCHECK_MATRIX_DIR"); v != nullptr && *v != '\0') return v;
  return this_install_layout().matrix_dir;
}

}  // namespace lockcheck
