/* Linux implementation of src/host/platform.h: OFD byte locks for process
 * liveness, shared futexes for every wait, pthreads for the helper threads.
 * The files (their trust checks and opening) are in files_linux.c.
 *
 * Futexes are used without FUTEX_PRIVATE_FLAG: the kernel then keys a wait
 * on a MAP_SHARED file page by (inode, offset), so a wake in one process
 * reaches a waiter in another, whatever address each mapped the file at
 * and whatever PID namespace each runs in.
 */
#include "platform.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void
tl__hp_close(int fd)
{
  close(fd);
}

static int
tl__ofd(int fd, int cmd, short type, uint64_t byte, struct flock *out)
{
  struct flock fl;

  memset(&fl, 0, sizeof(fl));
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = (off_t)byte;
  fl.l_len = 1;
  fl.l_pid = 0; /* OFD locks require 0 */
  for (;;) {
    int r = fcntl(fd, cmd, &fl);
    if (r == 0 || errno != EINTR)
      break;
  }
  if (out != NULL)
    *out = fl;
  return 0;
}

int
tl__hp_trylock(int fd, uint64_t byte, int exclusive)
{
  struct flock fl;

  memset(&fl, 0, sizeof(fl));
  fl.l_type = exclusive ? F_WRLCK : F_RDLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = (off_t)byte;
  fl.l_len = 1;
  return fcntl(fd, F_OFD_SETLK, &fl) == 0 ? 0 : -1;
}

int
tl__hp_lock_wait(int fd, uint64_t byte, int exclusive)
{
  struct flock fl;

  memset(&fl, 0, sizeof(fl));
  fl.l_type = exclusive ? F_WRLCK : F_RDLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = (off_t)byte;
  fl.l_len = 1;
  /* A signal may interrupt the wait (EINTR): wait again. */
  for (;;) {
    if (fcntl(fd, F_OFD_SETLKW, &fl) == 0)
      return 0;
    if (errno != EINTR)
      return -1;
  }
}

void
tl__hp_test_pause(const char *name, _Atomic int *cache)
{
  int ms = atomic_load(cache);
  if (ms < 0) {
    const char *v = getenv(name);
    ms = v != NULL && atoi(v) > 0 ? atoi(v) : 0;
    atomic_store(cache, ms);
  }
  if (ms > 0) {
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
  }
}

int
tl__hp_lock_within(int fd, uint64_t byte, int exclusive, int64_t timeout_ms,
                   uint32_t *holder)
{
  uint64_t deadline = tl__hp_monotonic_ms() + (uint64_t)timeout_ms;
  long pause_us = 100;

  *holder = 0;
  for (;;) {
    if (tl__hp_trylock(fd, byte, exclusive) == 0)
      return 0;
    if (tl__hp_monotonic_ms() >= deadline)
      break;
    /* A first attacher holds it for the microseconds of an initialisation:
     * short sleeps, growing to 20 ms. */
    struct timespec ts = { 0, pause_us * 1000 };
    nanosleep(&ts, NULL);
    if (pause_us < 20000)
      pause_us *= 2;
  }
  struct flock fl;
  memset(&fl, 0, sizeof(fl));
  fl.l_type = exclusive ? F_WRLCK : F_RDLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = (off_t)byte;
  fl.l_len = 1;
  /* F_GETLK (not the OFD form) reports a process-owned lock's pid; an
   * OFD lock shows as -1. */
  if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK && fl.l_pid > 0)
    *holder = (uint32_t)fl.l_pid;
  return -1;
}

long
tl__hp_read(int fd, void *buf, size_t len, uint64_t offset)
{
  ssize_t n;
  do
    n = pread(fd, buf, len, (off_t)offset);
  while (n < 0 && errno == EINTR);
  return (long)n;
}

int
tl__hp_write_sync(int fd, const void *buf, size_t len, uint64_t offset)
{
  ssize_t n;
  do
    n = pwrite(fd, buf, len, (off_t)offset);
  while (n < 0 && errno == EINTR);
  if (n != (ssize_t)len) {
    if (n >= 0)
      errno = ENOSPC;
    return -1;
  }
  return fdatasync(fd);
}

void
tl__hp_unlock(int fd, uint64_t byte)
{
  tl__ofd(fd, F_OFD_SETLK, F_UNLCK, byte, NULL);
}

int
tl__hp_probe(int fd, uint64_t byte)
{
  struct flock fl;

  memset(&fl, 0, sizeof(fl));
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = (off_t)byte;
  fl.l_len = 1;
  if (fcntl(fd, F_OFD_GETLK, &fl) != 0)
    return TL_HP_OWNED; /* cannot tell: never declare a death */
  if (fl.l_type == F_UNLCK)
    return TL_HP_FREE;
  return fl.l_type == F_WRLCK ? TL_HP_OWNED : TL_HP_WATCHED;
}

int
tl__hp_allocate(int fd, size_t size)
{
  struct stat st;

  if (fstat(fd, &st) != 0)
    return -1;
  if ((size_t)st.st_size != size && ftruncate(fd, (off_t)size) != 0)
    return -1;
  /* tmpfs and most local file systems support it; where one does not,
   * the truncated file is still usable. */
  int r = posix_fallocate(fd, 0, (off_t)size);
  return r == 0 || r == EOPNOTSUPP || r == EINVAL ? 0 : -1;
}

