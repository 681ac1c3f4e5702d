/* lockcheck's power shim: an LD_PRELOAD library that records, for the power-loss nemesis, what a process made
 * durable. It changes nothing the process does: every call goes to the kernel as before; the shim only appends a
 * line to a journal (the file named by LOCKCHECK_POWER_JOURNAL) after the calls that decide durability. After
 * SIGKILL of the process, the harness (cluster/power_loss.h) replays the journal and drops what a power loss would
 * have lost: file bytes beyond the length the last fsync/fdatasync covered, and files created since the last
 * fsync of their directory.
 *
 * Journal lines, one write(2) each to an O_APPEND descriptor (whole lines, never interleaved):
 *   <T> <dev> <ino> <n> <absolute path>\n
 *   B  a file opened for writing that existed before: n = its size then (durable: it was there when this
 *      process started, or the harness made it so at the last power loss)
 *   C  a file created by this open (O_CREAT and it did not exist before): n = 0
 *   D  a file opened with O_SYNC or O_DSYNC: n = its size; every write to it is durable
 *   S  fsync or fdatasync of a file returned 0: n = the file's size just BEFORE the call (a write that races the
 *      sync is counted as lost, which a real power loss may also do)
 *   Y  fsync or fdatasync of a directory returned 0: the names created or renamed into it are durable
 *   R  rename/renameat/renameat2 returned 0: dev/ino/path of the new name; n = 1 if it replaced a file
 *   U  unlink/unlinkat of a file is about to happen (dev/ino/path of the victim), written before the call
 * The path is the canonical absolute one (readlink of /proc/self/fd), so that relative paths, chdir and renames do
 * not confuse the replay. Calls the journal does not see: sync, syncfs, msync, sync_file_range (Redis calls the
 * last one only with SYNC_FILE_RANGE_WRITE, which makes nothing durable), truncate/ftruncate, link, mkdir.
 *
 * Without LOCKCHECK_POWER_JOURNAL (unset or empty) the shim records nothing. Like the clock shim it never calls
 * dlsym or the allocator on its own path (jemalloc, which Debian's Redis links, opens files while it starts): the
 * wrapped calls are made with syscall(2); fopen is open + fdopen. Every wrapper preserves errno of the real call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LOCKCHECK_EXPORT __attribute__((visibility("default")))

enum { kJournalUnopened = -2, kJournalOff = -3, kJournalOpening = -4 };
static int journal_fd = kJournalUnopened; /* accessed with __atomic builtins only */

static int journal(void) {
  int fd = __atomic_load_n(&journal_fd, __ATOMIC_ACQUIRE);
  if (fd >= 0 || fd == kJournalOff) return fd;
  int expected = kJournalUnopened;
  if (!__atomic_compare_exchange_n(&journal_fd, &expected, kJournalOpening, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    /* Another thread opens it right now: wait (bounded) for it. */
    for (int i = 0; i < 1000000; ++i) {
      fd = __atomic_load_n(&journal_fd, __ATOMIC_ACQUIRE);
      if (fd != kJournalOpening) return fd;
    }
    return kJournalOff;
  }
  const char* path = getenv("LOCKCHECK_POWER_JOURNAL");
  fd = kJournalOff;
  if (path != NULL && path[0] != '\0') {
    long r = syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (r >= 0) fd = (int)r;
  }
  __atomic_store_n(&journal_fd, fd, __ATOMIC_RELEASE);
  return fd;
}

static char* put_str(char* p, char* end, const char* s) {
  while (*s != '\0' && p < end) *p++ = *s++;
  return p;
}

static char* put_u64(char* p, char* end, uint64_t v) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0 && p < end) *p++ = digits[--n];
  return p;
}

/* Canonical absolute path of an open descriptor into buf (NUL-terminated); 0 on success. */
static int fd_path(int fd, char* buf, size_t size) {
  char link[40];
  char* p = put_str(link, link + sizeof link - 1, "/proc/self/fd/");
  p = put_u64(p, link + sizeof link - 1, (uint64_t)fd);
  *p = '\0';
  long n = syscall(SYS_readlinkat, AT_FDCWD, link, buf, size - 1);
  if (n <= 0) return -1;
  buf[n] = '\0';
  return 0;
}

