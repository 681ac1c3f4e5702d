// Reading algorithm-specific options from LockOptions.extra (a JSON object; absent keys take the default).
// A value of the wrong type or out of range is a std::invalid_argument naming the option, thrown from the
// lock client's constructor, so a typo never silently runs the default.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "locks/lock_client.h"

namespace lockcheck {

// extra[name] as T, or def when absent or null. Throws std::invalid_argument on a wrong type.
template <typename T>
T extra_value(const LockOptions& o, const char* name, T def) {
  if (!o.extra.is_object()) return def;
  auto it = o.extra.find(name);
  if (it == o.extra.end() || it->is_null()) return def;
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument(std::string("lock option \"") + name + "\": wrong type (" + it->dump() + ")");
  }
}

// extra_value for integers with an inclusive range check.
inline int64_t extra_int(const LockOptions& o, const char* name, int64_t def, int64_t lo, int64_t hi) {
  auto it = o.extra.is_object() ? o.extra.find(name) : o.extra.end();
  if (it != o.extra.end() && !it->is_null() && !it->is_number_integer()) {
    throw std::invalid_argument(std::string("lock option \"") + name + "\": not an integer (" + it->dump() + ")");
  }
  const int64_t v = extra_value<int64_t>(o, name, def);
  if (v < lo || v > hi) {
    throw std::invalid_argument(std::string("lock option \"") + name + "\": " + std::to_string(v) + " is not between " +
                                std::to_string(lo) + " and " + std::to_string(hi));
  }
  return v;
}

}  // namespace lockcheck
