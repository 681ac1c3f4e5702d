// One registry shape for the parts a test names: lock algorithms, workloads, nemeses and checkers. A registry
// is an ordered list of entries (Entry has a `const char* name`), made once, looked up by name.
//
// Each part's entry lives in the part's own file: a function returning its Entry (name, one-line description,
// factory, ...). The folder's registry.cc lists the entries, one line each:
//
//     LOCKCHECK_ENTRY(LockAlgorithm, single_lock),
//
// which declares the function and calls it, so adding a part is one new file plus that one line: no header,
// no CMake edit (each folder's sources are globbed), no test list (the contract tests iterate the registries).
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "core/assert.h"

namespace lockcheck {

template <typename Entry>
class Registry {
 public:
  // REQUIRES: every entry has a name, no two the same.
  Registry(std::initializer_list<Entry> entries) : entries_(entries) {
    for (size_t i = 0; i < entries_.size(); ++i) {
      LOCKCHECK_ASSERT(entries_[i].name != nullptr && *entries_[i].name, "a registry entry without a name");
      for (size_t j = 0; j < i; ++j) {
        LOCKCHECK_ASSERT(std::string(entries_[i].name) != entries_[j].name,
                         std::string("two registry entries named ") + entries_[i].name);
      }
    }
  }
  // Appends more entries (e.g. one per shipped library adapter). REQUIRES: names not taken.
  void add(const Entry& e) {
    LOCKCHECK_ASSERT(find(e.name) == nullptr, std::string("two registry entries named ") + e.name);
    entries_.push_back(e);
  }

  const std::vector<Entry>& entries() const { return entries_; }
  typename std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  typename std::vector<Entry>::const_iterator end() const { return entries_.end(); }
  size_t size() const { return entries_.size(); }

  // The entry called name; nullptr when there is none.
  const Entry* find(const std::string& name) const {
    for (const auto& e : entries_) {
      if (name == e.name) return &e;
    }
    return nullptr;
  }
  // "a, b, c": the names, for messages.
  std::string names() const {
    std::string s;
    for (const auto& e : entries_) s += (s.empty() ? "" : ", ") + std::string(e.name);
    return s;
  }

 private:
  std::vector<Entry> entries_;
};

}  // namespace lockcheck

// Declares `Entry fn()` (defined in the part's own file) and calls it: one registry line per part.
#define LOCKCHECK_ENTRY(Entry, fn) \
  [] {                             \
    extern Entry fn();             \
    return fn();                   \
  }()
