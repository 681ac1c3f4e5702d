// A fixture for the floors check (tests/CMakeLists.txt): core/ is floor 1 and must not include harness/.
#pragma once
#include "harness/runner.h"
