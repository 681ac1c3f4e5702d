#include "checkers/import.h"

#include <algorithm>
#include <cctype>
#include <map>

#include <nlohmann/json.hpp>

namespace lockcheck {

namespace {

using nlohmann::json;

// A small EDN reader: enough for Jepsen op maps (no tagged literals other than #{...}, no metadata).
class EdnReader {
 public:
  EdnReader(const std::string& text, const std::string& name) : s_(text), name_(name) {}

  // Skips whitespace, commas and ; comments. False at the end of the text.
  bool more() {
    skip();
    return pos_ < s_.size();
  }
  int64_t line() const { return line_; }

  json read() {
    skip();
    if (pos_ >= s_.size()) fail("unexpected end of input");
    const char c = s_[pos_];
    if (c == '{') return read_map();
    if (c == '[' || c == '(') return read_seq(c == '[' ? ']' : ')');
    if (c == '#' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '{') {
      ++pos_;
      return read_seq('}');
    }
    if (c == '"') return read_string();
    if (c == ':') {
      ++pos_;
      return json(read_token());
    }
    const std::string t = read_token();
    if (t == "nil") return json();
    if (t == "true") return json(true);
    if (t == "false") return json(false);
    return number(t);
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw HistoryError(name_ + ":" + std::to_string(line_) + ": " + why);
  }

 private:
  void skip() {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == '\n') {
        ++line_;
        ++pos_;
      } else if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == ';') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  static bool delimiter(char c) {
    return c == ',' || c == '{' || c == '}' || c == '[' || c == ']' || c == '(' || c == ')' || c == '"' || c == ';' ||
           std::isspace(static_cast<unsigned char>(c));
  }
  std::string read_token() {
    const size_t start = pos_;
    while (pos_ < s_.size() && !delimiter(s_[pos_])) ++pos_;
    if (pos_ == start) fail(std::string("unexpected '") + s_[pos_] + "'");
    return s_.substr(start, pos_ - start);
  }
  json number(const std::string& t) const {
    std::string n = t;
    if (!n.empty() && (n.back() == 'N' || n.back() == 'M')) n.pop_back();  // bigint / bigdecimal suffixes
    try {
      size_t used = 0;
      if (n.find_first_of(".eE") == std::string::npos) {
        const long long v = std::stoll(n, &used);
        if (used == n.size()) return json(static_cast<int64_t>(v));
      } else {
        const double v = std::stod(n, &used);
        if (used == n.size()) return json(v);
      }
    } catch (const std::exception&) {
    }
    fail("cannot read '" + t + "' (not a number, keyword, string, nil or boolean)");
  }
  json read_string() {
    ++pos_;
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\n') ++line_;
      if (c == '\\' && pos_ < s_.size()) {
        const char e = s_[pos_++];
        switch (e) {
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'r': c = '\r'; break;
          case 'u': {
            if (pos_ + 4 > s_.size()) fail("bad \\u escape");
            unsigned cp = 0;
            for (int d = 0; d < 4; ++d) {
              const char x = s_[pos_++];
              if (!std::isxdigit(static_cast<unsigned char>(x))) fail("bad \\u escape");
              cp = cp * 16 + static_cast<unsigned>(
                                 std::isdigit(static_cast<unsigned char>(x)) ? x - '0' : (std::tolower(x) - 'a' + 10));
            }
            if (cp < 0x80) {
              out.push_back(static_cast<char>(cp));
            } else if (cp < 0x800) {
              out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
              out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
            } else {
              out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
              out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
              out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
            }
            continue;
          }
          default: c = e;
        }
      }
      out.push_back(c);
    }
    if (pos_ >= s_.size()) fail("unterminated string");
    ++pos_;
    return json(out);
  }
  json read_seq(char close) {
    ++pos_;
    json out = json::array();
    for (;;) {
      skip();
      if (pos_ >= s_.size()) fail(std::string("missing '") + close + "'");
      if (s_[pos_] == close) {
        ++pos_;
        return out;
      }
      out.push_back(read());
    }
  }
  json read_map() {
    ++pos_;
    json out = json::object();
    for (;;) {
      skip();
      if (pos_ >= s_.size()) fail("missing '}'");
      if (s_[pos_] == '}') {
        ++pos_;
        return out;
      }
      const json k = read();
      const json v = read();
      out[k.is_string() ? k.get<std::string>() : k.dump()] = v;
    }
  }

