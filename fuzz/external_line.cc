// A line an external client writes (locks/external_protocol.h): classify_external_line, and for an answer
// parse_external_answer. Neither may throw; a malformed line is said (kMalformedEvent, or nullopt with why), and
// what is accepted keeps the protocol's promises: a lost event names a key, an ok answer's keys are non-empty,
// a hello's bound is within its limit.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_common.h"
#include "locks/external_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string line(reinterpret_cast<const char*>(data), size);
  using lockcheck::ExternalLine;
  using lockcheck::fuzz::finding;
  ExternalLine l;
  lockcheck::fuzz::expect_only<>("classify_external_line", [&] { l = lockcheck::classify_external_line(line); });
  if (l.kind == ExternalLine::Kind::kLost && l.key.empty()) finding("a lost event without a key was accepted");
  if (l.kind == ExternalLine::Kind::kHello && l.max_call_ms &&
      (*l.max_call_ms < 0 || *l.max_call_ms > lockcheck::kExternalMaxCallMsLimit)) {
    finding("a hello's max_call_ms out of range was accepted: " + std::to_string(*l.max_call_ms));
  }
  if (l.kind == ExternalLine::Kind::kMalformedEvent && l.error.empty()) finding("a malformed event without a reason");
  if (l.kind != ExternalLine::Kind::kAnswer) return 0;
  std::string why;
  std::optional<lockcheck::LockResult> r;
  lockcheck::fuzz::expect_only<>("parse_external_answer", [&] { r = lockcheck::parse_external_answer(line, &why); });
  if (!r) {
    if (why.empty()) finding("a malformed answer without a reason");
    return 0;
  }
  for (const auto& k : r->keys) {
    if (k.empty()) finding("an answer's empty key was accepted");
  }
  if (r->outcome != lockcheck::OpType::kOk && r->error.empty()) finding("a failed answer without words");
  if (!r->reason.empty() && !lockcheck::is_known_reason(r->reason)) finding("an unknown reason was accepted");
  return 0;
}
