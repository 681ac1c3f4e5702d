// Randomness. Two kinds, kept apart on purpose: lock tokens come from the OS (unpredictable, unique across
// processes and runs, as a real client's must be); everything that shapes a run's schedule comes from a
// seeded std::mt19937_64 (same seed, same run).
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace lockcheck {

// n random bytes from getrandom(2), hex-encoded (2n characters).
std::string os_random_hex(size_t n);
// A random 64-bit value from the OS, e.g. to pick a seed when none was given.
uint64_t os_random_u64();

// A seed for a sub-stream (a process, the nemesis) derived from the run seed: same inputs, same stream.
uint64_t derive_seed(uint64_t run_seed, uint64_t stream);

// Uniform integer in [lo, hi]. REQUIRES: lo <= hi.
int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi);

}  // namespace lockcheck
