#include "core/history.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <unordered_map>

#include <simdjson.h>

#include "core/huge_pages.h"

namespace lockcheck {

HistoryWriter::HistoryWriter(const std::string& path, const MonotonicClock* clock) : path_(path), clock_(clock) {
  const char* off = std::getenv("LOCKCHECK_BENCH_NO_RECORD");
  recording_ = off == nullptr || std::string(off) != "1";
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
}

HistoryWriter::~HistoryWriter() {
  if (fd_ >= 0) ::close(fd_);
}

Op HistoryWriter::record(Op op) {
  std::lock_guard<std::mutex> lock(mu_);
  op.index = next_index_++;
  if (clock_) op.time_ns = clock_->now_ns();
  if (!recording_) {
    // Bench only (LOCKCHECK_BENCH_NO_RECORD): the op is counted and observed, neither written nor kept.
    count(op.type);
    for (auto& fn : observers_) fn(op);
    return op;
  }
  std::string line = to_jsonl(op);
  line.push_back('\n');
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("cannot write history: ") + std::strerror(errno));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  count(op.type);
  if (op.process >= next_process_) next_process_ = op.process + 1;
  for (auto& fn : observers_) fn(op);
  return op;
}

void HistoryWriter::count(OpType t) {
  switch (t) {
    case OpType::kInvoke: ++counts_.invoke; break;
    case OpType::kOk: ++counts_.ok; break;
    case OpType::kFail: ++counts_.fail; break;
    case OpType::kInfo: ++counts_.info; break;
  }
}

History HistoryWriter::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!recording_) return {};
  return read_history(path_);
}

Process HistoryWriter::next_free_process() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_process_;
}

OpCounts HistoryWriter::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

void HistoryWriter::observe(std::function<void(const Op&)> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  observers_.push_back(std::move(fn));
}

namespace {

const char* const kKnownClientF[] = {"acquire", "release", "extend", "read", "add", "increment"};

// The op rules of validate_history, applied one op at a time.
class OpRules {
 public:
  // Whether op (history index i, after every op before it) keeps the rules; when it does not, *why says why.
  bool check(const Op& op, int64_t i, std::string* why) {
    const bool lost = op.is_client() && op.f == lost_;
    if (op.is_client() && !lost && !known_client_f(op.f)) {
      *why = "unknown f \"" + op.f + "\" for a client op (known: acquire, release, extend, read, add, increment, lost)";
      return false;
    }
    if (lost && !op.is_info()) {
      *why = "a loss notice (f \"lost\") is one op of type info, not " + std::string(to_string(op.type));
      return false;
    }
    Proc& pr = proc(op.process);
    if (op.time_ns < pr.last_time) {
      *why = "time goes backwards for process " + process_name(op.process) + ": " + std::to_string(op.time_ns) +
             " ns after " + std::to_string(pr.last_time) + " ns at op " + std::to_string(pr.last_index);
      return false;
    }
    if (lost) {
      // A notice stands alone: it may come while the process has an op open.
    } else if (op.is_invoke()) {
      if (pr.open >= 0) {
        *why = "process " + process_name(op.process) + " invokes " + op.f + " while its " + pr.open_f +
               " invoked at op " + std::to_string(pr.open) + " is still open";
        return false;
      }
      pr.open = i;
      pr.open_f = op.f;
    } else {
      if (pr.open < 0) {
        *why = "process " + process_name(op.process) + " completes " + op.f + " (" + to_string(op.type) +
               ") with no open invoke";
        return false;
      }
      if (pr.open_f != op.f) {
        *why = "process " + process_name(op.process) + " completes " + op.f + " but its open invoke (op " +
               std::to_string(pr.open) + ") is " + pr.open_f;
        return false;
      }
      pr.open = -1;
    }
    pr.last_time = op.time_ns;
    pr.last_index = i;
    return true;
  }