  const std::string& s_;
  std::string name_;
  size_t pos_ = 0;
  int64_t line_ = 1;
};

// An op from an EDN map (keywords already plain strings).
Op edn_op(const json& m, int64_t position, const EdnReader& r) {
  if (!m.is_object()) r.fail("an op must be a map");
  auto field = [&](const char* k) -> const json* {
    auto it = m.find(k);
    return it == m.end() ? nullptr : &*it;
  };
  auto integer = [&](const char* k, const json* v) {
    if (!v->is_number_integer()) r.fail(std::string(":") + k + " must be an integer");
    return v->get<int64_t>();
  };
  Op op;
  const json* type = field("type");
  if (!type || !type->is_string() || !op_type_from_string(type->get<std::string>())) {
    r.fail(":type must be one of :invoke, :ok, :fail, :info");
  }
  op.type = *op_type_from_string(type->get<std::string>());
  const json* f = field("f");
  if (!f || !f->is_string()) r.fail(":f must be a keyword or a string");
  op.f = f->get<std::string>();
  const json* p = field("process");
  if (!p) r.fail("missing :process");
  if (p->is_string() && p->get<std::string>() == "nemesis") {
    op.process = kNemesis;
  } else if (p->is_number_integer() && p->get<int64_t>() >= 0 && p->get<int64_t>() <= INT32_MAX) {
    op.process = static_cast<Process>(p->get<int64_t>());
  } else {
    r.fail(":process must be a non-negative integer or :nemesis");
  }
  const json* t = field("time");
  op.time_ns = t ? integer("time", t) : position;
  const json* i = field("index");
  op.index = i ? integer("index", i) : position;
  if (const json* k = field("key"); k && !k->is_null()) {
    op.key = k->is_string() ? k->get<std::string>() : k->dump();
  }
  if (const json* v = field("value")) op.value = *v;
  auto optional_integer = [&](const char* k, const json* v) {
    const int64_t x = integer(k, v);
    if (x == OptionalInt::kAbsent) r.fail(std::string(":") + k + " is out of range");
    return x;
  };
  if (const json* v = field("token"); v && !v->is_null()) op.token = optional_integer("token", v);
  if (const json* v = field("validity-ms"); v && !v->is_null()) op.validity_ms = optional_integer("validity-ms", v);
  if (const json* v = field("error"); v && !v->is_null()) op.error = v->is_string() ? v->get<std::string>() : v->dump();
  return op;
}

}  // namespace

History import_edn(const std::string& text, const std::string& name) {
  EdnReader r(text, name);
  History h;
  std::vector<int64_t> lines;
  while (r.more()) {
    const int64_t line = r.line();
    json form = r.read();
    if (form.is_array()) {
      for (const json& m : form) {
        h.push_back(edn_op(m, static_cast<int64_t>(h.size()), r));
        lines.push_back(line);
      }
    } else {
      h.push_back(edn_op(form, static_cast<int64_t>(h.size()), r));
      lines.push_back(line);
    }
  }
  for (size_t i = 0; i < h.size(); ++i) {
    if (h[i].index != static_cast<int64_t>(i)) {
      throw HistoryError(name + ":" + std::to_string(lines[i]) + ": :index " + std::to_string(h[i].index) +
                         " out of order (expected " + std::to_string(i) + ")");
    }
  }
  validate_history(h, name);
  return h;
}

