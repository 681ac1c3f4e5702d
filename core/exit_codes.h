#pragma once

namespace lockcheck {

// The exit status of every lockcheck command (see README).
enum ExitCode : int {
  kExitValid = 0,    // every checker found the history valid (or the command succeeded)
  kExitInvalid = 1,  // an anomaly was found
  kExitUsage = 2,    // usage or configuration error (also a server program not found, before anything starts)
  kExitHarness = 3,  // the harness or the cluster failed (e.g. a server that will not start, no Docker engine)
  kExitUnknown = 4,  // a checker could not decide
};

}  // namespace lockcheck
