#include "cluster/clock_shim.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#ifndef LOCKCHECK_CLOCK_SHIM_PATH
#error "LOCKCHECK_CLOCK_SHIM_PATH must name the built lockcheck_clockshim library (set by CMakeLists.txt)"
#endif

namespace lockcheck {
namespace {

constexpr size_t kWordBytes = sizeof(int64_t);

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

// The first 8 bytes of an open offset file, mapped MAP_SHARED; unmapped on scope exit.
class MappedWord {
 public:
  MappedWord(const Fd& fd, const std::string& path, int prot) {
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) fail("fstat", path, errno);
    if (st.st_size < static_cast<off_t>(kWordBytes)) {
      throw ClockShimError("clock file " + path + ": shorter than 8 bytes (not made by create_clock_file?)");
    }
    void* p = ::mmap(nullptr, kWordBytes, prot, MAP_SHARED, fd.get(), 0);
    if (p == MAP_FAILED) fail("mmap", path, errno);
    word_ = static_cast<int64_t*>(p);
  }
  ~MappedWord() { ::munmap(word_, kWordBytes); }
  MappedWord(const MappedWord&) = delete;
  MappedWord& operator=(const MappedWord&) = delete;

  // One aligned 8-byte access each (the mapping is page-aligned); see the header for why this matters.
  void store(int64_t v) { __atomic_store_n(word_, v, __ATOMIC_RELEASE); }
  int64_t load() const { return __atomic_load_n(word_, __ATOMIC_ACQUIRE); }

 private:
  int64_t* word_ = nullptr;
};

}  // namespace

std::string clock_shim_library() {
  const char* env = std::getenv("LOCKCHECK_CLOCK_SHIM");
  if (env != nullptr && env[0] != '\0') return env;
  return LOCKCHECK_CLOCK_SHIM_PATH;
}

void create_clock_file(const std::string& path) {
  Fd fd(path, O_RDWR | O_CREAT, 0644);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) fail("fstat", path, errno);
  if (st.st_size < static_cast<off_t>(kWordBytes)) {
    // New (or short) file: give it its 8 bytes first, so that mapping it is valid.
    if (::ftruncate(fd.get(), static_cast<off_t>(kWordBytes)) != 0) fail("ftruncate", path, errno);
  }
  MappedWord(fd, path, PROT_READ | PROT_WRITE).store(0);
}

void write_clock_offset(const std::string& path, std::chrono::nanoseconds offset) {
  Fd fd(path, O_RDWR);
  MappedWord(fd, path, PROT_READ | PROT_WRITE).store(static_cast<int64_t>(offset.count()));
}

std::chrono::nanoseconds read_clock_offset(const std::string& path) {
  Fd fd(path, O_RDONLY);
  return std::chrono::nanoseconds(MappedWord(fd, path, PROT_READ).load());
}

}  // namespace lockcheck
