#include "core/huge_pages.h"

#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace lockcheck {

namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

// Whether the switch env (LOCKCHECK_HUGE_PAGES, LOCKCHECK_POPULATE) leaves its part on: anything but "0".
bool switched_on(const char* env) {
  const char* v = std::getenv(env);
  return v == nullptr || std::strcmp(v, "0") != 0;
}

bool huge_pages_wanted() {
  static const bool wanted = switched_on("LOCKCHECK_HUGE_PAGES");
  return wanted;
}

bool populate_wanted() {
  static const bool wanted = switched_on("LOCKCHECK_POPULATE");
  return wanted;
}

}  // namespace

void populate_pages(const void* p, size_t bytes) {
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; older headers lack the name
#endif
  static std::atomic<bool> works{true};  // EINVAL once (an older kernel): not tried again
  if (p == nullptr || !works || !populate_wanted()) return;
  constexpr uintptr_t kPage = 4096;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kPage - 1) & ~(kPage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kPage - 1);
  if (end <= begin) return;
  if (::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE) != 0 && errno == EINVAL) {
    works = false;
  }
}

void advise_huge_pages(const void* p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  if (p == nullptr || bytes < 2 * kHugePage || !huge_pages_wanted()) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHugePage - 1);
  if (end <= begin) return;
  // Advice: EINVAL (no THP in this kernel) or ENOMEM leave the range in small pages, which is correct too.
  (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace lockcheck
