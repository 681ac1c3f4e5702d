#include "core/atom.h"

#include <deque>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <unordered_map>

namespace lockcheck {

namespace {

// Every distinct text, each stored once and never moved (a deque keeps its elements in place) and looked up by
// a view of itself.
struct Pool {
  std::mutex mu;
  std::deque<std::string> texts;
  std::unordered_map<std::string_view, const std::string*> index;
};

Pool& pool() {
  static Pool* p = new Pool();  // never destroyed: Atoms in static objects outlive every destructor order
  return *p;
}

}  // namespace

const std::string* Atom::intern(std::string_view s) {
  if (s.empty()) return &empty_text();
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mu);
  auto it = p.index.find(s);
  if (it != p.index.end()) return it->second;
  const std::string* text = &p.texts.emplace_back(s);
  p.index.emplace(std::string_view(*text), text);
  return text;
}

std::ostream& operator<<(std::ostream& out, const Atom& a) { return out << a.str(); }

void from_json(const nlohmann::json& j, Atom& a) {
  if (!j.is_string()) throw std::invalid_argument("expected a string");
  a = Atom(j.get_ref<const std::string&>());
}

}  // namespace lockcheck