/* The size by lseek to the end: it copies no stat structure out (about
 * 0.3 µs here against fstat's 0.5 µs), for the check before every touch
 * of the table's mapping. It moves the descriptor's offset, which nothing
 * reads: every read and write of the table file is positional. */
int
tl__hp_size_now(int fd, uint64_t *size)
{
  off_t end = lseek(fd, 0, SEEK_END);

  if (end < 0)
    return -1;
  *size = (uint64_t)end;
  return 0;
}

int
tl__hp_size(int fd, size_t *size)
{
  struct stat st;

  if (fstat(fd, &st) != 0)
    return -1;
  *size = (size_t)st.st_size;
  return 0;
}

void *
tl__hp_map(int fd, size_t size)
{
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? NULL : p;
}

void
tl__hp_unmap(void *addr, size_t size)
{
  munmap(addr, size);
}

int
tl__hp_wait(uint32_t *word, uint32_t expected, int64_t timeout_ms)
{
  struct timespec ts, *tp = NULL;
  long r;

  if (timeout_ms >= 0) {
    ts.tv_sec = (time_t)(timeout_ms / 1000);
    ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
    tp = &ts;
  }
  r = syscall(SYS_futex, word, FUTEX_WAIT, expected, tp, NULL, 0);
  return r != 0 && errno == ETIMEDOUT ? TL_HP_TIMED_OUT : TL_HP_WOKEN;
}

void
tl__hp_wake(uint32_t *word, int count)
{
  syscall(SYS_futex, word, FUTEX_WAKE, count, NULL, NULL, 0);
}

/* futex_waitv's entry, as the kernel reads it (include/uapi/linux/futex.h),
 * written out so that older headers build too. The syscall has number 449
 * on every architecture that has it. */
struct tl__waitv {
  uint64_t val;
  uint64_t uaddr;
  uint32_t flags;
  uint32_t reserved;
};
#define TL__SYS_FUTEX_WAITV 449
#define TL__FUTEX_32 2
#define TL__FUTEX_PRIVATE 128

/* Asked once. An empty set is refused with EINVAL by a kernel that has
 * the call; ENOSYS (older kernels) or EPERM (a seccomp filter) mean it
 * cannot be used. THREADLOCK_HOST_TEST_NO_WAITV=1 stands in for such a
 * kernel, so that the tests cover the fallback on any machine. */
int
tl__hp_waitv_supported(void)
{
  static _Atomic int known; /* 0: not asked, 1: yes, 2: no */
  int k = atomic_load(&known);

  if (k == 0) {
    const char *no = getenv("THREADLOCK_HOST_TEST_NO_WAITV");
    if (no != NULL && no[0] != '\0' && strcmp(no, "0") != 0) {
      k = 2;
    } else {
      long r = syscall(TL__SYS_FUTEX_WAITV, NULL, 0, 0, NULL, 0);
      k = r == -1 && errno == EINVAL ? 1 : 2;
    }
    atomic_store(&known, k);
  }
  return k == 1;
}

/* `*ts` := the time `ms` milliseconds from now on `clock`, normalised:
 * the absolute deadline that futex_waitv and pthread_mutex_timedlock take.
 * 0, or -1 when the clock cannot be read. */
static int
tl__deadline(clockid_t clock, int64_t ms, struct timespec *ts)
{
  if (clock_gettime(clock, ts) != 0)
    return -1;
  ts->tv_sec += (time_t)(ms / 1000);
  ts->tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
  return 0;
}

void
tl__hp_waitv(const tl_hp_waitv_t *set, unsigned n, int64_t timeout_ms)
{
  struct tl__waitv v[TL_HP_WAITV_MAX];
  struct timespec ts, *tp = NULL;

  if (n > TL_HP_WAITV_MAX)
    n = TL_HP_WAITV_MAX;
  memset(v, 0, sizeof(v[0]) * n);
  for (unsigned i = 0; i < n; i++) {
    v[i].val = set[i].expected;
    v[i].uaddr = (uint64_t)(uintptr_t)set[i].word;
    v[i].flags = TL__FUTEX_32 | (set[i].shared ? 0 : TL__FUTEX_PRIVATE);
  }
  /* The call's timeout is absolute, on the clock named. */
  if (timeout_ms >= 0 && tl__deadline(CLOCK_MONOTONIC, timeout_ms, &ts) == 0)
    tp = &ts;
  /* Every outcome (woken, EAGAIN for a changed word, ETIMEDOUT, EINTR,
   * EFAULT for a table unmapped since the caller read the set) sends the
   * caller back to re-read its words. */
  syscall(TL__SYS_FUTEX_WAITV, v, n, 0, tp, CLOCK_MONOTONIC);
}

void
tl__hp_wake_local(uint32_t *word)
{
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1 << 30, NULL, NULL, 0);
}

uint32_t
tl__hp_pid(void)
{
  return (uint32_t)getpid();
}

