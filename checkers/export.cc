#include "checkers/export.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace lockcheck {

namespace {

bool keyword_char(char c, bool first) {
  if (std::isalpha(static_cast<unsigned char>(c))) return true;
  if (!first && (std::isdigit(static_cast<unsigned char>(c)) || c == '.')) return true;
  switch (c) {
    case '*':
    case '+':
    case '!':
    case '-':
    case '_':
    case '?':
    case '<':
    case '>':
    case '=': return true;
    default: return false;
  }
}

// A name that reads back as the same keyword (conservative: no '/', ':', '#', no leading sign before a digit).
bool valid_keyword(const std::string& s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (!keyword_char(s[i], i == 0)) return false;
  if ((s[0] == '-' || s[0] == '+') && s.size() > 1 && std::isdigit(static_cast<unsigned char>(s[1]))) return false;
  return true;
}

void edn_string(const std::string& s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\t': *out += "\\t"; break;
      case '\r': *out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          *out += buf;
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

void edn_name(const std::string& s, std::string* out) {
  if (valid_keyword(s)) {
    out->push_back(':');
    *out += s;
  } else {
    edn_string(s, out);
  }
}

void edn_value(const nlohmann::json& v, std::string* out) {
  switch (v.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded: *out += "nil"; return;
    case nlohmann::json::value_t::boolean: *out += v.get<bool>() ? "true" : "false"; return;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: *out += v.dump(); return;
    case nlohmann::json::value_t::number_float: {
      std::string d = v.dump();
      if (d.find_first_of(".eE") == std::string::npos) d += ".0";
      *out += d;
      return;
    }
    case nlohmann::json::value_t::string: edn_string(v.get_ref<const std::string&>(), out); return;
    case nlohmann::json::value_t::array: {
      out->push_back('[');
      bool first = true;
      for (const auto& e : v) {
        if (!first) out->push_back(' ');
        first = false;
        edn_value(e, out);
      }
      out->push_back(']');
      return;
    }
    case nlohmann::json::value_t::object: {
      out->push_back('{');
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) *out += ", ";
        first = false;
        edn_name(it.key(), out);
        out->push_back(' ');
        edn_value(it.value(), out);
      }
      out->push_back('}');
      return;
    }
    case nlohmann::json::value_t::binary: *out += "nil"; return;
  }
}

}  // namespace

std::string export_edn(const History& h) {
  std::string out;
  out.reserve(h.size() * 96);
  for (const Op& op : h) {
    if (op.is_notice()) continue;  // a loss notice is not an operation Knossos or Elle know
    out += "{:type :";
    out += to_string(op.type);
    out += ", :f ";
    edn_name(op.f, &out);
    out += ", :process ";
    out += op.process == kNemesis ? std::string(":nemesis") : std::to_string(op.process);
    out += ", :time ";
    out += std::to_string(op.time_ns);
    out += ", :index ";
    out += std::to_string(op.index);
    out += ", :key ";
    if (op.key.empty()) {
      out += "nil";
    } else {
      edn_string(op.key, &out);
    }
    out += ", :value ";
    edn_value(op.value, &out);
    if (op.token) out += ", :token " + std::to_string(*op.token);
    if (op.validity_ms) out += ", :validity-ms " + std::to_string(*op.validity_ms);
    if (!op.error.empty()) {
      out += ", :error ";
      edn_string(op.error, &out);
    }
    out += "}\n";
  }
  return out;
}

nlohmann::json export_porcupine(const History& h) {
  const std::vector<int64_t> pairs = pair_index(h);
  int64_t last_ns = 0;
  for (const Op& op : h) last_ns = std::max(last_ns, op.time_ns);
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < h.size(); ++i) {
    const Op& op = h[i];
    if (!op.is_invoke() || !op.is_client()) continue;
    nlohmann::json input = {{"f", op.f}, {"key", op.key}};
    if (!op.value.is_null()) input["value"] = op.value;
    if (op.token) input["token"] = *op.token;
    nlohmann::json output;
    int64_t ret = last_ns + 1;
    const int64_t c = pairs[i];
    if (c >= 0 && !h[static_cast<size_t>(c)].is_info()) {
      const Op& done = h[static_cast<size_t>(c)];
      ret = done.time_ns;
      output["type"] = to_string(done.type);
      if (!done.value.is_null()) output["value"] = done.value;
      if (done.token) output["token"] = *done.token;
      if (done.validity_ms) output["validity_ms"] = *done.validity_ms;
      if (!done.error.empty()) output["error"] = done.error;
    } else {
      output["type"] = "info";
      if (c >= 0 && !h[static_cast<size_t>(c)].error.empty()) output["error"] = h[static_cast<size_t>(c)].error;
    }
    out.push_back(
        {{"client_id", op.process}, {"input", input}, {"call", op.time_ns}, {"output", output}, {"return", ret}});
  }
  return out;
}

}  // namespace lockcheck
