// Small helpers for writing HTML and SVG text: escaping and number formatting. Every string that comes from a
// history, a config or a results file goes through escape() before it reaches the page.
#pragma once

#include <cstdint>
#include <string>

namespace lockcheck {
namespace report {

// Escapes & < > " ' so that the result is safe both as element text and inside a quoted attribute value.
std::string escape(const std::string& s);

// Fixed-point number with `decimals` digits after the point, locale-independent ("12.345").
std::string fixed(double v, int decimals);

// A time in ns since the run started, as seconds with ms precision: "12.345 s".
std::string seconds_label(int64_t ns);

// A duration in ns, in the unit that reads best: "412 ms", "1.20 s", "830 µs".
std::string duration_label(int64_t ns);

// ns to ms as a compact decimal for SVG coordinates and data- attributes ("12345.678").
std::string ms_coord(int64_t ns);

// True when s may be used as a relative link: no scheme, not absolute, no "..", printable ASCII only.
bool is_safe_relative_link(const std::string& s);

// Percent-encodes characters that are not unreserved in a URL path segment (keeps '/').
std::string url_path_encode(const std::string& s);

// Quotes one argument for a POSIX shell, for display only ('a b' -> 'a b', abc -> abc).
std::string shell_quote(const std::string& arg);

}  // namespace report
}  // namespace lockcheck
