// An optional 64-bit integer in 8 bytes (std::optional<int64_t> takes 16): the op's token and validity_ms.
// INT64_MIN stands for "absent"; no history holds it (the readers reject it as out of range). Reads like the
// std::optional<int64_t> it replaces (has_value, *, value_or, comparison with a number or std::nullopt) and
// converts to and from one.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

namespace lockcheck {

class OptionalInt {
 public:
  static constexpr int64_t kAbsent = std::numeric_limits<int64_t>::min();

  constexpr OptionalInt() noexcept = default;
  constexpr OptionalInt(std::nullopt_t) noexcept {}                // NOLINT: as std::optional
  constexpr OptionalInt(int64_t v) noexcept : v_(v) {}             // NOLINT. REQUIRES: v != kAbsent
  constexpr OptionalInt(const std::optional<int64_t>& o) noexcept  // NOLINT
      : v_(o ? *o : kAbsent) {}

  constexpr bool has_value() const noexcept { return v_ != kAbsent; }
  constexpr explicit operator bool() const noexcept { return has_value(); }
  constexpr int64_t operator*() const noexcept { return v_; }
  int64_t value() const {
    if (!has_value()) throw std::bad_optional_access();
    return v_;
  }
  constexpr int64_t value_or(int64_t d) const noexcept { return has_value() ? v_ : d; }
  void reset() noexcept { v_ = kAbsent; }
  operator std::optional<int64_t>() const noexcept {  // NOLINT
    return has_value() ? std::optional<int64_t>(v_) : std::nullopt;
  }

  friend constexpr bool operator==(OptionalInt a, OptionalInt b) noexcept { return a.v_ == b.v_; }
  friend constexpr bool operator!=(OptionalInt a, OptionalInt b) noexcept { return a.v_ != b.v_; }
  friend constexpr bool operator==(OptionalInt a, int64_t b) noexcept { return a.has_value() && a.v_ == b; }
  friend constexpr bool operator==(int64_t a, OptionalInt b) noexcept { return b == a; }
  friend constexpr bool operator!=(OptionalInt a, int64_t b) noexcept { return !(a == b); }
  friend constexpr bool operator!=(int64_t a, OptionalInt b) noexcept { return !(b == a); }
  friend constexpr bool operator==(OptionalInt a, std::nullopt_t) noexcept { return !a.has_value(); }
  friend constexpr bool operator==(std::nullopt_t, OptionalInt a) noexcept { return !a.has_value(); }
  friend constexpr bool operator!=(OptionalInt a, std::nullopt_t) noexcept { return a.has_value(); }
  friend constexpr bool operator!=(std::nullopt_t, OptionalInt a) noexcept { return a.has_value(); }
  friend bool operator==(OptionalInt a, const std::optional<int64_t>& b) noexcept { return a == OptionalInt(b); }
  friend bool operator==(const std::optional<int64_t>& a, OptionalInt b) noexcept { return OptionalInt(a) == b; }

 private:
  int64_t v_ = kAbsent;
};

std::ostream& operator<<(std::ostream& out, OptionalInt v);  // the number, or "nullopt"

// A JSON number, or null when absent.
inline void to_json(nlohmann::json& j, OptionalInt v) {
  if (v) {
    j = *v;
  } else {
    j = nullptr;
  }
}

}  // namespace lockcheck