History import_porcupine(const std::string& text, const std::string& name) {
  json arr;
  try {
    arr = json::parse(text);
  } catch (const json::parse_error& e) {
    throw HistoryError(name + ": not valid JSON (" + e.what() + ")");
  }
  if (!arr.is_array()) throw HistoryError(name + ": expected a JSON array of Porcupine operations");
  struct Event {
    int64_t time;
    int order;  // at equal times: 0 a completion of an op called earlier, 1 an invoke, 2 a completion of an
                // op called at the same time (after its own invoke)
    size_t op;  // position in arr
    Op rec;
  };
  std::vector<Event> events;
  events.reserve(arr.size() * 2);
  std::map<Process, std::vector<size_t>> by_client;  // client -> its events' invokes, for info completions
  for (size_t i = 0; i < arr.size(); ++i) {
    const json& o = arr[i];
    const std::string where = name + ": operation " + std::to_string(i) + ": ";
    auto need_int = [&](const json& v, const char* what) {
      if (!v.is_number_integer()) throw HistoryError(where + what + " must be an integer");
      return v.get<int64_t>();
    };
    auto need_optional_int = [&](const json& v, const char* what) {
      const int64_t x = need_int(v, what);
      if (x == OptionalInt::kAbsent) throw HistoryError(where + what + " is out of range");
      return x;
    };
    if (!o.is_object()) throw HistoryError(where + "must be an object");
    const int64_t client = need_int(o.value("client_id", json()), "client_id");
    if (client < 0 || client > INT32_MAX) throw HistoryError(where + "client_id must be a non-negative integer");
    const json in = o.value("input", json::object());
    const json out = o.value("output", json::object());
    if (!in.is_object() || !out.is_object()) throw HistoryError(where + "input and output must be objects");
    Op inv;
    inv.process = static_cast<Process>(client);
    inv.time_ns = need_int(o.value("call", json()), "call");
    if (!in.contains("f") || !in["f"].is_string()) throw HistoryError(where + "input.f must be a string");
    inv.f = in["f"].get<std::string>();
    if (in.contains("key") && in["key"].is_string()) inv.key = in["key"].get<std::string>();
    if (in.contains("value")) inv.value = in["value"];
    if (in.contains("token") && !in["token"].is_null()) inv.token = need_optional_int(in["token"], "input.token");
    Op done = inv;
    done.token.reset();
    done.value = nullptr;
    const std::string type = out.value("type", std::string("ok"));
    const auto t = op_type_from_string(type);
    if (!t || *t == OpType::kInvoke) throw HistoryError(where + "output.type must be ok, fail or info");
    done.type = *t;
    done.time_ns = need_int(o.value("return", json()), "return");
    if (done.time_ns < inv.time_ns) throw HistoryError(where + "returns before it is called");
    if (out.contains("value")) done.value = out["value"];
    if (out.contains("token") && !out["token"].is_null()) done.token = need_optional_int(out["token"], "output.token");
    if (out.contains("validity_ms") && !out["validity_ms"].is_null()) {
      done.validity_ms = need_optional_int(out["validity_ms"], "output.validity_ms");
    }
    if (out.contains("error") && out["error"].is_string()) done.error = out["error"].get<std::string>();
    events.push_back(Event{inv.time_ns, 1, i, inv});
    events.push_back(Event{done.time_ns, done.time_ns == inv.time_ns ? 2 : 0, i, done});
    by_client[inv.process].push_back(events.size() - 2);
  }
  // An info op completes just before its client's next call (Porcupine puts its return after the end).
  for (auto& [client, invokes] : by_client) {
    std::sort(invokes.begin(), invokes.end(), [&](size_t a, size_t b) { return events[a].time < events[b].time; });
    for (size_t j = 0; j + 1 < invokes.size(); ++j) {
      Event& done = events[invokes[j] + 1];
      const int64_t next_call = events[invokes[j + 1]].time;
      if (done.rec.is_info() && done.time > next_call) {
        done.time = std::max(next_call, events[invokes[j]].time);
        done.rec.time_ns = done.time;
        done.order = done.time == events[invokes[j]].time ? 2 : 0;
      }
    }
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.order != b.order) return a.order < b.order;
    return a.op < b.op;
  });
  History h;
  h.reserve(events.size());
  for (Event& e : events) {
    e.rec.index = static_cast<int64_t>(h.size());
    h.push_back(std::move(e.rec));
  }
  validate_history(h, name);
  return h;
}

}  // namespace lockcheck
