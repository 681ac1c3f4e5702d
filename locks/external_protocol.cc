#include "locks/external_protocol.h"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/json_int.h"

namespace lockcheck {

namespace {

// A JSON integer that fits int64_t (core/json_int.h).
bool fits_int64(const nlohmann::json& v) { return json_integer<int64_t>(v).has_value(); }

nlohmann::json parse_or_null(const std::string& line, bool* is_json) {
  try {
    *is_json = true;
    return nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception&) {
    *is_json = false;
    return nullptr;
  }
}

}  // namespace

ExternalLine classify_external_line(const std::string& line) {
  ExternalLine out;
  bool is_json = false;
  const nlohmann::json j = parse_or_null(line, &is_json);
  if (!j.is_object() || !j.contains("event")) return out;  // an answer (or not JSON: the answer's parser says so)
  auto malformed = [&](std::string why) {
    out.kind = ExternalLine::Kind::kMalformedEvent;
    out.error = std::move(why);
    return out;
  };
  const auto& ev = j["event"];
  if (!ev.is_string()) return malformed("\"event\" must be a string");
  const std::string& name = ev.get_ref<const std::string&>();
  if (name == "hello") {
    out.kind = ExternalLine::Kind::kHello;
    auto m = j.find("max_call_ms");
    if (m == j.end() || m->is_null()) return out;  // a hello that states no bound changes nothing
    if (!fits_int64(*m)) return malformed("\"max_call_ms\" must be an integer");
    const int64_t v = m->get<int64_t>();
    if (v < 0 || v > kExternalMaxCallMsLimit) {
      return malformed("\"max_call_ms\" must be between 0 and " + std::to_string(kExternalMaxCallMsLimit));
    }
    out.max_call_ms = v;
    return out;
  }
  if (name == "lost") {
    out.kind = ExternalLine::Kind::kLost;
    auto k = j.find("key");
    if (k == j.end() || !k->is_string() || k->get_ref<const std::string&>().empty()) {
      return malformed("\"key\" must be a non-empty string");
    }
    auto d = j.find("detail");
    if (d != j.end() && !d->is_null() && !d->is_string()) return malformed("\"detail\" must be a string");
    out.key = k->get<std::string>();
    out.detail = d != j.end() && d->is_string() ? d->get<std::string>() : "";
    return out;
  }
  out.kind = ExternalLine::Kind::kOtherEvent;
  return out;
}

std::optional<LockResult> parse_external_answer(const std::string& line, std::string* why,
                                                const AnswerWindow* window) {
  bool is_json = false;
  const nlohmann::json a = parse_or_null(line, &is_json);
  auto bad = [&](std::string what) -> std::optional<LockResult> {
    *why = std::move(what);
    return std::nullopt;
  };
  if (!is_json) return bad("not JSON");
  if (!a.is_object()) return bad("not an object");
  auto ok = a.find("ok");
  if (ok == a.end() || !ok->is_boolean()) return bad("\"ok\" must be true or false");
  auto field = [&](const char* name) {
    auto it = a.find(name);
    return it == a.end() || it->is_null() ? nullptr : &*it;
  };
  const nlohmann::json* token = field("token");
  const nlohmann::json* validity = field("validity_ms");
  const nlohmann::json* error = field("error");
  const nlohmann::json* indeterminate = field("indeterminate");
  const nlohmann::json* keys = field("keys");
  const nlohmann::json* reason = field("reason");
  const nlohmann::json* mono = field("mono_ns");
  if (token && !fits_int64(*token)) return bad("\"token\" must be an integer");
  if (mono && !fits_int64(*mono)) return bad("\"mono_ns\" must be an integer");
  if (validity && !fits_int64(*validity)) return bad("\"validity_ms\" must be an integer");
  if (error && !error->is_string()) return bad("\"error\" must be a string");
  if (indeterminate && !indeterminate->is_boolean()) return bad("\"indeterminate\" must be true or false");
  if (keys) {
    if (!keys->is_array()) return bad("\"keys\" must be an array of strings");
    for (const auto& k : *keys) {
      if (!k.is_string() || k.get_ref<const std::string&>().empty()) {
        return bad("\"keys\" must be an array of non-empty strings");
      }
    }
  }
  if (reason && (!reason->is_string() || !is_known_reason(reason->get<std::string>()))) {
    return bad(std::string("\"reason\" must be one of ") + known_reasons());
  }
  const std::string err = error ? error->get<std::string>() : "";
  const std::string reason_text = reason ? reason->get<std::string>() : "";
  if (!ok->get<bool>()) {
    // Without free text the typed reason is the text people read.
    const std::string text = !err.empty() ? err : reason_text;
    LockResult res = indeterminate && indeterminate->get<bool>()
                         ? LockResult::info(text.empty() ? "indeterminate" : text)
                         : LockResult::fail(text.empty() ? "refused" : text);
    res.reason = reason_text;
    return res;
  }
  LockResult res = LockResult::ok();
  if (token) res.token = token->get<int64_t>();
  if (validity) res.validity_ms = validity->get<int64_t>();
  if (validity && mono && window) {
    // The validity was measured when the client read CLOCK_MONOTONIC (mono_ns); it has been running down since,
    // while the answer crossed the pipe and waited for the harness's thread (hundreds of ms on a loaded machine).
    // The lease the history records starts when the answer is read, so it is shortened by that lag.
    // steady_clock is CLOCK_MONOTONIC: one clock for every process on this machine.
    const int64_t at = mono->get<int64_t>();
    constexpr int64_t kSlackNs = 1000000;  // 1 ms: the two processes' reads of the clock are not ordered finer
    if (at < window->sent_ns - kSlackNs || at > window->read_ns + kSlackNs) {
      return bad("\"mono_ns\" " + std::to_string(at) + " is not between the request (" +
                 std::to_string(window->sent_ns) + ") and its answer (" + std::to_string(window->read_ns) +
                 ") on this machine's CLOCK_MONOTONIC: it must be clock_gettime(CLOCK_MONOTONIC) in ns");
    }
    const int64_t lag_ms = std::max<int64_t>(0, window->read_ns - at) / 1000000;
    res.answer_lag_ms = lag_ms;
    // A lease that ran out in transit still reached the holder as ok: it keeps 1 ms, an unusable window, not an
    // expired grant (the library handed out a valid lock; only its answer came late).
    if (*res.validity_ms > 0) res.validity_ms = std::max<int64_t>(1, *res.validity_ms - lag_ms);
  }
  if (keys) {
    for (const auto& k : *keys) res.keys.push_back(k.get<std::string>());
  }
  return res;
}

}  // namespace lockcheck
