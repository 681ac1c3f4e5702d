#include "core/random.h"
#include "core/assert.h"

#include <sys/random.h>

#include <cerrno>
#include <stdexcept>
#include <vector>

namespace lockcheck {

namespace {

void fill_random(unsigned char* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::getrandom(buf + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("getrandom failed");
    }
    got += static_cast<size_t>(r);
  }
}

}  // namespace

std::string os_random_hex(size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::vector<unsigned char> buf(n);
  fill_random(buf.data(), n);
  std::string s;
  s.reserve(2 * n);
  for (unsigned char c : buf) {
    s.push_back(kHex[c >> 4]);
    s.push_back(kHex[c & 15]);
  }
  return s;
}

uint64_t os_random_u64() {
  uint64_t v = 0;
  fill_random(reinterpret_cast<unsigned char*>(&v), sizeof v);
  return v;
}

uint64_t derive_seed(uint64_t run_seed, uint64_t stream) {
  // splitmix64 of the pair: well-spread sub-seeds from consecutive stream numbers.
  uint64_t z = run_seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  LOCKCHECK_ASSERT(lo <= hi, "uniform(" + std::to_string(lo) + ", " + std::to_string(hi) + ")");
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

}  // namespace lockcheck