/* Appends one journal line for the file open on fd. */
static void record_fd(char type, int fd, uint64_t n, const struct stat* st) {
  int j = journal();
  if (j < 0) return;
  char path[4096];
  if (fd_path(fd, path, sizeof path) != 0) return;
  char line[4096 + 96];
  char* end = line + sizeof line - 1;
  char* p = line;
  *p++ = type;
  p = put_str(p, end, " ");
  p = put_u64(p, end, (uint64_t)st->st_dev);
  p = put_str(p, end, " ");
  p = put_u64(p, end, (uint64_t)st->st_ino);
  p = put_str(p, end, " ");
  p = put_u64(p, end, n);
  p = put_str(p, end, " ");
  p = put_str(p, end, path);
  if (p >= end) return; /* a path this long is not recorded rather than cut */
  *p++ = '\n';
  syscall(SYS_write, j, line, (size_t)(p - line));
}

/* Appends a line for the file at (dirfd, path), opened O_PATH just to name it. */
static void record_path(char type, int dirfd, const char* path, uint64_t n) {
  if (journal() < 0) return;
  long fd = syscall(SYS_openat, dirfd, path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  if (syscall(SYS_fstat, (int)fd, &st) == 0 && (S_ISREG(st.st_mode))) record_fd(type, (int)fd, n, &st);
  syscall(SYS_close, (int)fd);
}

static int exists_at(int dirfd, const char* path) {
  struct stat st;
  return syscall(SYS_newfstatat, dirfd, path, &st, 0) == 0;
}

/* The common open: the real openat, then B/C/D for a regular file opened for writing. */
static int open_common(int dirfd, const char* path, int flags, mode_t mode) {
  const int writing = (flags & O_ACCMODE) != O_RDONLY || (flags & O_CREAT) != 0;
  const int tracked = writing && journal() >= 0 && (flags & O_PATH) == 0;
  const int existed = tracked && (flags & O_CREAT) != 0 ? exists_at(dirfd, path) : 1;
  long fd = syscall(SYS_openat, dirfd, path, flags, mode);
  if (fd < 0) return -1; /* syscall(2) has set errno */
  if (tracked) {
    int saved = errno;
    struct stat st;
    if (syscall(SYS_fstat, (int)fd, &st) == 0 && S_ISREG(st.st_mode)) {
      if (flags & (O_SYNC | O_DSYNC)) {
        record_fd('D', (int)fd, (uint64_t)st.st_size, &st);
      } else {
        record_fd(existed ? 'B' : 'C', (int)fd, existed ? (uint64_t)st.st_size : 0, &st);
      }
    }
    errno = saved;
  }
  return (int)fd;
}

static mode_t mode_arg(int flags, va_list ap) {
  return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

LOCKCHECK_EXPORT int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return open_common(AT_FDCWD, path, flags, mode);
}

LOCKCHECK_EXPORT int open64(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return open_common(AT_FDCWD, path, flags | O_LARGEFILE, mode);
}

LOCKCHECK_EXPORT int openat(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return open_common(dirfd, path, flags, mode);
}

LOCKCHECK_EXPORT int openat64(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return open_common(dirfd, path, flags | O_LARGEFILE, mode);
}

/* _FORTIFY_SOURCE's entry points (no mode: O_CREAT is not allowed there). */
LOCKCHECK_EXPORT int __open_2(const char* path, int flags) { return open_common(AT_FDCWD, path, flags, 0); }
LOCKCHECK_EXPORT int __open64_2(const char* path, int flags) {
  return open_common(AT_FDCWD, path, flags | O_LARGEFILE, 0);
}
LOCKCHECK_EXPORT int __openat_2(int dirfd, const char* path, int flags) {
  return open_common(dirfd, path, flags, 0);
}
LOCKCHECK_EXPORT int __openat64_2(int dirfd, const char* path, int flags) {
  return open_common(dirfd, path, flags | O_LARGEFILE, 0);
}

LOCKCHECK_EXPORT int creat(const char* path, mode_t mode) {
  return open_common(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}
LOCKCHECK_EXPORT int creat64(const char* path, mode_t mode) {
  return open_common(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC | O_LARGEFILE, mode);
}

/* fopen as glibc's: mode r, w, a, optionally +, then any of b, e (O_CLOEXEC), x (O_EXCL); the rest ignored. glibc's
 * own fopen opens with an internal call that an LD_PRELOAD cannot see, hence open + fdopen here. */
static FILE* fopen_common(const char* path, const char* mode) {
  int flags;
  switch (mode[0]) {
    case 'r': flags = O_RDONLY; break;
    case 'w': flags = O_WRONLY | O_CREAT | O_TRUNC; break;
    case 'a': flags = O_WRONLY | O_CREAT | O_APPEND; break;
    default: errno = EINVAL; return NULL;
  }
  for (const char* m = mode + 1; *m != '\0' && *m != ','; ++m) {
    if (*m == '+') flags = (flags & ~O_ACCMODE) | O_RDWR;
    if (*m == 'e') flags |= O_CLOEXEC;
    if (*m == 'x') flags |= O_EXCL;
  }
  int fd = open_common(AT_FDCWD, path, flags, 0666);
  if (fd < 0) return NULL;
  FILE* f = fdopen(fd, mode);
  if (f == NULL) {
    int saved = errno;
    syscall(SYS_close, fd);
    errno = saved;
  }
  return f;
}

LOCKCHECK_EXPORT FILE* fopen(const char* path, const char* mode) { return fopen_common(path, mode); }
LOCKCHECK_EXPORT FILE* fopen64(const char* path, const char* mode) { return fopen_common(path, mode); }

static int sync_common(int fd, long nr) {
  struct stat st;
  const int tracked = journal() >= 0 && syscall(SYS_fstat, fd, &st) == 0;
  long r = syscall(nr, fd);
  if (r != 0) return -1;
  if (tracked && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
    int saved = errno;
    record_fd(S_ISDIR(st.st_mode) ? 'Y' : 'S', fd, S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0, &st);
    errno = saved;
  }
  return 0;
}

LOCKCHECK_EXPORT int fsync(int fd) { return sync_common(fd, SYS_fsync); }
LOCKCHECK_EXPORT int fdatasync(int fd) { return sync_common(fd, SYS_fdatasync); }

static int rename_common(int olddir, const char* oldpath, int newdir, const char* newpath, unsigned flags) {
  const int tracked = journal() >= 0;
  const int replaced = tracked && exists_at(newdir, newpath);
  long r = syscall(SYS_renameat2, olddir, oldpath, newdir, newpath, flags);
  if (r != 0) return -1;
  if (tracked) {
    int saved = errno;
    record_path('R', newdir, newpath, (uint64_t)replaced);
    errno = saved;
  }
  return 0;
}

LOCKCHECK_EXPORT int rename(const char* oldpath, const char* newpath) {
  return rename_common(AT_FDCWD, oldpath, AT_FDCWD, newpath, 0);
}
LOCKCHECK_EXPORT int renameat(int olddir, const char* oldpath, int newdir, const char* newpath) {
  return rename_common(olddir, oldpath, newdir, newpath, 0);
}
LOCKCHECK_EXPORT int renameat2(int olddir, const char* oldpath, int newdir, const char* newpath, unsigned flags) {
  return rename_common(olddir, oldpath, newdir, newpath, flags);
}

static int unlink_common(int dirfd, const char* path, int flags) {
  if (journal() >= 0 && (flags & AT_REMOVEDIR) == 0) {
    int saved = errno;
    record_path('U', dirfd, path, 0);
    errno = saved;
  }
  long r = syscall(SYS_unlinkat, dirfd, path, flags);
  return r == 0 ? 0 : -1;
}

LOCKCHECK_EXPORT int unlink(const char* path) { return unlink_common(AT_FDCWD, path, 0); }
LOCKCHECK_EXPORT int unlinkat(int dirfd, const char* path, int flags) { return unlink_common(dirfd, path, flags); }
