#pragma once

namespace lockcheck {
inline constexpr const char* kLockcheckVersion = "0.1.0";
}
