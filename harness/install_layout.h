// Where lockcheck finds its own files: relative to its executable, in the two layouts it runs from.
//   build tree  BUILD/lockcheck; BUILD/liblockcheck_clockshim.so and liblockcheck_powershim.so; BUILD/clients/
//               (the adapters, scripts/build-clients); BUILD/servers/ (the project's server builds); the shipped
//               matrices in the source tree (SOURCE/harness/matrix/)
//   installed   PREFIX/bin/lockcheck; PREFIX/lib/lockcheck/ (the shims, clients/, servers/);
//               PREFIX/share/lockcheck/matrix/ (`cmake --install`, the Debian package: PREFIX is /usr)
// The environment overrides each: LOCKCHECK_CLOCK_SHIM, LOCKCHECK_POWER_SHIM, LOCKCHECK_CLIENTS_DIR,
// LOCKCHECK_SERVERS_DIR, LOCKCHECK_MATRIX_DIR.
#pragma once

#include <string>

namespace lockcheck {

struct InstallLayout {
  bool installed = false;  // PREFIX/bin/lockcheck beside PREFIX/lib/lockcheck/
  std::string exe;         // the executable, absolute
  std::string prefix;      // installed: PREFIX; else ""
  std::string lib_dir;     // the shims, clients/ and servers/: BUILD or PREFIX/lib/lockcheck
  std::string matrix_dir;  // the shipped matrices
};

// The layout of the executable at `exe` (an absolute path): installed when it is PREFIX/bin/NAME and
// PREFIX/lib/lockcheck/ is a folder, else a build tree.
InstallLayout install_layout(const std::string& exe);

// The layout of this process's executable (/proc/self/exe).
const InstallLayout& this_install_layout();

// For an installed layout, sets the variables the lower floors read (LOCKCHECK_CLOCK_SHIM, LOCKCHECK_POWER_SHIM,
// LOCKCHECK_CLIENTS_DIR, LOCKCHECK_SERVERS_DIR) to its files, each only where the environment does not set it
// already; child processes (test-all's runs, reproduce's) inherit them. A build tree needs nothing: there the
// defaults (next to the executable, the build's own shim paths) are its files. Called once by main().
void export_install_layout(const InstallLayout& layout);

// The shipped matrices' folder: $LOCKCHECK_MATRIX_DIR, else this layout's.
std::string matrix_dir();

}  // namespace lockcheck
