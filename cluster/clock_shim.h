// The harness side of the clock shim (cluster/clockshim.c): where the LD_PRELOAD library is, and the clock file
// it reads. A node started with LD_PRELOAD=clock_shim_library() and LOCKCHECK_CLOCK_FILE=<file> sees
// CLOCK_REALTIME (clock_gettime, gettimeofday, time) as the setting in <file> says: moved by an offset, and
// running at 1 + rate / 10^9 of the real rate from an anchor on. write_clock changes it at once, for every
// thread of every process that maps the file.
//
// File format (clockshim.c's header has the reader's side): 56 bytes in use, native byte order. Word 0 is a
// generation g; slot g % 2 (words 1-3 or 4-6: offset ns, rate ppb, anchor ns) is the setting in force. The writer
// fills the other slot and then stores g + 1, so a reader never sees half a setting (it re-reads when g moved
// while it read). The local writer goes through a MAP_SHARED mapping with aligned 8-byte atomic stores; the
// remote backends write the same bytes with two `dd` calls (clock_slot_bytes, then the generation), which is
// safe for the reader too (see clockshim.c).
//
// Thread-safety: the functions keep no state; concurrent writers of one file race (use one writer per file).
// Errors: ClockShimError naming the path and the OS error.
#pragma once

#include <chrono>
#include <cstdint>
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

// Name of the environment variable through which the shim finds its clock file.
constexpr const char* kClockFileEnv = "LOCKCHECK_CLOCK_FILE";

// What a shimmed process's wall clock is: at real wall-clock time t (ns) it reads t + shift_at(t).
struct ClockSetting {
  int64_t offset_ns = 0;  // the shift at anchor_ns
  int64_t rate_ppb = 0;   // how much faster (+) or slower (-) than the real clock, in parts per billion
  int64_t anchor_ns = 0;  // the real wall-clock time (ns since the epoch) the rate counts from
  // offset + (t - anchor) * rate / 10^9, computed in 128 bits as the shim does.
  int64_t shift_at(int64_t real_ns) const;
  bool operator==(const ClockSetting& o) const {
    return offset_ns == o.offset_ns && rate_ppb == o.rate_ppb && anchor_ns == o.anchor_ns;
  }
};

// The setting that runs at rate_ppb from real time now_ns on, continuing `current` without a jump (its shift at
// now_ns becomes the new offset). Pure.
ClockSetting clock_with_rate(const ClockSetting& current, int64_t now_ns, int64_t rate_ppb);

// The real wall clock of this process, ns since the epoch (what the writer anchors a rate at).
int64_t real_wall_ns();

// Layout, for writers that cannot map the file (the remote backends write it with dd).
constexpr size_t kClockFileBytes = 64;   // what create_clock_file makes (the shim needs the first 56)
constexpr size_t kClockSlotBytes = 24;   // one setting: offset, rate, anchor
// Byte offset of the slot that generation g puts in force.
constexpr size_t clock_slot_offset(uint64_t generation) { return 8 + kClockSlotBytes * (generation & 1); }
// The 24 bytes of a slot holding s, and the 8 bytes of generation g, in native byte order.
std::string clock_slot_bytes(const ClockSetting& s);
std::string clock_generation_bytes(uint64_t generation);

// Creates path with the real clock in force (generation 0, both slots zero), or resets an existing file to
// that without truncating it (a process that has the file mapped must never see it shorter: that would be
// SIGBUS).
void create_clock_file(const std::string& path);

// Puts s in force. REQUIRES: path was made by create_clock_file (exists, at least 56 bytes).
void write_clock(const std::string& path, const ClockSetting& s);
// The setting in force. REQUIRES: as for write_clock.
ClockSetting read_clock(const std::string& path);

// A jump: the clock becomes the real one plus offset, at the real rate (0 resets it). REQUIRES: as above.
void write_clock_offset(const std::string& path, std::chrono::nanoseconds offset);
// The shift the clock has now (offset and the drift accumulated since the anchor). REQUIRES: as above.
std::chrono::nanoseconds read_clock_offset(const std::string& path);
// The clock runs at rate_ppb from now on, without a jump. REQUIRES: as above.
void write_clock_rate(const std::string& path, int64_t rate_ppb);

}  // namespace lockcheck
