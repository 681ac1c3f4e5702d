#include "cluster/clock_shim.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>

#ifndef LOCKCHECK_CLOCK_SHIM_PATH
#error "LOCKCHECK_CLOCK_SHIM_PATH must name the built lockcheck_clockshim library (set by CMakeLists.txt)"
#endif

namespace lockcheck {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw ClockShimError("clock file " + path + ": " + what + ": " + std::strerror(err));
}

// An open descriptor, closed on scope exit.
class Fd {
 public:
  Fd(const std::string& path, int flags, mode_t mode = 0) : fd_(::open(path.c_str(), flags | O_CLOEXEC, mode)) {
    if (fd_ < 0) fail("open", path, errno);
  }
  ~Fd() { ::close(fd_); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// The first kClockFileBytes of an open clock file, mapped MAP_SHARED; unmapped on scope exit.
class MappedPage {
 public:
  MappedPage(const Fd& fd, const std::string& path, int prot) {
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) fail("fstat", path, errno);
    if (st.st_size < static_cast<off_t>(kClockFileBytes)) {
      throw ClockShimError("clock file " + path + ": shorter than " + std::to_string(kClockFileBytes) +
                           " bytes (not made by create_clock_file?)");
    }
    void* p = ::mmap(nullptr, kClockFileBytes, prot, MAP_SHARED, fd.get(), 0);
    if (p == MAP_FAILED) fail("mmap", path, errno);
    words_ = static_cast<int64_t*>(p);
  }
  ~MappedPage() { ::munmap(words_, kClockFileBytes); }
  MappedPage(const MappedPage&) = delete;
  MappedPage& operator=(const MappedPage&) = delete;

  // The double-buffered publication of clockshim.c: fill the slot not in force, then move the generation.
  // One aligned 8-byte access each (the mapping is page-aligned): a reader never sees a torn word.
  void store(const ClockSetting& s) {
    const uint64_t g = generation();
    int64_t* slot = words_ + clock_slot_offset(g + 1) / 8;
    __atomic_store_n(&slot[0], s.offset_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&slot[1], s.rate_ppb, __ATOMIC_RELAXED);
    __atomic_store_n(&slot[2], s.anchor_ns, __ATOMIC_RELAXED);
    __atomic_store_n(reinterpret_cast<uint64_t*>(words_), g + 1, __ATOMIC_RELEASE);
  }
  ClockSetting load() const {
    const uint64_t g = generation();
    const int64_t* slot = words_ + clock_slot_offset(g) / 8;
    return {__atomic_load_n(&slot[0], __ATOMIC_RELAXED), __atomic_load_n(&slot[1], __ATOMIC_RELAXED),
            __atomic_load_n(&slot[2], __ATOMIC_RELAXED)};
  }
 private:
  uint64_t generation() const { return __atomic_load_n(reinterpret_cast<const uint64_t*>(words_), __ATOMIC_ACQUIRE); }
  int64_t* words_ = nullptr;
};

}  // namespace

std::string clock_shim_library() {
  const char* env = std::getenv("LOCKCHECK_CLOCK_SHIM");
  if (env != nullptr && env[0] != '\0') return env;
  return LOCKCHECK_CLOCK_SHIM_PATH;
}

int64_t ClockSetting::shift_at(int64_t real_ns) const {
  if (rate_ppb == 0) return offset_ns;
  return offset_ns + static_cast<int64_t>(static_cast<__int128>(real_ns - anchor_ns) * rate_ppb / 1000000000);
}

ClockSetting clock_with_rate(const ClockSetting& current, int64_t now_ns, int64_t rate_ppb) {
  return {current.shift_at(now_ns), rate_ppb, now_ns};
}

int64_t real_wall_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string clock_slot_bytes(const ClockSetting& s) {
  std::string b(kClockSlotBytes, '\0');
  std::memcpy(&b[0], &s.offset_ns, 8);
  std::memcpy(&b[8], &s.rate_ppb, 8);
  std::memcpy(&b[16], &s.anchor_ns, 8);
  return b;
}

std::string clock_generation_bytes(uint64_t generation) {
  std::string b(8, '\0');
  std::memcpy(&b[0], &generation, 8);
  return b;
}

void create_clock_file(const std::string& path) {
  Fd fd(path, O_RDWR | O_CREAT, 0644);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) fail("fstat", path, errno);
  if (st.st_size < static_cast<off_t>(kClockFileBytes)) {
    // New (or short) file: its bytes are zero, which is generation 0 with the real clock in slot 0 (what the
    // remote backends assume of a file they made: they count generations from 0).
    if (::ftruncate(fd.get(), 0) != 0 || ::ftruncate(fd.get(), static_cast<off_t>(kClockFileBytes)) != 0) {
      fail("ftruncate", path, errno);
    }
    return;
  }
  // An existing file may be mapped by a process: the real clock is published like any setting, never zeroed
  // under a reader.
  MappedPage(fd, path, PROT_READ | PROT_WRITE).store(ClockSetting{});
}

void write_clock(const std::string& path, const ClockSetting& s) {
  Fd fd(path, O_RDWR);
  MappedPage(fd, path, PROT_READ | PROT_WRITE).store(s);
}

ClockSetting read_clock(const std::string& path) {
  Fd fd(path, O_RDONLY);
  return MappedPage(fd, path, PROT_READ).load();
}

void write_clock_offset(const std::string& path, std::chrono::nanoseconds offset) {
  write_clock(path, ClockSetting{static_cast<int64_t>(offset.count()), 0, 0});
}

std::chrono::nanoseconds read_clock_offset(const std::string& path) {
  return std::chrono::nanoseconds(read_clock(path).shift_at(real_wall_ns()));
}

void write_clock_rate(const std::string& path, int64_t rate_ppb) {
  Fd fd(path, O_RDWR);
  MappedPage page(fd, path, PROT_READ | PROT_WRITE);
  page.store(clock_with_rate(page.load(), real_wall_ns(), rate_ppb));
}

}  // namespace lockcheck
