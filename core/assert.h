// LOCKCHECK_ASSERT(cond, message): a precondition (a header's REQUIRES) or an invariant the code relies on,
// checked in every build (NDEBUG does not turn it off). For programmer errors only: operating errors (a dead
// node, a bad flag, a malformed history) are values or typed exceptions, never assertions.
//
// A failed assertion throws AssertionError rather than aborting, so that the run's scoped teardown still undoes
// every fault and stops every node (a harness that leaves a partition behind is worse than one that stops),
// and a checker that trips one answers unknown (run_checker), never valid. The runner reports it as a harness
// error (exit 3) with the condition, file and line.
#pragma once

#include <stdexcept>
#include <string>

namespace lockcheck {

class AssertionError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] inline void assertion_failed(const char* condition, const char* file, int line,
                                          const std::string& message) {
  throw AssertionError(std::string("assertion failed: ") + condition + " (" + file + ":" + std::to_string(line) + ")" +
                       (message.empty() ? "" : ": " + message));
}

}  // namespace lockcheck

#define LOCKCHECK_ASSERT(condition, message) \
  ((condition) ? static_cast<void>(0) : ::lockcheck::assertion_failed(#condition, __FILE__, __LINE__, (message)))
