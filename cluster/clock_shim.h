// The harness side of the clock shim (cluster/clockshim.c): where the LD_PRELOAD library is, and the offset
// file it reads. A node started with LD_PRELOAD=clock_shim_library() and LOCKCHECK_CLOCK_FILE=<file> sees
// CLOCK_REALTIME (clock_gettime, gettimeofday, time) moved by the offset in <file>; write_clock_offset changes
// it at once, for every thread of every process that maps the file.
//
// File format: 8 bytes, a signed 64-bit count of nanoseconds in native byte order, at offset 0.
// Atomicity: readers (the shim) and writer (write_clock_offset) both go through a MAP_SHARED mapping of the
// same page-cache page and use one aligned 8-byte load / store (GCC __atomic builtins), which x86_64 and
// aarch64 perform as a single access: a reader sees the old or the new offset, never a torn mix. A pwrite
// would not promise that: nothing guarantees that the kernel's copy into the page cache is one 8-byte store
// (on x86_64 it may be `rep movsb`, which can store byte by byte).
//
// Thread-safety: the functions keep no state; concurrent writers of one file race (the last store wins).
// Errors: ClockShimError naming the path and the OS error.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>

namespace lockcheck {

class ClockShimError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Path of the shim shared library: $LOCKCHECK_CLOCK_SHIM if set and non-empty, else the library built with
// this binary (CMake target lockcheck_clockshim). Does not check that the file exists.
std::string clock_shim_library();

// Name of the environment variable through which the shim finds its offset file.
constexpr const char* kClockFileEnv = "LOCKCHECK_CLOCK_FILE";

// Creates path with offset 0 (8 zero bytes), or resets an existing one to 0 without truncating it (a process
// that has the file mapped must never see it shorter than 8 bytes: that would be SIGBUS).
void create_clock_file(const std::string& path);

// Stores offset. REQUIRES: path was made by create_clock_file (exists, at least 8 bytes).
void write_clock_offset(const std::string& path, std::chrono::nanoseconds offset);

// The offset stored in path. REQUIRES: as for write_clock_offset.
std::chrono::nanoseconds read_clock_offset(const std::string& path);

}  // namespace lockcheck
