/* lockcheck's clock shim: an LD_PRELOAD library that moves a process's wall clock (CLOCK_REALTIME) by an offset
 * and makes it run at a different rate, as the harness says at any time, without touching the machine's clock.
 *
 * Why not libfaketime: Debian's libfaketime 0.9.10 hangs redis-server 7.0.15 at start ("Unexpected recursive
 * calls to clock_gettime()"; it clashes with the jemalloc that Debian's Redis links). This shim avoids the
 * recursion by never calling into libc's clock functions or the allocator: the real clock is read with the raw
 * syscall, and the setting comes from a file mapped read-only with mmap.
 *
 * Overridden: clock_gettime (CLOCK_REALTIME and CLOCK_REALTIME_COARSE are shifted; every other clock, in
 * particular CLOCK_MONOTONIC, is passed through unchanged), gettimeofday, time. Redis's key expiry follows
 * gettimeofday (ustime/mstime), its timers the monotonic clock, so the shim moves expiry and TIME only.
 *
 * The clock: with the real wall clock t (ns), the process sees
 *     t + offset + (t - anchor) * rate / 10^9
 * offset in ns, rate in parts per billion (+50,000,000 = the clock runs 5% fast), anchor the real wall-clock
 * time (ns) at which the rate took effect. The writer changes the rate at real time t0 with
 * offset' = offset + (t0 - anchor) * rate / 10^9 and anchor' = t0, so the clock never jumps when its rate changes
 * (cluster/clock_shim.h: clock_with_rate); a new offset with rate 0 is a jump (clock:bump).
 *
 * The clock file (LOCKCHECK_CLOCK_FILE, at least 56 bytes, native byte order, little endian on x86_64):
 *   bytes 0..7    generation g (uint64): slot g % 2 holds the setting in force
 *   bytes 8..31   slot 0: offset, rate, anchor (three int64)
 *   bytes 32..55  slot 1: the same
 * One setting is three words, more than one aligned store can publish, so it is double-buffered: the writer
 * fills the slot not in force, then stores g + 1. A reader loads g, reads slot g % 2, loads g again, and uses
 * what it read when both loads agree (otherwise reads again; bounded). That is safe even when the writer's
 * stores are byte by byte (the remote backends write with `dd`): the slot in use is never written until the
 * generation has moved past it, and the generation's own write changes the slot bit in one byte.
 *
 * Mapping policy (decided here, relied on by the harness):
 *  - The file is mapped lazily, on the first clock call that needs it, not in a constructor: other libraries'
 *    constructors (jemalloc's among them) read the clock before ours would run.
 *  - LOCKCHECK_CLOCK_FILE unset or empty: the real clock for the life of the process; never looked at again.
 *  - Set, but the file cannot be opened, is shorter than 56 bytes, or cannot be mapped: the real clock for now,
 *    and the shim tries again at most once per second of (real) wall-clock time, so a file created a little
 *    after the process started is picked up without an open() on every clock call. The harness creates the
 *    file before it starts the process, so in practice the first call maps it.
 *  - Once mapped, the mapping stays for the life of the process (and is inherited across fork). The file must
 *    not be truncated below 56 bytes while mapped (readers would get SIGBUS): rewrite it, never recreate it.
 *  - Everything on the clock path is async-signal-safe and allocation-free: raw syscalls, getenv (which only
 *    reads environ), open/fstat/mmap/close, and atomics. Concurrent first calls from several threads are
 *    resolved by a compare-and-swap: one thread maps, the others use the real clock until it has finished.
 *  - errno is preserved by the mapping attempt; the clock functions set errno only as the real ones would.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define LOCKCHECK_EXPORT __attribute__((visibility("default")))

enum map_state {
  kUntried = 0,  /* no attempt yet */
  kMapping = 1,  /* one thread is mapping the file right now */
  kMapped = 2,   /* page points into the mapped file */
  kDisabled = 3, /* LOCKCHECK_CLOCK_FILE unset: offset 0 forever */
  kFailed = 4,   /* the file was not usable at last_attempt_sec: retry once the second has changed */
};

static int state = kUntried;                 /* accessed with __atomic builtins only */
static const int64_t* page = NULL;           /* the mapped clock file; published before state becomes kMapped */
static int64_t last_attempt_sec = INT64_MIN; /* wall-clock second (real) of the last failed attempt */

/* The clock file's size in use: the generation word and two slots of three words. */
enum { kPageBytes = 7 * sizeof(int64_t) };

