#include <iostream>
#include <string>
#include <vector>

#include "harness/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return lockcheck::cli_main(args, std::cout, std::cerr);
}
