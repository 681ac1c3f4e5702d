#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "harness/cli.h"
#include "harness/install_layout.h"
#include "harness/terminal.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // An installed lockcheck finds its shims, adapters and server builds under PREFIX/lib/lockcheck, as a build
  // tree's finds them beside it.
  lockcheck::export_install_layout(lockcheck::this_install_layout());
  lockcheck::set_verdict_colour(lockcheck::colour_wanted(STDOUT_FILENO));
  return lockcheck::cli_main(args, std::cout, std::cerr);
}