 private:
  bool known_client_f(const Atom& f) {
    if (f == last_known_) return true;  // ops mostly repeat the f before them (an invoke, its completion)
    for (const Atom& k : known_) {
      if (f == k) {
        last_known_ = k;
        return true;
      }
    }
    return false;
  }
  struct Proc {
    int64_t last_time = std::numeric_limits<int64_t>::min();
    int64_t last_index = -1;
    int64_t open = -1;  // index of the open invoke
    Atom open_f;
  };
  Proc& proc(Process p) {
    if (p == kNemesis) return nemesis_;
    if (p < kDense) {
      if (static_cast<size_t>(p) >= dense_.size()) resize_huge(&dense_, static_cast<size_t>(p) + 1);
      return dense_[static_cast<size_t>(p)];
    }
    return sparse_[p];
  }
  static constexpr Process kDense = 1 << 20;  // a long info-heavy run retires a process id per info op
  // Interned once per reader rather than looked up per op.
  const Atom lost_ = lost_f();
  const Atom known_[6] = {kKnownClientF[0], kKnownClientF[1], kKnownClientF[2],
                          kKnownClientF[3], kKnownClientF[4], kKnownClientF[5]};
  static_assert(std::size(kKnownClientF) == 6);
  Atom last_known_ = known_[0];
  Proc nemesis_;
  std::vector<Proc> dense_;
  std::unordered_map<Process, Proc> sparse_;
};

// The reader's own table of the texts it met in one field (f, key or error): a line's text is found without the
// pool's lock (and mostly without hashing: the last few texts are compared first); the pool is asked once per
// distinct text.
class AtomCache {
 public:
  // padded: s.data()[0 .. 8) is readable (the reader's buffer is padded after its last line).
  // The text met last is checked inline; the others, the table and the pool out of line.
  [[gnu::always_inline]] Atom get(std::string_view s, bool padded = true) {
    const uint64_t head = head_of(s.data(), s.size(), padded);
    const Recent& r = recent_[0];
    if (r.size == s.size() && r.head == head &&
        (s.size() <= 8 || std::memcmp(r.atom.data() + 8, s.data() + 8, s.size() - 8) == 0)) {
      return r.atom;
    }
    return get_rest(s, head);
  }

 private:
  [[gnu::noinline]] Atom get_rest(std::string_view s, uint64_t head) {
    for (size_t k = 1; k < kRecent; ++k) {
      const Recent& r = recent_[k];
      if (r.size != s.size() || r.head != head) continue;
      if (s.size() > 8 && std::memcmp(r.atom.data() + 8, s.data() + 8, s.size() - 8) != 0) continue;
      std::swap(recent_[k], recent_[k - 1]);  // the texts met most often move to the front
      return recent_[k - 1].atom;
    }
    Atom a;
    auto it = seen_.find(s);
    if (it != seen_.end()) {
      a = it->second;
    } else {
      a = Atom(s);
      seen_.emplace(std::string_view(a.str()), a);  // a view of the pool's copy, which never moves
    }
    recent_[kRecent - 1] = Recent{a, s.size(), head};
    return a;
  }

  // The first (up to) eight bytes of a text, zero beyond its end: with the size, equal for equal short texts.
  [[gnu::always_inline]] static uint64_t head_of(const char* p, size_t n, bool padded) {
    uint64_t w = 0;
    if (!padded) {
      std::memcpy(&w, p, std::min<size_t>(n, 8));
      return w;
    }
    std::memcpy(&w, p, 8);
    return n >= 8 ? w : w & ((uint64_t{1} << (8 * n)) - 1);
  }
  struct Recent {
    Atom atom;
    size_t size = 0;
    uint64_t head = 0;
  };
  static constexpr size_t kRecent = 4;
  Recent recent_[kRecent];
  std::unordered_map<std::string_view, Atom> seen_;
};

struct AtomCaches {
  AtomCache f, key, error;
};

// The fast path: a line exactly as HistoryWriter writes it (fields in the documented order, strings without
// escapes, "value" null), scanned without a JSON parser. Returns false on anything else, and the line is then
// parsed in full by parse_op (which also words the error).
class LineScanner {
 public:
  // REQUIRES: p[0 .. len + 8) is readable (the reader's buffer is padded after its last line).
  LineScanner(const char* p, size_t len, AtomCaches* atoms) : p_(p), end_(p + len), atoms_(atoms) {}

  bool op(Op* op) { return fields(op) && p_ == end_; }

  // The same for a line not yet cut at its newline: [p, p + len) is the rest of the read window. Scans the op
  // up to its closing brace, which must be followed by the newline (a string's newline or the window's end fail
  // it); then *nl is the newline. Saves the separate search for each line's end (memchr over every byte).
  // *not_writers: the op itself is not in the writer's form (then op() fails on the line too: no literal,
  // number or string of that form reads across a newline), as opposed to what follows its closing brace.
  bool op_to_newline(Op* op, const char** nl, bool* not_writers) {
    *not_writers = !fields(op);
    if (*not_writers || p_ >= end_ || *p_ != '\n') return false;
    *nl = p_;
    return true;
  }

