// The JSONL history reader (core/history.cc), differentially: the reader as `check` runs it (the writer's-form
// scanner, the any-order scanner, then simdjson's DOM for the rest), the same reader with its fast paths off, and
// a plain nlohmann reading of the documented format (below) must agree on every input: the same ops, or all
// three an error (the first two also the same message, since a fast path that gives up hands the line on).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/history.h"
#include "fuzz/fuzz_common.h"

namespace {

using lockcheck::History;
using lockcheck::HistoryError;
using lockcheck::Op;
using lockcheck::OpType;
using lockcheck::fuzz::finding;

struct Outcome {
  bool ok = false;
  History ops;
  std::string error;
  std::vector<std::string> warnings;
};

// The format as the README and core/history.h state it, read with nlohmann: one JSON object per line; blank
// lines skipped (spaces and tabs around a line, a trailing \r, ignored); fields in any order, unknown ones
// ignored; index, time (integers), process (an integer from 0, or "nemesis"), type (invoke ok fail info), f (a
// string) required; key and error strings or null; token and validity_ms integers or null; value any JSON. A
// last line without a newline that is not JSON is a torn write: skipped. Then indices 0, 1, 2, ... and the op
// rules (validate_history).
bool as_int(const nlohmann::json& v, int64_t* out) {
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = static_cast<int64_t>(v.get<uint64_t>());
    return true;
  }
  if (!v.is_number_integer()) return false;
  *out = v.get<int64_t>();
  return true;
}

std::string reference_op(const nlohmann::json& j, Op* op) {
  if (!j.is_object()) return "not an object";
  for (const char* required : {"index", "time", "process", "type", "f"}) {
    if (!j.contains(required)) return std::string("missing ") + required;
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& v = it.value();
    int64_t x = 0;
    if (name == "index" || name == "time") {
      if (!as_int(v, &x)) return name + " not an integer";
      (name == "index" ? op->index : op->time_ns) = x;
    } else if (name == "process") {
      if (v.is_string() && v.get<std::string>() == "nemesis") {
        op->process = lockcheck::kNemesis;
      } else if (as_int(v, &x) && x >= 0 && x <= std::numeric_limits<lockcheck::Process>::max()) {
        op->process = static_cast<lockcheck::Process>(x);
      } else {
        return "bad process";
      }
    } else if (name == "type") {
      const auto t = v.is_string() ? lockcheck::op_type_from_string(v.get<std::string>()) : std::nullopt;
      if (!t) return "bad type";
      op->type = *t;
    } else if (name == "f") {
      if (!v.is_string()) return "f not a string";
      op->f = v.get<std::string>();
    } else if (name == "key" || name == "error") {
      if (!v.is_null() && !v.is_string()) return name + " not a string";
      (name == "key" ? op->key : op->error) = v.is_null() ? std::string() : v.get<std::string>();
    } else if (name == "token" || name == "validity_ms") {
      auto& out = name == "token" ? op->token : op->validity_ms;
      if (v.is_null()) {
        out.reset();
      } else if (as_int(v, &x) && x != lockcheck::OptionalInt::kAbsent) {
        out = x;
      } else {
        return name + " not an integer";
      }
    } else if (name == "value") {
      op->value = v;
    }
  }
  return "";
}

// Whether the line holds an integer literal beyond 64 bits (outside strings): JSON, but not what the format takes
// (its integers are 64-bit; nlohmann would read one as a double).
bool has_big_integer(const std::string& line) {
  bool in_string = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      continue;
    }
    if (c != '-' && (c < '0' || c > '9')) continue;
    size_t j = i + (c == '-' ? 1 : 0);
    const size_t digits_from = j;
    while (j < line.size() && line[j] >= '0' && line[j] <= '9') ++j;
    const bool integer = j == line.size() || (line[j] != '.' && line[j] != 'e' && line[j] != 'E');
    const std::string digits = line.substr(digits_from, j - digits_from);
    const std::string limit = c == '-' ? "9223372036854775808" : "18446744073709551615";
    if (integer && (digits.size() > limit.size() || (digits.size() == limit.size() && digits > limit))) return true;
    i = j;
  }
  return false;
}

// The known fields (the format's), each at most once in a line's object.
const char* const kKnownFields[] = {"index", "time", "process", "type", "f", "key", "error", "token", "validity_ms",
                                    "value"};

