// Transparent huge pages for the few big arrays of a check (the history, its pair index, the mutex checker's
// ops and search arrays). A million-op history touches about 300 MB; in 4 KiB pages that is ~77,000 minor page
// faults, each a trap into the kernel (6.5 us each on the project's VM: 40% of `lockcheck check`'s CPU). In
// 2 MiB pages it is a few hundred. The kernel decides: with /sys/kernel/mm/transparent_hugepage/enabled set to
// "always" or "madvise" (Debian's default is madvise) an advised range is backed by huge pages as it is first
// touched; with "never", or without THP, the advice is ignored and nothing else changes.
//
// The project's VM (a Firecracker guest whose virtio balloon reports free 2 MiB blocks back to the host) was
// once left out, from figures taken under load 15-21 before pages were populated ahead. Re-measured idle on
// 2026-12-04 with population (bench/README.md, "Huge pages by default"): advised is never slower on average,
// and much faster when a check follows another (the host still backs the pages the last one freed):
// gen 10^6 0.51-0.96 s against 0.98-1.31 s back to back, 0.88-0.99 s against 0.99-1.05 s after 3 s idle; the
// contended 10^5 history 0.05-0.07 s against 0.08-0.09 s back to back, both 0.10 s on average after 3 s idle.
// LOCKCHECK_HUGE_PAGES=0 leaves the advice out (to measure without it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace lockcheck {

// Asks the kernel to back the whole 2 MiB pages inside [p, p + bytes) with huge pages (madvise MADV_HUGEPAGE).
// Does nothing for ranges under 4 MiB (at most one whole huge page in them), when the advice is switched off,
// or when the kernel refuses. The memory stays owned by whoever allocated it (malloc's, a vector's): advice
// only, no allocation. Call it before the pages are first written; pages already touched stay as they are.
void advise_huge_pages(const void* p, size_t bytes);

// Maps the whole 4 KiB pages inside [p, p + bytes) writable in one system call (madvise MADV_POPULATE_WRITE,
// Linux 5.14), instead of one page fault per page at its first write. On the project's VM a fault costs about
// 6 us of system time (a trap through the hypervisor) and the population about 1 us a page; the first user
// write to each page costs the same either way (the host's mapping of it). Does nothing when the kernel lacks
// the call or LOCKCHECK_POPULATE=0 is set. Like advise_huge_pages, no allocation: the memory stays its owner's.
void populate_pages(const void* p, size_t bytes);

// The same for the capacity of v (call after reserve, before the elements are written).
template <class T>
void advise_huge_pages(const std::vector<T>& v) {
  advise_huge_pages(v.data(), v.capacity() * sizeof(T));
}

// v resized to n copies of value, its storage advised first. v must be empty.
template <class T>
void assign_huge(std::vector<T>* v, size_t n, const T& value) {
  v->reserve(n);
  advise_huge_pages(*v);
  populate_pages(v->data(), n * sizeof(T));
  v->assign(n, value);
}

// v resized to n (new elements value), for tables indexed by a number that grows as a history is read (a
// process id: an info-heavy history retires one per info op, hundreds of thousands): the capacity grows
// geometrically as resize's would, and each new block is advised before it is written.
template <class T>
void resize_huge(std::vector<T>* v, size_t n, const T& value = T()) {
  if (n > v->capacity()) {
    std::vector<T> bigger;
    bigger.reserve(std::max(n, 2 * v->capacity()));
    advise_huge_pages(bigger);
    bigger.assign(v->begin(), v->end());
    v->swap(bigger);
  }
  v->resize(n, value);
}

// For an array filled front to back (a reserved vector): populates the next kChunk bytes of its capacity each
// time the filled part comes within kChunk of what is populated, so only about kChunk more than is used is
// mapped ahead.
class PopulateAhead {
 public:
  static constexpr size_t kChunk = size_t{1} << 20;

  template <class T>
  void fill(const std::vector<T>& v) {
    const size_t used = v.size() * sizeof(T);
    if (used + kChunk <= done_ || v.data() == nullptr) return;
    const size_t cap = v.capacity() * sizeof(T);
    if (done_ >= cap) return;
    const size_t n = std::min(cap - done_, 2 * kChunk - (done_ - std::min(done_, used)));
    populate_pages(reinterpret_cast<const char*>(v.data()) + done_, n);
    done_ += n;
  }

 private:
  size_t done_ = 0;  // bytes from the start of the array populated so far
};

}  // namespace lockcheck
