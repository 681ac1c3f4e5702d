// Colour on the console: the verdict in colour when standard output is a terminal, never when NO_COLOR is set
// (https://no-color.org: present and not empty) or TERM is "dumb", never into a pipe or a file.
#pragma once

#include <string>

namespace lockcheck {

// Whether text written to fd may carry colour (see above).
bool colour_wanted(int fd);

// Turns the verdict's colour on or off for this process (off until main() turns it on).
void set_verdict_colour(bool on);

// "valid" in green, "invalid" in red, anything else ("unknown") in yellow, when the colour is on; else verdict.
std::string coloured_verdict(const std::string& verdict);

}  // namespace lockcheck
