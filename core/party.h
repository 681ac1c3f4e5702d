// A party of the network, by the name the nemesis and the backends use for it: a data node "n1" (n1..nN), a
// Sentinel "s1" (replicated topology) or a client slot "c0" (client process p runs in slot p % concurrency, so
// a retired process's replacement sees the same network). One parser for every backend and nemesis.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace lockcheck {

struct Party {
  enum class Kind { kNode, kSentinel, kClient };
  Kind kind = Kind::kNode;
  // 0-based: "n1" is node 0, "s2" Sentinel 1, "c3" client slot 3.
  size_t index = 0;

  static Party node(size_t i) { return {Kind::kNode, i}; }
  static Party sentinel(size_t i) { return {Kind::kSentinel, i}; }
  static Party client(size_t slot) { return {Kind::kClient, slot}; }

  // "n1", "s2", "c3".
  std::string name() const {
    switch (kind) {
      case Kind::kNode: return "n" + std::to_string(index + 1);
      case Kind::kSentinel: return "s" + std::to_string(index + 1);
      case Kind::kClient: return "c" + std::to_string(index);
    }
    return "?";
  }
  bool is_node() const { return kind == Kind::kNode; }
  bool is_sentinel() const { return kind == Kind::kSentinel; }
  bool is_client() const { return kind == Kind::kClient; }
  bool operator==(const Party& o) const { return kind == o.kind && index == o.index; }
  bool operator!=(const Party& o) const { return !(*this == o); }

  // Parses a party name; nullopt when it is not one ("x", "n0", "c", "c-1", "n1a", more than 6 digits).
  static std::optional<Party> parse(const std::string& s) {
    if (s.size() < 2 || s.size() > 7) return std::nullopt;
    size_t v = 0;
    for (size_t i = 1; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return std::nullopt;
      v = v * 10 + static_cast<size_t>(s[i] - '0');
    }
    switch (s[0]) {
      case 'n':
        if (v == 0) return std::nullopt;
        return node(v - 1);
      case 's':
        if (v == 0) return std::nullopt;
        return sentinel(v - 1);
      case 'c': return client(v);
      default: return std::nullopt;
    }
  }
};

// The client slot a process runs in, as a party: client process p in slot p % concurrency.
inline Party client_party(long long process, int concurrency) {
  return Party::client(static_cast<size_t>(concurrency > 0 ? process % concurrency : process));
}

}  // namespace lockcheck