Outcome reference(const std::string& text) {
  Outcome o;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    const bool has_newline = nl != std::string::npos;
    if (!has_newline) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    size_t lead = 0;
    while (lead < line.size() && (line[lead] == ' ' || line[lead] == '\t')) ++lead;
    if (lead == line.size()) continue;
    nlohmann::json j;
    try {
      // A raw NUL byte is not JSON anywhere in a line (inside a string it must be escaped), but nlohmann's lexer
      // takes it for the end of its input and reads "1\0..." as 1: refused here as the format says.
      if (line.find('\0') != std::string::npos) throw std::invalid_argument("a NUL byte");
      j = nlohmann::json::parse(line);
    } catch (const std::exception& e) {  // parse_error, out_of_range for a number like 1e400, a NUL byte
      if (!has_newline) {
        o.warnings.push_back("torn");
        break;
      }
      o.error = std::string("not JSON: ") + e.what();
      return o;
    }
    if (has_big_integer(line)) {
      o.error = "an integer beyond 64 bits";
      return o;
    }
    std::string twice;
    {
      // Duplicate known names at the top level (nlohmann keeps the last one silently).
      std::vector<std::string> names;
      nlohmann::json::parse(line, [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        if (event == nlohmann::json::parse_event_t::key && depth == 1) {
          const std::string name = parsed.get<std::string>();
          for (const char* k : kKnownFields) {
            if (name == k && std::find(names.begin(), names.end(), name) != names.end()) twice = name;
          }
          names.push_back(name);
        }
        return true;
      });
    }
    if (!twice.empty()) {
      o.error = "field " + twice + " given twice";
      return o;
    }
    Op op;
    const std::string why = reference_op(j, &op);
    if (!why.empty()) {
      o.error = why;
      return o;
    }
    o.ops.push_back(std::move(op));
  }
  for (size_t i = 0; i < o.ops.size(); ++i) {
    if (o.ops[i].index != static_cast<int64_t>(i)) {
      o.error = "index out of order";
      return o;
    }
  }
  try {
    lockcheck::validate_history(o.ops, "reference");
  } catch (const HistoryError& e) {
    o.error = e.what();
    return o;
  }
  o.ok = true;
  return o;
}

template <typename Read>
Outcome run_reader(const char* which, Read read) {
  Outcome o;
  const bool returned =
      lockcheck::fuzz::expect_only<HistoryError>(which, [&] { o.ops = read(&o.warnings); });
  o.ok = returned;
  if (!returned) {
    try {
      read(nullptr);
    } catch (const HistoryError& e) {
      o.error = e.what();
    }
  }
  return o;
}

std::string describe(const Op& op) {
  nlohmann::json j = {{"index", op.index},         {"time", op.time_ns},
                      {"process", op.process},     {"type", lockcheck::to_string(op.type)},
                      {"f", op.f.str()},           {"key", op.key.str()},
                      {"value", op.value},         {"error", op.error.str()},
                      {"token", op.token ? nlohmann::json(*op.token) : nlohmann::json()},
                      {"validity_ms", op.validity_ms ? nlohmann::json(*op.validity_ms) : nlohmann::json()}};
  return j.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

void compare(const char* a_name, const Outcome& a, const char* b_name, const Outcome& b, bool same_message) {
  if (a.ok != b.ok) {
    finding(std::string(a_name) + (a.ok ? " read it, " : " refused it (" + a.error + "), ") + b_name +
            (b.ok ? " read it" : " refused it (" + b.error + ")"));
  }
  if (!a.ok) {
    if (same_message && a.error != b.error) {
      finding(std::string(a_name) + " and " + b_name + " refused it with different messages: '" + a.error +
              "' / '" + b.error + "'");
    }
    return;
  }
  if (a.ops.size() != b.ops.size()) {
    finding(std::string(a_name) + " read " + std::to_string(a.ops.size()) + " ops, " + b_name + " " +
            std::to_string(b.ops.size()));
  }
  if (a.warnings.size() != b.warnings.size()) {
    finding(std::string(a_name) + " and " + b_name + " disagree on a torn last line");
  }
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const std::string x = describe(a.ops[i]), y = describe(b.ops[i]);
    if (x != y) finding("op " + std::to_string(i) + ": " + a_name + " " + x + ", " + b_name + " " + y);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const Outcome fast = run_reader("parse_history", [&](std::vector<std::string>* w) {
    return lockcheck::parse_history(text, "fuzz", w);
  });
  const Outcome general = run_reader("parse_history_general", [&](std::vector<std::string>* w) {
    return lockcheck::parse_history_general(text, "fuzz", w);
  });
  compare("the reader", fast, "its general path", general, true);
  compare("the reader", fast, "nlohmann", reference(text), false);
  return 0;
}