 private:
  // The writer's op, from its opening brace up to and including its closing one.
  bool fields(Op* op) {
    int64_t process = 0;
    std::string_view f, key;
    if (!lit("{\"index\":") || !integer(&op->index) || !lit(",\"time\":") || !integer(&op->time_ns) ||
        !lit(",\"process\":")) {
      return false;
    }
    if (p_ < end_ && *p_ == '"') {
      if (!lit("\"nemesis\"")) return false;
      op->process = kNemesis;
    } else {
      if (!integer(&process) || process < 0 || process > std::numeric_limits<Process>::max()) return false;
      op->process = static_cast<Process>(process);
    }
    // The type as one of its four literals (the same lines as a string then op_type_from_string, without either).
    if (lit(",\"type\":\"invoke\"")) {
      op->type = OpType::kInvoke;
    } else if (lit(",\"type\":\"ok\"")) {
      op->type = OpType::kOk;
    } else if (lit(",\"type\":\"fail\"")) {
      op->type = OpType::kFail;
    } else if (lit(",\"type\":\"info\"")) {
      op->type = OpType::kInfo;
    } else {
      return false;
    }
    if (!lit(",\"f\":") || !string(&f) || !lit(",\"key\":") || !string(&key) || !lit(",\"value\":null")) {
      return false;
    }
    op->f = atoms_->f.get(f);
    op->key = atoms_->key.get(key);
    if (p_ < end_ && *p_ == '}') {  // most lines end here: no optional field
      ++p_;
      return true;
    }
    if (lit(",\"token\":")) {
      int64_t t = 0;
      if (!integer(&t)) return false;
      op->token = t;
    }
    if (lit(",\"validity_ms\":")) {
      int64_t v = 0;
      if (!integer(&v)) return false;
      op->validity_ms = v;
    }
    if (lit(",\"error\":")) {
      std::string_view e;
      if (!string(&e)) return false;
      op->error = atoms_->error.get(e);
    }
    return lit("}");
  }

 public:
  // The second fast path, for lines other tools write: the same flat op with its fields in any order and JSON
  // whitespace between the tokens (e.g. Python's json.dumps: a space after every ':' and ','). Returns false,
  // and the line goes to parse_op, on anything else: a field twice, a field it does not know, a missing required
  // field, a "value" other than null, a string with an escape, a number that is not a plain integer.
  bool op_any_order(Op* op) {
    constexpr unsigned kIndex = 1, kTime = 2, kProcess = 4, kType = 8, kF = 16, kKey = 32, kValue = 64,
                       kToken = 128, kValidity = 256, kError = 512;
    constexpr unsigned kRequired = kIndex | kTime | kProcess | kType | kF;
    unsigned seen = 0;
    if (!lit("{")) return false;
    for (;;) {
      space();
      // The field's name, told by its first letter and compared a word at a time.
      unsigned bit = 0;
      if (p_ + 1 < end_ && *p_ == '"') {
        switch (p_[1]) {
          case 'i': bit = lit("\"index\"") ? kIndex : 0; break;
          case 't': bit = lit("\"time\"") ? kTime : lit("\"type\"") ? kType : lit("\"token\"") ? kToken : 0; break;
          case 'p': bit = lit("\"process\"") ? kProcess : 0; break;
          case 'f': bit = lit("\"f\"") ? kF : 0; break;
          case 'k': bit = lit("\"key\"") ? kKey : 0; break;
          case 'v': bit = lit("\"value\"") ? kValue : lit("\"validity_ms\"") ? kValidity : 0; break;
          case 'e': bit = lit("\"error\"") ? kError : 0; break;
          default: break;
        }
      }
      if (bit == 0 || (seen & bit) != 0) return false;
      seen |= bit;
      space();
      if (!lit(":")) return false;
      space();
      std::string_view text;
      int64_t x = 0;
      switch (bit) {
        case kIndex:
          if (!integer(&op->index)) return false;
          break;
        case kTime:
          if (!integer(&op->time_ns)) return false;
          break;
        case kProcess:
          if (lit("\"nemesis\"")) {
            op->process = kNemesis;
          } else if (integer(&x) && x >= 0 && x <= std::numeric_limits<Process>::max()) {
            op->process = static_cast<Process>(x);
          } else {
            return false;
          }
          break;
        case kType: {
          if (!string(&text)) return false;
          const std::optional<OpType> op_type = op_type_from_string(text);
          if (!op_type) return false;
          op->type = *op_type;
          break;
        }
        case kF:
          if (!string(&text)) return false;
          op->f = atoms_->f.get(text);
          break;
        case kKey:
        case kError: {
          Atom& out = bit == kKey ? op->key : op->error;
          if (lit("null")) {
            out.clear();
          } else if (string(&text)) {
            out = (bit == kKey ? atoms_->key : atoms_->error).get(text);
          } else {
            return false;
          }
          break;
        }
        case kValue:
          if (!lit("null")) return false;
          break;
        default: {  // kToken, kValidity
          OptionalInt& out = bit == kToken ? op->token : op->validity_ms;
          if (lit("null")) {
            out.reset();
          } else if (integer(&x)) {  // at most 18 digits: never OptionalInt::kAbsent
            out = x;
          } else {
            return false;
          }
          break;
        }
      }
      space();
      if (lit(",")) continue;
      if (lit("}")) break;
      return false;
    }
    return p_ == end_ && (seen & kRequired) == kRequired;
  }

