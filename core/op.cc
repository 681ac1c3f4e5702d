#include "core/op.h"

#include <ostream>
#include <stdexcept>
#include <unordered_map>

#include "core/huge_pages.h"
#include "core/json_int.h"

namespace lockcheck {

std::ostream& operator<<(std::ostream& out, OptionalInt v) {
  if (v) return out << *v;
  return out << "nullopt";
}

const char* to_string(OpType t) {
  switch (t) {
    case OpType::kInvoke: return "invoke";
    case OpType::kOk: return "ok";
    case OpType::kFail: return "fail";
    case OpType::kInfo: return "info";
  }
  return "?";
}

std::optional<OpType> op_type_from_string(std::string_view s) {
  if (s == "invoke") return OpType::kInvoke;
  if (s == "ok") return OpType::kOk;
  if (s == "fail") return OpType::kFail;
  if (s == "info") return OpType::kInfo;
  return std::nullopt;
}

namespace {

// Fills j (json or ordered_json) with op's fields in the documented order.
template <typename Json>
void fill(Json& j, const Op& op) {
  j["index"] = op.index;
  j["time"] = op.time_ns;
  if (op.process == kNemesis) {
    j["process"] = "nemesis";
  } else {
    j["process"] = op.process;
  }
  j["type"] = to_string(op.type);
  j["f"] = op.f;
  j["key"] = op.key;
  j["value"] = op.value;
  if (op.token) j["token"] = *op.token;
  if (op.validity_ms) j["validity_ms"] = *op.validity_ms;
  if (!op.error.empty()) j["error"] = op.error;
}

}  // namespace

void to_json(nlohmann::json& j, const Op& op) {
  j = nlohmann::json::object();
  fill(j, op);
}

namespace {

// A JSON string as nlohmann's dump writes it (escapes \" \\ \b \f \n \r \t, other control characters as
// \u00xx); strings with non-ASCII bytes go through nlohmann, which also replaces invalid UTF-8.
void append_json_string(std::string* out, const std::string& v) {
  for (unsigned char c : v) {
    if (c >= 0x80) {
      *out += nlohmann::json(v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      return;
    }
  }
  out->push_back('"');
  for (char c : v) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static const char* const kHex = "0123456789abcdef";
          *out += "\\u00";
          out->push_back(kHex[(c >> 4) & 0xf]);
          out->push_back(kHex[c & 0xf]);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

}  // namespace

// Written by hand (the same text as an ordered_json dump, see history_test): it runs under the history
// writer's lock for every op of a run.
std::string to_jsonl(const Op& op) {
  std::string s;
  s.reserve(160);
  s += "{\"index\":";
  s += std::to_string(op.index);
  s += ",\"time\":";
  s += std::to_string(op.time_ns);
  s += ",\"process\":";
  s += op.process == kNemesis ? std::string("\"nemesis\"") : std::to_string(op.process);
  s += ",\"type\":\"";
  s += to_string(op.type);
  s += "\",\"f\":";
  append_json_string(&s, op.f);
  s += ",\"key\":";
  append_json_string(&s, op.key);
  s += ",\"value\":";
  s += op.value.is_null() ? std::string("null")
                          : op.value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (op.token) {
    s += ",\"token\":";
    s += std::to_string(*op.token);
  }
  if (op.validity_ms) {
    s += ",\"validity_ms\":";
    s += std::to_string(*op.validity_ms);
  }
  if (!op.error.empty()) {
    s += ",\"error\":";
    append_json_string(&s, op.error);
  }
  s += "}";
  return s;
}

namespace {

const nlohmann::json& field(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) throw std::invalid_argument(std::string("missing field \"") + name + "\"");
  return *it;
}

int64_t int_field(const nlohmann::json& j, const char* name) {
  const std::optional<int64_t> v = json_integer<int64_t>(field(j, name));
  if (!v) throw std::invalid_argument(std::string("field \"") + name + "\" must be an integer in int64 range");
  return *v;
}

std::string string_field(const nlohmann::json& j, const char* name) {
  const auto& v = field(j, name);
  if (!v.is_string()) throw std::invalid_argument(std::string("field \"") + name + "\" must be a string");
  return v.get<std::string>();
}

std::optional<int64_t> optional_int(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return std::nullopt;
  const int64_t v = int_field(j, name);
  if (v == OptionalInt::kAbsent) throw std::invalid_argument(std::string("field \"") + name + "\" is out of range");
  return v;
}

}  // namespace

void from_json(const nlohmann::json& j, Op& op) {
  if (!j.is_object()) throw std::invalid_argument("an op must be a JSON object");
  op.index = int_field(j, "index");
  op.time_ns = int_field(j, "time");
  const auto& p = field(j, "process");
  if (p.is_string() && p.get<std::string>() == "nemesis") {
    op.process = kNemesis;
  } else if (const std::optional<Process> x = json_integer<Process>(p); x && *x >= 0) {
    op.process = *x;
  } else {
    throw std::invalid_argument("field \"process\" must be a non-negative integer or \"nemesis\"");
  }
  auto type = op_type_from_string(string_field(j, "type"));
  if (!type) throw std::invalid_argument("field \"type\" must be one of invoke, ok, fail, info");
  op.type = *type;
  op.f = string_field(j, "f");
  auto k = j.find("key");
  if (k == j.end() || k->is_null()) {
    op.key.clear();
  } else if (k->is_string()) {
    op.key = k->get<std::string>();
  } else {
    throw std::invalid_argument("field \"key\" must be a string");
  }
  auto v = j.find("value");
  op.value = v == j.end() ? nlohmann::json() : *v;
  op.token = optional_int(j, "token");
  op.validity_ms = optional_int(j, "validity_ms");
  auto e = j.find("error");
  if (e == j.end() || e->is_null()) {
    op.error.clear();
  } else if (e->is_string()) {
    op.error = e->get<std::string>();
  } else {
    throw std::invalid_argument("field \"error\" must be a string");
  }
}

std::string process_name(Process p) { return p == kNemesis ? std::string("nemesis") : "p" + std::to_string(p); }

const Atom& lost_f() {
  static const Atom kLost(kLostF);
  return kLost;
}

std::vector<int64_t> pair_index(const History& h) {
  std::vector<int64_t> pairs;
  assign_huge(&pairs, h.size(), int64_t{-1});
  // process -> index of its pending invoke (-1: none): a flat table for the usual small ids, a map beyond.
  constexpr Process kDense = 1 << 20;  // a long info-heavy run retires a process id per info op
  std::vector<int64_t> dense;
  int64_t nemesis = -1;
  std::unordered_map<Process, int64_t> sparse;
  auto slot = [&](Process p) -> int64_t& {
    if (p == kNemesis) return nemesis;
    if (p >= 0 && p < kDense) {
      if (static_cast<size_t>(p) >= dense.size()) resize_huge(&dense, static_cast<size_t>(p) + 1, int64_t{-1});
      return dense[static_cast<size_t>(p)];
    }
    return sparse.emplace(p, -1).first->second;
  };
  for (size_t i = 0; i < h.size(); ++i) {
    const Op& op = h[i];
    if (op.is_notice()) continue;  // a single op: it pairs with nothing
    int64_t& open = slot(op.process);
    if (op.is_invoke()) {
      open = static_cast<int64_t>(i);
      continue;
    }
    if (open < 0) continue;
    pairs[i] = open;
    pairs[static_cast<size_t>(open)] = static_cast<int64_t>(i);
    open = -1;
  }
  return pairs;
}

}  // namespace lockcheck
