#include "core/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace lockcheck {

namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

bool huge_pages_wanted() {
  static const bool wanted = [] {
    const char* v = std::getenv("LOCKCHECK_HUGE_PAGES");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return wanted;
}

}  // namespace

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