 private:
  // JSON whitespace inside a line (the reader has cut the line at its newline).
  void space() {
    const char* p = p_;  // a local: a store to p_ would be reloaded after every byte read
    while (p < end_ && static_cast<unsigned char>(*p) <= ' ' && (*p == ' ' || *p == '\t' || *p == '\r')) ++p;
    p_ = p;
  }
  template <size_t N>
  [[gnu::always_inline]] bool lit(const char (&s)[N]) {
    constexpr size_t n = N - 1;
    if (static_cast<size_t>(end_ - p_) < n || !equal<n>(p_, s)) return false;
    p_ += n;
    return true;
  }
  // n bytes equal, compared 8 at a time (the last word overlapping) rather than by a call to memcmp.
  template <size_t n>
  static bool equal(const char* a, const char* b) {
    if constexpr (n == 1) {
      return a[0] == b[0];
    } else if constexpr (n < 4) {
      uint16_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // two words, overlapping when n is 3
      std::memcpy(&x0, a, 2);
      std::memcpy(&y0, b, 2);
      std::memcpy(&x1, a + n - 2, 2);
      std::memcpy(&y1, b + n - 2, 2);
      return ((x0 ^ y0) | (x1 ^ y1)) == 0;
    } else if constexpr (n < 8) {
      uint32_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;
      std::memcpy(&x0, a, 4);
      std::memcpy(&y0, b, 4);
      std::memcpy(&x1, a + n - 4, 4);
      std::memcpy(&y1, b + n - 4, 4);
      return ((x0 ^ y0) | (x1 ^ y1)) == 0;
    } else {
      uint64_t x = 0, y = 0, diff = 0;
      for (size_t k = 0; k + 8 <= n; k += 8) {
        std::memcpy(&x, a + k, 8);
        std::memcpy(&y, b + k, 8);
        diff |= x ^ y;
      }
      if constexpr (n % 8 != 0) {
        std::memcpy(&x, a + n - 8, 8);
        std::memcpy(&y, b + n - 8, 8);
        diff |= x ^ y;
      }
      return diff == 0;
    }
  }
  // A JSON integer as the writer prints it: -?[0-9]+ without a leading zero (unless 0), at most 18 digits.
  // Read eight bytes at a time (see digits8).
  // (Locals rather than p_: a store to p_ would be reloaded after every byte read, as chars may alias it.)
  [[gnu::always_inline]] bool integer(int64_t* out) {
    static constexpr uint64_t kPow10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
    const char* p = p_;
    const char* const end = end_;
    bool neg = false;
    if (p < end && *p == '-') {
      neg = true;
      ++p;
    }
    uint64_t v = 0;
    int digits = digits8(p, end, &v);
    if (digits == 0) return false;
    int n = digits;
    while (n == 8 && digits <= 18) {
      uint64_t part = 0;
      n = digits8(p + digits, end, &part);
      v = v * kPow10[n] + part;  // wraps past 19 digits, and such a number is rejected below
      digits += n;
    }
    if (digits > 18 || (digits > 1 && *p == '0')) return false;
    *out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
    p_ = p + digits;
    return true;
  }
  // The ASCII digits at p (at most eight, none at or past end): how many, and their value in *value.
  // REQUIRES: p[0 .. 8) is readable.
  [[gnu::always_inline]] static int digits8(const char* p, const char* end, uint64_t* value) {
    const uint64_t w = load(p);
    // A byte is a digit when its high nibble is 3 and stays 3 after adding 6. Carries can only start at a
    // byte that is not a digit, so the lowest flagged byte is exact.
    const uint64_t not_digit = ((w & 0xF0F0F0F0F0F0F0F0ULL) ^ 0x3030303030303030ULL) |
                               (((w + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) ^ 0x3030303030303030ULL);
    int n = not_digit == 0 ? 8 : __builtin_ctzll(not_digit) / 8;
    if (end - p < n) n = static_cast<int>(end - p);
    if (n <= 0) return 0;
    if (n == 1) {  // a process id, mostly
      *value = (w & 0xFF) - '0';
      return 1;
    }
    // The n digits moved to the end of the word (the last digit the least significant), '0' in front of them.
    const uint64_t aligned = n == 8 ? w : (w << (8 * (8 - n))) | (0x3030303030303030ULL >> (8 * n));
    *value = parse_eight_digits(aligned);
    return n;
  }
  // A string with no escapes and no control characters: eight bytes at a time, looking for the first quote,
  // backslash or control character.
  [[gnu::always_inline]] bool string(std::string_view* out) {
    const char* p = p_;
    const char* const end = end_;
    if (p >= end || *p != '"') return false;
    const char* start = ++p;
    uint64_t high = 0;  // the high bits of the string's bytes: any set, and the string must be valid UTF-8
    for (;;) {
      const uint64_t w = load(p);  // may read past end: the bytes there are readable (see the constructor)
      const uint64_t special = has_byte(w, '"') | has_byte(w, '\\') | has_less(w, 0x20);
      if (special == 0) {
        high |= w;
        p += 8;
        if (p >= end) return false;
        continue;
      }
      const int k = __builtin_ctzll(special) / 8;  // the lowest flagged byte is exact
      if (k > 0) high |= w & (~uint64_t{0} >> (64 - 8 * k));
      p += k;
      if (p >= end || *p != '"') return false;
      break;
    }
    // Non-ASCII bytes: checked as the general path (simdjson) checks them, so that both refuse invalid UTF-8
    // (found by fuzz/history_reader.cc: the scanner took any byte, simdjson refuses the line).
    if ((high & kHighs) != 0 && !simdjson::validate_utf8(start, static_cast<size_t>(p - start))) return false;
    *out = std::string_view(start, static_cast<size_t>(p - start));
    p_ = p + 1;
    return true;
  }

  static uint64_t load(const char* p) {
    uint64_t w = 0;
    std::memcpy(&w, p, 8);
    return w;  // little-endian: the first byte is the lowest
  }
  static constexpr uint64_t kOnes = 0x0101010101010101ULL, kHighs = 0x8080808080808080ULL;
  // The high bit of every byte of w that is below n (n <= 128); exact for the lowest such byte.
  static uint64_t has_less(uint64_t w, uint8_t n) { return (w - kOnes * n) & ~w & kHighs; }
  static uint64_t has_byte(uint64_t w, char c) { return has_less(w ^ (kOnes * static_cast<uint8_t>(c)), 1); }
  // The value of eight ASCII digits (the first byte the most significant): pairs, then quadruples, then all.
  [[gnu::always_inline]] static uint64_t parse_eight_digits(uint64_t w) {
    w -= 0x3030303030303030ULL;
    w = (w * 10 + (w >> 8)) & 0x00FF00FF00FF00FFULL;    // each 16-bit lane: two digits
    w = (w * 100 + (w >> 16)) & 0x0000FFFF0000FFFFULL;  // each 32-bit lane: four digits
    return (w * 10000 + (w >> 32)) & 0xFFFFFFFFULL;     // eight digits
  }

  const char* p_;
  const char* end_;
  AtomCaches* atoms_;
};

// text with every integer literal (outside strings) that no 64-bit integer holds replaced by 0; nullopt when
// there is none. JSON allows such integers; simdjson refuses them with NUMBER_ERROR, as it refuses a malformed
// number: parsing the replaced text again tells the two apart.
std::optional<std::string> without_big_integers(std::string_view text) {
  std::string out;
  bool any = false;
  size_t copied = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {  // skip the string, escapes included
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      continue;
    }
    if (c != '-' && (c < '0' || c > '9')) continue;
    const size_t from = i + (c == '-' ? 1 : 0);
    size_t j = from;
    while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
    const bool integer = j == text.size() || (text[j] != '.' && text[j] != 'e' && text[j] != 'E');
    const std::string_view digits = text.substr(from, j - from), limit = c == '-' ? "9223372036854775808"
                                                                                   : "18446744073709551615";
    // A JSON integer of more than one digit never starts with 0 ("0123" is not JSON, and stays not JSON).
    if (integer && (digits.size() > limit.size() || (digits.size() == limit.size() && digits > limit)) &&
        digits[0] != '0') {
      // Spaced, so that the 0 never joins a token next to it ("44-0444..." must stay two tokens, not JSON).
      out.append(text.substr(copied, i - copied)).append(" 0 ");
      copied = j;
      any = true;
    }
    i = j - 1;
  }
  if (!any) return std::nullopt;
  out.append(text.substr(copied));
  return out;
}

// Parses one JSON line into op with simdjson's DOM parser (which picks the fastest kernel the CPU has at run
// time). Returns the reason when it fails; *not_json tells whether the line is not JSON at all.
// REQUIRES: p[0 .. len + simdjson::SIMDJSON_PADDING) is readable.
std::string parse_op(simdjson::dom::parser& parser, const char* p, size_t len, Op* op, bool* not_json,
                     AtomCaches* atoms) {
  namespace dom = simdjson::dom;
  using Type = dom::element_type;
  *not_json = false;
  dom::element doc;
  simdjson::error_code e = parser.parse(p, len, false).get(doc);
  if (e) {
    // An integer beyond 64 bits is JSON that this reader does not take (simdjson says NUMBER_ERROR): a last line
    // holding one is refused, not skipped as torn. Anything else is not JSON.
    bool big = false;
    if (e == simdjson::NUMBER_ERROR) {
      const std::optional<std::string> replaced = without_big_integers(std::string_view(p, len));
      dom::element ignored;
      big = replaced && !parser.parse(*replaced).get(ignored);
    }
    *not_json = !big;
    return std::string(big ? "an integer beyond 64 bits (" : "not valid JSON (") + simdjson::error_message(e) + ")";
  }
  dom::object obj;
  if (doc.get_object().get(obj)) return "an op must be a JSON object";

  auto must = [](std::string_view name, const char* what) {
    return "field \"" + std::string(name) + "\" must be " + what;
  };
  auto as_int = [](dom::element v, int64_t* out) {
    return v.type() == Type::INT64    ? !v.get_int64().get(*out)
           : v.type() == Type::UINT64 ? !v.get_int64().get(*out)
                                      : false;
  };
  // The known fields; bit i of `given` says kKnown[i] was given. A known field given twice is refused (JSON leaves
  // duplicate names to the reader; taking the first or the last would each hide a malformed line). The required
  // ones come first, so their bits are kIndex .. kF.
  static constexpr std::string_view kKnown[] = {"index", "time",  "process",     "type",  "f",
                                                "key",   "error", "validity_ms", "token", "value"};
  enum : unsigned { kIndex = 1, kTime = 2, kProcess = 4, kType = 8, kF = 16 };
  unsigned given = 0;
  for (dom::key_value_pair kv : obj) {
    const std::string_view name = kv.key;
    for (size_t i = 0; i < std::size(kKnown); ++i) {
      if (name != kKnown[i]) continue;
      if (given & (1u << i)) return "field \"" + std::string(name) + "\" given twice";
      given |= 1u << i;
    }
    const dom::element v = kv.value;
    const Type t = v.type();
    if (name == "index" || name == "time") {
      int64_t x = 0;
      if (!as_int(v, &x)) return must(name, "an integer");
      (name == "index" ? op->index : op->time_ns) = x;
    } else if (name == "process") {
      int64_t x = -1;
      if (t == Type::STRING && std::string_view(v) == "nemesis") {
        op->process = kNemesis;
      } else if (as_int(v, &x) && x >= 0 && x <= std::numeric_limits<Process>::max()) {
        op->process = static_cast<Process>(x);
      } else {
        return must(name, "a non-negative integer or \"nemesis\"");
      }
    } else if (name == "type") {
      const std::optional<OpType> type =
          op_type_from_string(t == Type::STRING ? std::string_view(v) : std::string_view());
      if (!type) return must(name, "one of invoke, ok, fail, info");
      op->type = *type;
    } else if (name == "f") {
      if (t != Type::STRING) return must(name, "a string");
      op->f = atoms->f.get(std::string_view(v), false);
    } else if (name == "key" || name == "error") {
      Atom& out = name == "key" ? op->key : op->error;
      if (t == Type::NULL_VALUE) {
        out.clear();
      } else if (t == Type::STRING) {
        out = (name == "key" ? atoms->key : atoms->error).get(std::string_view(v), false);
      } else {
        return must(name, "a string");
      }
    } else if (name == "token" || name == "validity_ms") {
      OptionalInt& out = name == "token" ? op->token : op->validity_ms;
      int64_t x = 0;
      if (t == Type::NULL_VALUE) {
        out.reset();
      } else if (as_int(v, &x)) {
        if (x == OptionalInt::kAbsent) return "field \"" + std::string(name) + "\" is out of range";
        out = x;
      } else {
        return must(name, "an integer");
      }
    } else if (name == "value") {
      if (t == Type::NULL_VALUE) {
        op->value = nullptr;
      } else {
        // Rare and small (a set element, a nemesis description): through nlohmann, which the checkers use.
        op->value = nlohmann::json::parse(simdjson::minify(v));
      }
    }
    // Other fields are ignored (written by a newer lockcheck).
  }
  if (!(given & kIndex)) return "missing field \"index\"";
  if (!(given & kTime)) return "missing field \"time\"";
  if (!(given & kProcess)) return "missing field \"process\"";
  if (!(given & kType)) return "missing field \"type\"";
  if (!(given & kF)) return "missing field \"f\"";
  return std::string();
}

// Where the bytes come from: a file descriptor or a string.
struct Source {
  int fd = -1;
  const std::string* text = nullptr;
  size_t text_pos = 0;
  // Reads up to n bytes into dst; 0 at the end. Throws HistoryError on a read error.
  size_t read(char* dst, size_t n, const std::string& name) {
    if (text != nullptr) {
      const size_t k = std::min(n, text->size() - text_pos);
      std::memcpy(dst, text->data() + text_pos, k);
      text_pos += k;
      return k;
    }
    for (;;) {
      ssize_t r = ::read(fd, dst, n);
      if (r >= 0) return static_cast<size_t>(r);
      if (errno != EINTR) throw HistoryError(name + ": cannot read: " + std::strerror(errno));
    }
  }
};

// lines: an upper bound on the number of ops (the vector is reserved once: no doubling, no copy).
// fast: the two scanners of LineScanner try each line first; false: every line goes to parse_op (the general
// path alone, for the fuzz target's differential check).
History parse_source(Source src, const std::string& name, size_t lines, std::vector<std::string>* warnings,
                     bool fast = true) {
  History h;
  h.reserve(lines);
  advise_huge_pages(h);  // the biggest array of a check: ~160 MB for a million ops
  PopulateAhead populate;

  simdjson::dom::parser parser;
  AtomCaches atoms;
  OpRules rules;
  // A window of the input, padded for simdjson; complete lines are parsed in place, a partial line is moved to
  // the front before the next read. 256 KiB: read() copies into it and the lines are parsed while it is still in
  // the core's L2 cache (a 1 MiB window cost 3 ms more of the ~60 ms of a contended 10^5-op check, median of 12
  // runs; a 64 KiB one measured the same as 256 KiB). A longer line grows it.
  std::vector<char> buf(size_t{1} << 18);
  size_t begin = 0, end = 0;
  bool eof = false;
  int64_t lineno = 0;
  auto where = [&](int64_t line) { return name + ":" + std::to_string(line) + ": "; };
  // The checks of an op just parsed (the last of h) against the ones before it.
  std::string rule_broken;  // empty unless a rule is broken (one string, not one per op)
  auto accept = [&](const Op& op, int64_t line) {
    const int64_t expected = static_cast<int64_t>(h.size()) - 1;
    if (op.index != expected) {
      throw HistoryError(where(line) + "index " + std::to_string(op.index) + " out of order (expected " +
                         std::to_string(expected) + ")");
    }
    if (!rules.check(op, expected, &rule_broken)) throw HistoryError(where(line) + rule_broken);
  };
  for (;;) {
    // The writer's own lines are scanned up to their newline in one go (most lines of most histories).
    bool not_writers = false;  // this line's op is not in the writer's form: the general path skips that scan
    if (fast && begin < end && buf[begin] == '{') {
      const char* const line = buf.data() + begin;
      const char* nl = nullptr;
      populate.fill(h);
      Op& op = h.emplace_back();
      if (LineScanner(line, end - begin, &atoms).op_to_newline(&op, &nl, &not_writers)) {
        begin += static_cast<size_t>(nl - line) + 1;
        accept(op, ++lineno);
        continue;
      }
      h.pop_back();  // anything else (or a line the window cuts): found and parsed as below
    }
    const char* nl = static_cast<const char*>(std::memchr(buf.data() + begin, '\n', end - begin));
    if (nl == nullptr && !eof) {
      // Need more bytes: compact, grow when one line fills the window, read.
      if (begin > 0) {
        std::memmove(buf.data(), buf.data() + begin, end - begin);
        end -= begin;
        begin = 0;
      }
      if (buf.size() - end < simdjson::SIMDJSON_PADDING + 4096) buf.resize(buf.size() * 2);
      const size_t got = src.read(buf.data() + end, buf.size() - end - simdjson::SIMDJSON_PADDING, name);
      if (got == 0) eof = true;
      end += got;
      continue;
    }
    if (nl == nullptr && begin == end) break;
    const bool has_newline = nl != nullptr;
    const char* line = buf.data() + begin;
    size_t len = has_newline ? static_cast<size_t>(nl - line) : end - begin;
    begin += len + (has_newline ? 1 : 0);
    ++lineno;
    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t')) --len;
    size_t lead = 0;
    while (lead < len && (line[lead] == ' ' || line[lead] == '\t')) ++lead;
    if (lead == len) continue;
    populate.fill(h);
    Op& op = h.emplace_back();  // parsed in place; removed again below when the line is not an op
    // The line and the bytes after it up to the end of buf are readable (at least SIMDJSON_PADDING).
    bool not_json = false;
    std::string why;
    if (!fast || not_writers || !LineScanner(line + lead, len - lead, &atoms).op(&op)) {
      op = Op();
      if (!fast || !LineScanner(line + lead, len - lead, &atoms).op_any_order(&op)) {
        op = Op();
        why = parse_op(parser, line, len, &op, &not_json, &atoms);
      }
    }
    if (!why.empty()) {
      h.pop_back();
      if (!has_newline && not_json) {
        // The last line, cut short: the harness stopped mid-write.
        if (warnings != nullptr) {
          warnings->push_back(where(lineno) + "torn last line (no newline, not valid JSON) skipped: the run " +
                              "stopped while writing it");
        }
        break;
      }
      throw HistoryError(where(lineno) + why);
    }
    accept(op, lineno);
  }
  return h;
}

}  // namespace

