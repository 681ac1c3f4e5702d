// What every fuzz target shares: the contract of a parser of untrusted input. It returns a value or throws its
// documented error type (which the CLI turns into exit 2 with the line or field named); anything else, another
// exception type (exit 3), a crash, a hang, a leak, is a finding: the target aborts with a message, and
// libFuzzer keeps the input as crash-*.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <typeinfo>

#include <nlohmann/json.hpp>

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

// The input as JSON, or nothing when it is not JSON (every file reader says so with its own ConfigError first).
inline std::optional<nlohmann::json> json_or_none(const uint8_t* data, size_t size) {
  try {
    return nlohmann::json::parse(data, data + size);
  } catch (const nlohmann::json::exception&) {  // parse_error, and out_of_range for a number like 1e400
    return std::nullopt;
  }
}

// An importer of another tool's history (checkers/import.h): a history or HistoryError, and what it returns obeys
// the op rules. Error: lockcheck::HistoryError (a template parameter, so this header needs no core include).
template <typename Error, typename Import, typename Validate>
void check_import(const char* what, Import import, Validate validate) {
  decltype(import()) h;
  if (!expect_only<Error>(what, [&] { h = import(); })) return;
  expect_only<>("validate_history of an imported history", [&] { validate(h); });
}

}  // namespace lockcheck::fuzz
