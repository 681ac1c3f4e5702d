// The lines an external client writes (locks/README-external.md), parsed without a subprocess: what
// ExternalLock's reader thread and caller make of each line. Pure functions of one line, so that the fuzz target
// fuzz/external_line.cc and the tests drive them directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "locks/lock_client.h"

namespace lockcheck {

// The longest bound a client may state in its hello (1 hour).
constexpr int64_t kExternalMaxCallMsLimit = 3600 * 1000;

// One line from the client: an event (hello, lost, or one this harness does not know, ignored as unknown fields
// are), a malformed event, or something else, which is an answer (parse_external_answer words what is wrong with
// it, if anything).
struct ExternalLine {
  enum class Kind { kAnswer, kHello, kLost, kOtherEvent, kMalformedEvent };
  Kind kind = Kind::kAnswer;
  std::optional<int64_t> max_call_ms;  // kHello: the client's bound on one call; none: it stated none
  std::string key, detail;             // kLost: the lock key and the library's words
  std::string error;                   // kMalformedEvent: what is wrong with it
};
ExternalLine classify_external_line(const std::string& line);

// When the request was written and its answer read, on CLOCK_MONOTONIC (steady_clock), in ns.
struct AnswerWindow {
  int64_t sent_ns = 0;
  int64_t read_ns = 0;
};

// An answer line as the op's outcome. nullopt when it breaks the protocol; *why then says how (e.g. "not JSON",
// "\"token\" must be an integer"). With a window, an ok answer's validity_ms stamped with mono_ns (the client's
// CLOCK_MONOTONIC when it measured it) is shortened by the time the answer took to be read (answer_lag_ms); a
// mono_ns outside the window is malformed. Without one, mono_ns is only checked to be an integer.
std::optional<LockResult> parse_external_answer(const std::string& line, std::string* why,
                                                const AnswerWindow* window = nullptr);

}  // namespace lockcheck