bool is_known_client_f(const std::string& f) {
  for (const char* k : kKnownClientF) {
    if (f == k) return true;
  }
  return false;
}

void validate_history(const History& h, const std::string& name) {
  OpRules rules;
  for (size_t i = 0; i < h.size(); ++i) {
    if (h[i].index != static_cast<int64_t>(i)) {
      throw HistoryError(name + ": op " + std::to_string(i) + ": index " + std::to_string(h[i].index) +
                         " out of order (expected " + std::to_string(i) + ")");
    }
    std::string why;
    if (!rules.check(h[i], static_cast<int64_t>(i), &why)) {
      throw HistoryError(name + ": op " + std::to_string(i) + ": " + why);
    }
  }
}

History read_history(const std::string& path, std::vector<std::string>* warnings) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw HistoryError(path + ": cannot open");
  Source src;
  src.fd = fd;
  try {
    // Reserve for the shortest possible op lines (about 50 bytes): the vector is allocated once and never
    // copied, and the pages of the reserve that are not used are never touched (not resident).
    struct stat st {};
    const size_t lines = ::fstat(fd, &st) == 0 ? static_cast<size_t>(st.st_size) / 48 + 16 : 1024;
    History h = parse_source(src, path, lines, warnings);
    ::close(fd);
    return h;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

History parse_history(const std::string& text, const std::string& name, std::vector<std::string>* warnings) {
  Source src;
  src.text = &text;
  return parse_source(src, name, static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1, warnings);
}

History parse_history_general(const std::string& text, const std::string& name, std::vector<std::string>* warnings) {
  Source src;
  src.text = &text;
  return parse_source(src, name, static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1, warnings,
                      false);
}

}  // namespace lockcheck
