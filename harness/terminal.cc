#include "harness/terminal.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace lockcheck {

namespace {
std::atomic<bool> verdict_colour{false};
}  // namespace

bool colour_wanted(int fd) {
  if (const char* no = std::getenv("NO_COLOR"); no != nullptr && *no != '\0') return false;
  if (const char* term = std::getenv("TERM"); term != nullptr && std::strcmp(term, "dumb") == 0) return false;
  return ::isatty(fd) == 1;
}

void set_verdict_colour(bool on) { verdict_colour = on; }

std::string coloured_verdict(const std::string& verdict) {
  if (!verdict_colour) return verdict;
  const char* code = verdict == "valid" ? "32" : verdict == "invalid" ? "31" : "33";
  return std::string("\033[1;") + code + "m" + verdict + "\033[0m";
}

}  // namespace lockcheck
