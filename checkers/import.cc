#include "checkers/import.h"

#include <algorithm>
#include <cctype>
#include <map>

#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "core/huge_pages.h"
#include "core/json_int.h"

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

  // The next form without reading it: '{', '[', ... ('\0' at the end).
  char peek() {
    skip();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  // Steps over the '[' or '(' that peek() saw (the start of a top-level sequence of ops).
  void open_seq() { ++pos_; }
  // After open_seq: true at the closing bracket (and steps over it).
  bool close_seq(char close) {
    skip();
    if (pos_ >= s_.size()) fail(std::string("missing '") + close + "'");
    if (s_[pos_] != close) return false;
    ++pos_;
    return true;
  }

  // A map value of an op: a scalar read in place (a keyword, a string without escapes, an integer, nil), or any
  // other form as JSON (other).
  struct Value {
    enum Kind { kNil, kText, kInt, kOther } kind = kNil;
    std::string_view text;  // kText: a keyword's name or a string's bytes (in the input, or in owned)
    int64_t i = 0;
    json other;
    std::string owned;
    // As read() would have returned it.
    json to_json() const {
      switch (kind) {
        case kNil: return json();
        case kText: return json(std::string(text));
        case kInt: return json(i);
        default: return other;
      }
    }
    // As the text of a key or an error: a string as it is, anything else as its JSON text.
    std::string to_text() const { return kind == kText ? std::string(text) : to_json().dump(); }
  };
  void read_value(Value* v) {
    skip();
    if (pos_ >= s_.size()) fail("unexpected end of input");
    const char c = s_[pos_];
    if (c == ':') {
      ++pos_;
      const size_t start = pos_;
      while (pos_ < s_.size() && !delimiter(s_[pos_])) ++pos_;
      if (pos_ == start) fail(std::string("unexpected '") + s_[pos_] + "'");
      v->kind = Value::kText;
      v->text = std::string_view(s_).substr(start, pos_ - start);
      return;
    }
    if (c == '"') {
      const size_t start = pos_ + 1;
      size_t end = start;
      while (end < s_.size() && s_[end] != '"' && s_[end] != '\\' && s_[end] != '\n') ++end;
      if (end < s_.size() && s_[end] == '"') {
        pos_ = end + 1;
        v->kind = Value::kText;
        v->text = std::string_view(s_).substr(start, end - start);
        return;
      }
      v->owned = read_string().get<std::string>();  // escapes or newlines
      v->kind = Value::kText;
      v->text = v->owned;
      return;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      // -?[0-9]{1,18} followed by a delimiter: read here; anything else (a bigger number, a suffix, a fraction)
      // through number().
      size_t p = pos_ + (c == '-' ? 1 : 0);
      const size_t digits_start = p;
      int64_t x = 0;
      while (p < s_.size() && s_[p] >= '0' && s_[p] <= '9' && p - digits_start < 18) x = x * 10 + (s_[p++] - '0');
      if (p > digits_start && (p >= s_.size() || delimiter(s_[p]))) {
        pos_ = p;
        v->kind = Value::kInt;
        v->i = c == '-' ? -x : x;
        return;
      }
    }
    if (c != '{' && c != '[' && c != '(' && c != '#') {
      const std::string t = read_token();
      if (t == "nil") {
        v->kind = Value::kNil;
        return;
      }
      v->other = t == "true" ? json(true) : t == "false" ? json(false) : number(t);
    } else {
      v->other = read();
    }
    if (v->other.is_number_integer()) {
      v->kind = Value::kInt;
      v->i = v->other.get<int64_t>();
    } else {
      v->kind = Value::kOther;
    }
  }
  // Steps over the '{' of a map (the caller has seen it with peek()). Then next_entry reads each key and value
  // until it returns false after the '}'.
  void open_map() { ++pos_; }
  bool next_entry(Value* key, Value* value) {
    skip();
    if (pos_ >= s_.size()) fail("missing '}'");
    if (s_[pos_] == '}') {
      ++pos_;
      return false;
    }
    read_value(key);
    read_value(value);
    return true;
  }

 private:
  void skip() {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == '\n') {
        ++line_;
        ++pos_;
      } else if (c == ',' || edn_space(c)) {
        ++pos_;
      } else if (c == ';') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  // std::isspace in the "C" locale, without a library call per byte.
  static bool edn_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }
  static bool delimiter(char c) {
    return c == ',' || c == '{' || c == '}' || c == '[' || c == ']' || c == '(' || c == ')' || c == '"' || c == ';' ||
           edn_space(c);
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

// The last text interned for one field (f, key, error): most ops repeat it, and it is then found without the
// pool's lock.
struct RecentAtom {
  Atom atom;
  bool set = false;
  Atom get(std::string_view s) {
    if (!set || atom.size() != s.size() || std::string_view(atom.str()) != s) {
      atom = Atom(s);
      set = true;
    }
    return atom;
  }
};
struct EdnAtoms {
  RecentAtom f, key, error;
};

// An op from the EDN map at the reader (peek() is '{'), read entry by entry into the op (no JSON object per op).
// Keywords and strings are alike, as in Jepsen's readers; the last of two equal keys counts.
Op edn_op(EdnReader& r, int64_t position, EdnAtoms* atoms) {
  using Value = EdnReader::Value;
  Op op;
  Value k, v;
  bool has_type = false, has_f = false, has_process = false, has_time = false, has_index = false;
  bool type_ok = true, f_ok = true, process_ok = true;
  const char* bad_int = nullptr;      // the first field that should have been an integer
  const char* out_of_range = nullptr;  // the first optional integer that is kAbsent
  auto integer = [&](const char* name, int64_t* out) {
    if (v.kind == Value::kInt) {
      *out = v.i;
    } else if (bad_int == nullptr) {
      bad_int = name;
    }
  };
  auto optional_integer = [&](const char* name, OptionalInt* out) {
    if (v.kind == Value::kNil) {
      out->reset();
      return;
    }
    int64_t x = 0;
    if (v.kind != Value::kInt) {
      if (bad_int == nullptr) bad_int = name;
      return;
    }
    x = v.i;
    if (x == OptionalInt::kAbsent) {
      if (out_of_range == nullptr) out_of_range = name;
      return;
    }
    *out = x;
  };
  r.open_map();
  while (r.next_entry(&k, &v)) {
    if (k.kind != Value::kText) continue;  // a key that is not a keyword or string names no op field
    const std::string_view name = k.text;
    if (name == "type") {
      has_type = true;
      const std::optional<OpType> t =
          v.kind == Value::kText ? op_type_from_string(v.text) : std::optional<OpType>();
      type_ok = t.has_value();
      if (t) op.type = *t;
    } else if (name == "f") {
      has_f = true;
      f_ok = v.kind == Value::kText;
      if (f_ok) op.f = atoms->f.get(v.text);
    } else if (name == "process") {
      has_process = true;
      if (v.kind == Value::kText && v.text == "nemesis") {
        op.process = kNemesis;
        process_ok = true;
      } else if (v.kind == Value::kInt && v.i >= 0 && v.i <= INT32_MAX) {
        op.process = static_cast<Process>(v.i);
        process_ok = true;
      } else {
        process_ok = false;
      }
    } else if (name == "time") {
      has_time = true;
      integer("time", &op.time_ns);
    } else if (name == "index") {
      has_index = true;
      integer("index", &op.index);
    } else if (name == "key") {
      if (v.kind == Value::kNil) {
        op.key.clear();
      } else {
        op.key = v.kind == Value::kText ? atoms->key.get(v.text) : Atom(v.to_text());
      }
    } else if (name == "value") {
      op.value = v.to_json();
    } else if (name == "token") {
      optional_integer("token", &op.token);
    } else if (name == "validity-ms") {
      optional_integer("validity-ms", &op.validity_ms);
    } else if (name == "error") {
      if (v.kind == Value::kNil) {
        op.error.clear();
      } else {
        op.error = v.kind == Value::kText ? atoms->error.get(v.text) : Atom(v.to_text());
      }
    }
  }
  // The checks in the order the fields are documented (the message names the first problem).
  if (!has_type || !type_ok) r.fail(":type must be one of :invoke, :ok, :fail, :info");
  if (!has_f || !f_ok) r.fail(":f must be a keyword or a string");
  if (!has_process) r.fail("missing :process");
  if (!process_ok) r.fail(":process must be a non-negative integer or :nemesis");
  if (bad_int != nullptr) r.fail(std::string(":") + bad_int + " must be an integer");
  if (out_of_range != nullptr) r.fail(std::string(":") + out_of_range + " is out of range");
  if (!has_time) op.time_ns = position;
  if (!has_index) op.index = position;
  return op;
}

}  // namespace

