#include "report/html.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace lockcheck {
namespace report {

std::string escape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  // The text between two special characters is appended in one piece, not a character at a time.
  size_t from = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char* entity;
    switch (s[i]) {
      case '&': entity = "&amp;"; break;
      case '<': entity = "&lt;"; break;
      case '>': entity = "&gt;"; break;
      case '"': entity = "&quot;"; break;
      case '\'': entity = "&#39;"; break;
      default: continue;
    }
    out.append(s, from, i - from);
    out += entity;
    from = i + 1;
  }
  out.append(s, from, std::string::npos);
  return out;
}

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "0";
  // std::to_chars gives printf's "%.*f" exactly (correctly rounded), several times faster: a long run's report
  // prints some ten thousand coordinates.
  char buf[400];  // room for any double in fixed notation with a few decimals
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, std::max(0, decimals));
  std::string s = r.ec == std::errc() ? std::string(buf, r.ptr) : std::to_string(v);
  if (s == "-0" || s.rfind("-0.", 0) == 0) {
    // Avoid "-0.000" for tiny negatives.
    bool all_zero = s.find_first_not_of("-0.") == std::string::npos;
    if (all_zero) s.erase(0, 1);
  }
  return s;
}

std::string seconds_label(int64_t ns) { return fixed(static_cast<double>(ns) / 1e9, 3) + " s"; }

std::string duration_label(int64_t ns) {
  double a = std::fabs(static_cast<double>(ns));
  if (a >= 10e9) return fixed(static_cast<double>(ns) / 1e9, 1) + " s";
  if (a >= 1e9) return fixed(static_cast<double>(ns) / 1e9, 2) + " s";
  if (a >= 10e6) return fixed(static_cast<double>(ns) / 1e6, 0) + " ms";
  if (a >= 1e6) return fixed(static_cast<double>(ns) / 1e6, 1) + " ms";
  return fixed(static_cast<double>(ns) / 1e3, 0) + " \xC2\xB5s";
}

std::string ms_coord(int64_t ns) {
  std::string s = fixed(static_cast<double>(ns) / 1e6, 3);
  // Trim trailing zeros to keep large reports small.
  auto dot = s.find('.');
  if (dot != std::string::npos) {
    size_t end = s.find_last_not_of('0');
    if (end == dot) end = dot - 1;
    s.erase(end + 1);
  }
  return s;
}

bool is_safe_relative_link(const std::string& s) {
  if (s.empty() || s[0] == '/' || s[0] == '\\') return false;
  if (s.find(':') != std::string::npos) return false;  // any scheme (javascript:, file:, http:)
  if (s.find("..") != std::string::npos) return false;
  for (unsigned char c : s) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

std::string url_path_encode(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
        c == '.' || c == '~' || c == '/') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

std::string shell_quote(const std::string& arg) {
  if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                            "-_./=:,+@%") == std::string::npos) {
    return arg;
  }
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  out += "'";
  return out;
}

}  // namespace report
}  // namespace lockcheck
