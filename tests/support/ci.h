// Tests that need something outside the repository (a Docker engine, chromium, root for the SSH test bed, the
// built adapters, python3): without it they skip with the reason, except under CI (CI set in the
// environment, as .ci/run has it), where a missing dependency is a failure: CI installs everything, so a skip
// there would hide a broken set-up.
#pragma once

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

namespace lockcheck {
namespace testing_util {

inline bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && *ci != '\0' && std::string(ci) != "0" && std::string(ci) != "false";
}

}  // namespace testing_util
}  // namespace lockcheck

// Skips the test (or fails it under CI) with `why` unless `available`.
#define LOCKCHECK_NEED(available, why)                                           \
  do {                                                                           \
    if (!(available)) {                                                          \
      if (::lockcheck::testing_util::in_ci()) FAIL() << "CI is set and " << why; \
      GTEST_SKIP() << why;                                                       \
    }                                                                            \
  } while (0)