/* Field 22 of /proc/self/stat: the start time in clock ticks since boot,
 * which tells a process apart from a later one that got the same pid. */
uint64_t
tl__hp_start_time(void)
{
  char buf[1024];
  unsigned long long t = 0;
  FILE *f = fopen("/proc/self/stat", "re");
  char *p;

  if (f == NULL)
    return 0;
  if (fgets(buf, sizeof(buf), f) != NULL && (p = strrchr(buf, ')')) != NULL) {
    /* After the command name: state is field 3, start time field 22. */
    int field = 2;
    for (p++; *p != '\0' && field < 21; p++)
      if (*p == ' ')
        field++;
    sscanf(p, "%llu", &t);
  }
  fclose(f);
  return t;
}

uint64_t
tl__hp_realtime_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t
tl__hp_monotonic_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t
tl__hp_monotonic_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The tests make one kind of thread fail to start, as a pids limit would
 * (THREADLOCK_HOST_TEST_NO_THREAD=tl-host-watch): the thread's name. */
static int
tl__thread_refused(const char *name)
{
  const char *v = getenv("THREADLOCK_HOST_TEST_NO_THREAD");
  return v != NULL && strcmp(v, name) == 0;
}

struct tl_hp_thread_s {
  pthread_t thread;
};

tl_hp_thread_t *
tl__hp_thread_start(void *(*fn)(void *), void *arg, const char *name)
{
  tl_hp_thread_t *t = malloc(sizeof(*t));
  pthread_attr_t attr;
  int r;

  if (t == NULL)
    return NULL;
  if (tl__thread_refused(name)) {
    free(t);
    errno = EAGAIN;
    return NULL;
  }
  pthread_attr_init(&attr);
  /* The threads only wait and walk the table: a small stack will do. */
  pthread_attr_setstacksize(&attr, 256 * 1024);
  r = pthread_create(&t->thread, &attr, fn, arg);
  pthread_attr_destroy(&attr);
  if (r != 0) {
    free(t);
    return NULL;
  }
  /* Only for ps, top and the tests that count helper threads. */
  pthread_setname_np(t->thread, name);
  return t;
}

void
tl__hp_thread_cancel(tl_hp_thread_t *t)
{
  pthread_cancel(t->thread);
}

void
tl__hp_thread_join(tl_hp_thread_t *t)
{
  pthread_join(t->thread, NULL);
  free(t);
}

void
tl__hp_cancel_point(int enabled)
{
  int old;
  pthread_setcancelstate(
      enabled ? PTHREAD_CANCEL_ENABLE : PTHREAD_CANCEL_DISABLE, &old);
}

static void
tl__ended(void *flag)
{
  atomic_store((_Atomic int *)flag, 1);
}

int
tl__hp_lock_wait_cancellable(int fd, uint64_t byte, int exclusive,
                             _Atomic int *ended)
{
  int r;

  pthread_cleanup_push(tl__ended, (void *)ended);
  tl__hp_cancel_point(1);
  r = tl__hp_lock_wait(fd, byte, exclusive);
  tl__hp_cancel_point(0);
  pthread_cleanup_pop(0);
  return r;
}

struct tl_hp_mutex_s {
  pthread_mutex_t m;
};

tl_hp_mutex_t *
tl__hp_mutex_new(void)
{
  tl_hp_mutex_t *m = malloc(sizeof(*m));
  if (m != NULL)
    pthread_mutex_init(&m->m, NULL);
  return m;
}

void
tl__hp_mutex_free(tl_hp_mutex_t *m)
{
  pthread_mutex_destroy(&m->m);
  free(m);
}

void
tl__hp_mutex_lock(tl_hp_mutex_t *m)
{
  if (pthread_mutex_lock(&m->m) != 0)
    abort();
}

void
tl__hp_mutex_unlock(tl_hp_mutex_t *m)
{
  if (pthread_mutex_unlock(&m->m) != 0)
    abort();
}

int
tl__hp_mutex_trylock(tl_hp_mutex_t *m)
{
  return pthread_mutex_trylock(&m->m) == 0 ? 0 : -1;
}

int
tl__hp_mutex_timedlock(tl_hp_mutex_t *m, int64_t timeout_ms)
{
  struct timespec ts;

  /* pthread_mutex_timedlock counts in CLOCK_REALTIME; a jump of the
   * clock makes this wait shorter or longer, never unbounded. */
  tl__deadline(CLOCK_REALTIME, timeout_ms, &ts);
  int r;
  do
    r = pthread_mutex_timedlock(&m->m, &ts);
  while (r == EINTR);
  return r == 0 ? 0 : -1;
}

static pthread_mutex_t tl__process_mutex = PTHREAD_MUTEX_INITIALIZER;

void
tl__hp_process_lock(void)
{
  if (pthread_mutex_lock(&tl__process_mutex) != 0)
    abort();
}

void
tl__hp_process_unlock(void)
{
  if (pthread_mutex_unlock(&tl__process_mutex) != 0)
    abort();
}

int
tl__hp_at_exit(void (*fn)(void))
{
  return atexit(fn);
}
