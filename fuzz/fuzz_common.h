// What every fuzz target shares: the contract of a parser of untrusted input. It returns a value or throws its
// documented error type (which the CLI turns into exit 2 with the line or field named); anything else, another
// exception type (exit 3), a crash, a hang, a leak, is a finding: the target aborts with a message, and
// libFuzzer keeps the input as crash-*.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>

namespace lockcheck::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "FUZZ FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// Runs fn; an exception of one of the types Allowed... is the parser's documented error and ends the input;
// any other is a finding. Returns true when fn returned normally.
template <typename... Allowed, typename Fn>
bool expect_only(const char* what, Fn&& fn) {
  try {
    fn();
    return true;
  } catch (const std::exception& e) {
    // Allowed or derived from it (never a base: ConfigError is an std::invalid_argument, not the reverse).
    if ((... || (dynamic_cast<const Allowed*>(&e) != nullptr))) return false;
    finding(std::string(what) + " threw " + typeid(e).name() + " (not its documented error): " + e.what());
  }
}

}  // namespace lockcheck::fuzz
