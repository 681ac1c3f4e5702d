// A JSON value read as an integer of type T, only when it is an integer that fits T. nlohmann's get<T>() does not
// check: it truncates a float (1.5 becomes 1), converts one outside T's range with undefined behaviour (-1e20,
// 3.9e19), keeps integers above INT64_MAX as unsigned (get<int64_t>() wraps them to negative numbers) and
// narrows a wider integer in silence. Every reader of untrusted JSON (config, schedules, hosts files, external
// clients' lines, a night's summary, a shard's jobs) takes its integers through this, so that such a value is
// refused with its field named, never read as another number (found by fuzzing).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace lockcheck {

template <class T>
std::optional<T> json_integer(const nlohmann::json& v) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>, "an integer type");
  if (!v.is_number_integer()) return std::nullopt;  // also refuses floats, strings, booleans, null
  if (v.is_number_unsigned()) {
    const uint64_t x = v.get<uint64_t>();
    if (x > static_cast<uint64_t>(std::numeric_limits<T>::max())) return std::nullopt;
    return static_cast<T>(x);
  }
  const int64_t x = v.get<int64_t>();
  if constexpr (std::is_unsigned_v<T>) {
    if (x < 0 || static_cast<uint64_t>(x) > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
      return std::nullopt;
    }
  } else {
    if (x < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        x > static_cast<int64_t>(std::numeric_limits<T>::max())) {
      return std::nullopt;
    }
  }
  return static_cast<T>(x);
}

}  // namespace lockcheck