/* The shift (ns) of the setting in force at real wall-clock time real_ns. */
static int64_t shift_of(const int64_t* p, int64_t real_ns) {
  int64_t offset = 0, rate = 0, anchor = 0;
  /* The writer publishes a new setting at most every few ms (a strobe); a retry means one landed while this
   * call read, so a few suffice; the bound only guards against a writer that died between two stores. */
  for (int tries = 0; tries < 64; ++tries) {
    const uint64_t g = __atomic_load_n((const uint64_t*)p, __ATOMIC_ACQUIRE);
    const int64_t* slot = p + 1 + 3 * (g & 1);
    offset = __atomic_load_n(&slot[0], __ATOMIC_RELAXED);
    rate = __atomic_load_n(&slot[1], __ATOMIC_RELAXED);
    anchor = __atomic_load_n(&slot[2], __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n((const uint64_t*)p, __ATOMIC_RELAXED) == g) break;
  }
  if (rate == 0) return offset;
  /* 128-bit product: an hour at +100% is 3.6e21, past int64. */
  const __int128 drift = (__int128)(real_ns - anchor) * rate / 1000000000;
  return offset + (int64_t)drift;
}

static int real_clock_gettime(clockid_t clock, struct timespec* ts) {
  return (int)syscall(SYS_clock_gettime, clock, ts);
}

/* Tries to map the offset file; returns the new state. Called by the one thread that won the CAS. */
static int map_offset_file(void) {
  const char* path = getenv("LOCKCHECK_CLOCK_FILE");
  if (path == NULL || path[0] == '\0') return kDisabled;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return kFailed;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < (off_t)kPageBytes) {
    close(fd);
    return kFailed;
  }
  void* p = mmap(NULL, kPageBytes, PROT_READ, MAP_SHARED, fd, 0);
  close(fd); /* the mapping keeps the file alive */
  if (p == MAP_FAILED) return kFailed;
  __atomic_store_n(&page, (const int64_t*)p, __ATOMIC_RELEASE);
  return kMapped;
}

/* The current shift in ns at real wall-clock time real_ns (its second rate-limits retries). */
static int64_t current_offset_ns(int64_t real_ns) {
  const int64_t now_sec = real_ns / 1000000000;
  int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
  if (s == kMapped) return shift_of(__atomic_load_n(&page, __ATOMIC_ACQUIRE), real_ns);
  if (s == kDisabled || s == kMapping) return 0;
  if (s == kFailed && __atomic_load_n(&last_attempt_sec, __ATOMIC_RELAXED) == now_sec) return 0;
  int expected = s;
  if (!__atomic_compare_exchange_n(&state, &expected, kMapping, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    return 0; /* another thread (or an interrupted frame of this one) is mapping; next call will see it */
  }
  int saved_errno = errno;
  int next = map_offset_file();
  errno = saved_errno;
  if (next == kFailed) __atomic_store_n(&last_attempt_sec, now_sec, __ATOMIC_RELAXED);
  __atomic_store_n(&state, next, __ATOMIC_RELEASE);
  if (next != kMapped) return 0;
  return shift_of(__atomic_load_n(&page, __ATOMIC_ACQUIRE), real_ns);
}

/* Adds offset_ns to *ts, keeping 0 <= tv_nsec < 1e9. */
static void add_offset(struct timespec* ts, int64_t offset_ns) {
  if (offset_ns == 0) return;
  int64_t sec = offset_ns / 1000000000;
  int64_t nsec = offset_ns % 1000000000; /* same sign as offset_ns */
  ts->tv_sec += sec;
  ts->tv_nsec += nsec;
  if (ts->tv_nsec >= 1000000000) {
    ts->tv_nsec -= 1000000000;
    ts->tv_sec += 1;
  } else if (ts->tv_nsec < 0) {
    ts->tv_nsec += 1000000000;
    ts->tv_sec -= 1;
  }
}

static int shifted_realtime(clockid_t clock, struct timespec* ts) {
  int r = real_clock_gettime(clock, ts);
  if (r == 0) add_offset(ts, current_offset_ns((int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec));
  return r;
}

LOCKCHECK_EXPORT int clock_gettime(clockid_t clock, struct timespec* ts) {
  if (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE) return shifted_realtime(clock, ts);
  return real_clock_gettime(clock, ts);
}

/* tv must not be NULL: glibc declares it __nonnull, so a check here would be compiled away anyway. */
LOCKCHECK_EXPORT int gettimeofday(struct timeval* restrict tv, void* restrict tz) {
  if (tz != NULL) {
    /* Obsolete; glibc fills both fields with zero, and so do we. */
    struct timezone* zone = (struct timezone*)tz;
    zone->tz_minuteswest = 0;
    zone->tz_dsttime = 0;
  }
  struct timespec ts;
  int r = shifted_realtime(CLOCK_REALTIME, &ts);
  if (r != 0) return r;
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = ts.tv_nsec / 1000;
  return 0;
}

LOCKCHECK_EXPORT time_t time(time_t* out) {
  struct timespec ts;
  /* The seconds of the shifted CLOCK_REALTIME (glibc's vDSO time() reads the coarse clock; same second). */
  if (shifted_realtime(CLOCK_REALTIME, &ts) != 0) return (time_t)-1;
  if (out != NULL) *out = ts.tv_sec;
  return ts.tv_sec;
}
