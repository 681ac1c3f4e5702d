// Interned strings for the fields of an op that take few distinct values (f, key, error): the process keeps one
// copy of each distinct text, so an Atom is one pointer, a copy costs nothing, and two Atoms are equal exactly
// when they point to the same text. A million-op history holds a handful of texts instead of three strings per op.
//
// An Atom reads like a const std::string (it converts to one, and compares, concatenates and prints like one);
// assigning a string to it interns that string. The pool only grows: it keeps every distinct text interned
// since the process started (the f names, the lock keys and the error texts of the histories it recorded or
// read, which are few). Thread-safe: interning takes a lock, reading an Atom does not.
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lockcheck {

class Atom {
 public:
  static constexpr size_t npos = std::string::npos;

  Atom() noexcept : s_(&empty_text()) {}
  Atom(const std::string& s) : s_(intern(s)) {}  // NOLINT: implicit, as the std::string it replaces
  Atom(const char* s) : s_(intern(s)) {}         // NOLINT
  explicit Atom(std::string_view s) : s_(intern(s)) {}

  const std::string& str() const noexcept { return *s_; }
  operator const std::string&() const noexcept { return *s_; }  // NOLINT
  const char* c_str() const noexcept { return s_->c_str(); }
  const char* data() const noexcept { return s_->data(); }
  bool empty() const noexcept { return s_->empty(); }
  size_t size() const noexcept { return s_->size(); }
  size_t length() const noexcept { return s_->size(); }
  void clear() noexcept { s_ = &empty_text(); }

  size_t find(const std::string& s, size_t pos = 0) const noexcept { return s_->find(s, pos); }
  size_t find(const char* s, size_t pos = 0) const { return s_->find(s, pos); }
  size_t find(char c, size_t pos = 0) const noexcept { return s_->find(c, pos); }
  size_t rfind(const std::string& s, size_t pos = npos) const noexcept { return s_->rfind(s, pos); }
  size_t rfind(const char* s, size_t pos = npos) const { return s_->rfind(s, pos); }
  size_t rfind(char c, size_t pos = npos) const noexcept { return s_->rfind(c, pos); }
  std::string substr(size_t pos = 0, size_t n = npos) const { return s_->substr(pos, n); }
  int compare(const std::string& s) const noexcept { return s_->compare(s); }

  // The address of the one copy of the text: equal Atoms, equal ids (for hashing).
  const void* id() const noexcept { return s_; }

  friend bool operator==(const Atom& a, const Atom& b) noexcept { return a.s_ == b.s_; }
  friend bool operator!=(const Atom& a, const Atom& b) noexcept { return a.s_ != b.s_; }
  friend bool operator==(const Atom& a, const std::string& b) noexcept { return *a.s_ == b; }
  friend bool operator==(const std::string& a, const Atom& b) noexcept { return a == *b.s_; }
  friend bool operator!=(const Atom& a, const std::string& b) noexcept { return *a.s_ != b; }
  friend bool operator!=(const std::string& a, const Atom& b) noexcept { return a != *b.s_; }
  friend bool operator==(const Atom& a, const char* b) { return *a.s_ == b; }
  friend bool operator==(const char* a, const Atom& b) { return a == *b.s_; }
  friend bool operator!=(const Atom& a, const char* b) { return *a.s_ != b; }
  friend bool operator!=(const char* a, const Atom& b) { return a != *b.s_; }
  // Ordered by text, as the strings are.
  friend bool operator<(const Atom& a, const Atom& b) noexcept { return *a.s_ < *b.s_; }
  friend bool operator>(const Atom& a, const Atom& b) noexcept { return *a.s_ > *b.s_; }
  friend bool operator<=(const Atom& a, const Atom& b) noexcept { return *a.s_ <= *b.s_; }
  friend bool operator>=(const Atom& a, const Atom& b) noexcept { return *a.s_ >= *b.s_; }
  friend bool operator<(const Atom& a, const std::string& b) noexcept { return *a.s_ < b; }
  friend bool operator<(const std::string& a, const Atom& b) noexcept { return a < *b.s_; }

  friend std::string operator+(const Atom& a, const Atom& b) { return *a.s_ + *b.s_; }
  friend std::string operator+(const Atom& a, const std::string& b) { return *a.s_ + b; }
  friend std::string operator+(const std::string& a, const Atom& b) { return a + *b.s_; }
  friend std::string operator+(std::string&& a, const Atom& b) { return std::move(a.append(*b.s_)); }
  friend std::string operator+(const Atom& a, const char* b) { return *a.s_ + b; }
  friend std::string operator+(const char* a, const Atom& b) { return a + *b.s_; }
  friend std::string operator+(const Atom& a, char b) { return *a.s_ + b; }
  friend std::string operator+(char a, const Atom& b) { return a + *b.s_; }

 private:
  static const std::string& empty_text() noexcept {
    static const std::string empty;
    return empty;
  }
  static const std::string* intern(std::string_view s);

  const std::string* s_;
};

std::ostream& operator<<(std::ostream& out, const Atom& a);

// As a JSON string.
inline void to_json(nlohmann::json& j, const Atom& a) { j = a.str(); }
void from_json(const nlohmann::json& j, Atom& a);

struct AtomHash {
  size_t operator()(const Atom& a) const noexcept { return std::hash<const void*>()(a.id()); }
};

}  // namespace lockcheck

namespace std {
template <>
struct hash<lockcheck::Atom> : lockcheck::AtomHash {};
}  // namespace std