History import_edn(const std::string& text, const std::string& name) {
  // EDN text is UTF-8; a string of other bytes could not be written out again (results.json, the report): say
  // which line, as a HistoryError, before reading anything.
  if (!simdjson::validate_utf8(text.data(), text.size())) {
    size_t start = 0;
    int64_t line = 1;
    for (;;) {
      const size_t end = std::min(text.find('\n', start), text.size());
      if (!simdjson::validate_utf8(text.data() + start, end - start)) {
        throw HistoryError(name + ":" + std::to_string(line) + ": not valid UTF-8");
      }
      if (end == text.size()) break;
      start = end + 1;
      ++line;
    }
    throw HistoryError(name + ": not valid UTF-8");  // a sequence cut by a newline
  }
  EdnReader r(text, name);
  History h;
  // About 90 bytes an op as export_edn writes them; the reserve is address space, touched as ops come.
  h.reserve(text.size() / 64 + 16);
  advise_huge_pages(h);
  PopulateAhead populate;
  std::vector<int64_t> lines;  // the line each op starts on, for the index check below
  EdnAtoms atoms;
  auto one_op = [&]() {
    const int64_t line = r.line();
    if (r.peek() != '{') {
      r.read();
      r.fail("an op must be a map");
    }
    populate.fill(h);
    h.push_back(edn_op(r, static_cast<int64_t>(h.size()), &atoms));
    lines.push_back(line);
  };
  while (r.more()) {
    const char c = r.peek();
    if (c == '[' || c == '(') {
      // One top-level sequence of op maps.
      r.open_seq();
      while (!r.close_seq(c == '[' ? ']' : ')')) one_op();
    } else {
      one_op();
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
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
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
      // Not get<int64_t>() alone: an integer above INT64_MAX is unsigned to nlohmann and would wrap to a negative.
      const std::optional<int64_t> x = json_integer<int64_t>(v);
      if (!x) {
        throw HistoryError(where + what + " must be an integer" + (v.is_number_integer() ? " in int64 range" : ""));
      }
      return *x;
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
    // Not out.value("type", "ok"): that throws nlohmann's type_error for a type that is not a string (fuzzing).
    const auto type_it = out.find("type");
    const bool type_given = type_it != out.end();
    if (type_given && !type_it->is_string()) throw HistoryError(where + "output.type must be ok, fail or info");
    const auto t = op_type_from_string(type_given ? type_it->get<std::string>() : std::string("ok"));
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
