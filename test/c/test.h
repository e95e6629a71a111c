/* Shared helpers for the C tests of the waiter list core.
 *
 * Each test is one .c file with its own main(), compiled together with the
 * core (src/table.c, gates.c, owners.c). A failed check prints the file,
 * line and values and aborts, so that a sanitizer build also shows a stack.
 * Everything here is static inline so that a test that does not use a helper
 * still compiles with -Wall -Wextra -Werror.
 */
#ifndef TL_TEST_H_
#define TL_TEST_H_

#include <inttypes.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "platform.h"
#include "waiters.h"

#define TL_TEST_FAIL(...)                                                      \
  do {                                                                         \
    fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                            \
    fprintf(stderr, __VA_ARGS__);                                              \
    fprintf(stderr, "\n");                                                     \
    fflush(stderr);                                                            \
    abort();                                                                   \
  } while (0)

#define ASSERT(expr)                                                           \
  do {                                                                         \
    if (!(expr))                                                               \
      TL_TEST_FAIL("assertion failed: %s", #expr);                             \
  } while (0)

/* Compares two integers as int64_t and prints both sides on failure. */
#define TL_ASSERT_CMP(a, op, b)                                                \
  do {                                                                         \
    int64_t tl_a_ = (int64_t)(a);                                              \
    int64_t tl_b_ = (int64_t)(b);                                              \
    if (!(tl_a_ op tl_b_))                                                     \
      TL_TEST_FAIL("assertion failed: %s %s %s (%" PRId64 " vs %" PRId64 ")",  \
                   #a, #op, #b, tl_a_, tl_b_);                                 \
  } while (0)

#define ASSERT_EQ(a, b) TL_ASSERT_CMP(a, ==, b)
#define ASSERT_NE(a, b) TL_ASSERT_CMP(a, !=, b)
#define ASSERT_GE(a, b) TL_ASSERT_CMP(a, >=, b)
#define ASSERT_LE(a, b) TL_ASSERT_CMP(a, <=, b)
#define ASSERT_GT(a, b) TL_ASSERT_CMP(a, >, b)
#define ASSERT_LT(a, b) TL_ASSERT_CMP(a, <, b)

#define ASSERT_OK(expr) ASSERT_EQ(expr, 0)

/* How long a test waits for something that must happen soon (a thread to
 * enqueue, a woken thread to report) before it calls it a failure. Generous,
 * because the sanitizer builds on a loaded 2-core machine are slow. */
#define TL_TEST_PATIENCE_MS 20000

static inline void
tl_test_sleep_ms(unsigned ms)
{
  uv_sleep(ms);
}

/* Polls `pred(arg)` until it holds; fails the test when it does not hold
 * within TL_TEST_PATIENCE_MS. Used to establish orders between threads
 * (e.g. "thread 2 is enqueued") without sleeping for a guessed time. */
#define WAIT_UNTIL(cond)                                                       \
  do {                                                                         \
    uint64_t tl_start_ = uv_hrtime();                                          \
    while (!(cond)) {                                                          \
      if (uv_hrtime() - tl_start_ > (uint64_t)TL_TEST_PATIENCE_MS * 1000000)   \
        TL_TEST_FAIL("timed out waiting until %s", #cond);                     \
      uv_sleep(1);                                                             \
    }                                                                          \
  } while (0)

/* The state every test must end in: nothing enqueued anywhere, and (in
 * debug builds) a consistent table. */
static inline void
tl_test_quiescent(void)
{
#ifndef NDEBUG
  tl_check_table();
#endif
  ASSERT_EQ(tl_waiter_total(), 0);
}

/* A small xorshift generator; each thread owns one. */
typedef struct {
  uint64_t s;
} tl_rng_t;

static inline void
tl_rng_seed(tl_rng_t *r, uint64_t seed)
{
  r->s = seed * UINT64_C(0x9E3779B97F4A7C15) + 1;
}

static inline uint64_t
tl_rng_next(tl_rng_t *r)
{
  uint64_t x = r->s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return r->s = x;
}

/* A uniformly distributed integer in [0, n). */
static inline uint64_t
tl_rng_below(tl_rng_t *r, uint64_t n)
{
  return tl_rng_next(r) % n;
}

/* The seed for a run: TL_SEED from the environment when set (to replay a
 * failure), else the clock. Printed so that a failure can be replayed. */
static inline uint64_t
tl_test_seed(const char *name)
{
  const char *env = getenv("TL_SEED");
  uint64_t seed = env != NULL ? strtoull(env, NULL, 0) : uv_hrtime();
  printf("%s: seed %" PRIu64 "\n", name, seed);
  return seed;
}

/* An unsigned setting from argv[i] or the environment, else `dflt`. */
static inline unsigned long
tl_test_setting(int argc, char **argv, int i, const char *env,
                unsigned long dflt)
{
  const char *s = argc > i ? argv[i] : getenv(env);
  return s != NULL && *s != '\0' ? strtoul(s, NULL, 0) : dflt;
}

/* A watchdog aborts the process when a test hangs, which is how a lost
 * wakeup shows: without it CI would only see a job that never ends. With a
 * progress counter it fires only after the counter stood still for the
 * whole limit, so that a slow sanitizer build is not mistaken for a hang. */
typedef struct {
  uv_thread_t thread;
  uv_mutex_t lock;
  uv_cond_t cond;
  int stopped; /* protected by lock */
  uint64_t limit_ns;
  const char *what;
  _Atomic uint64_t *progress; /* may be NULL */
} tl_watchdog_t;

static inline void
tl__watchdog_main(void *arg)
{
  tl_watchdog_t *wd = arg;
  uint64_t last = wd->progress != NULL ? atomic_load(wd->progress) : 0;
  uint64_t deadline = uv_hrtime() + wd->limit_ns;

  uv_mutex_lock(&wd->lock);
  while (!wd->stopped) {
    uint64_t now = uv_hrtime();
    uint64_t tick = UINT64_C(500000000);

    if (wd->progress != NULL && atomic_load(wd->progress) != last) {
      last = atomic_load(wd->progress);
      deadline = now + wd->limit_ns;
    }
    if (now >= deadline) {
      if (wd->progress != NULL)
        fprintf(stderr,
                "watchdog: %s made no progress for %" PRIu64 " s (at %" PRIu64
                "): a lost wakeup or a deadlock\n",
                wd->what, wd->limit_ns / 1000000000, last);
      else
        fprintf(stderr,
                "watchdog: %s still running after %" PRIu64
                " s: a lost wakeup or a deadlock\n",
                wd->what, wd->limit_ns / 1000000000);
      fflush(stderr);
      abort();
    }
    uv_cond_timedwait(&wd->cond, &wd->lock,
                      deadline - now < tick ? deadline - now : tick);
  }
  uv_mutex_unlock(&wd->lock);
}

/* Starts a watchdog; the limit comes from TL_WATCHDOG_S when set. */
static inline void
tl_watchdog_start(tl_watchdog_t *wd, const char *what, unsigned seconds,
                  _Atomic uint64_t *progress)
{
  const char *env = getenv("TL_WATCHDOG_S");
  if (env != NULL && *env != '\0')
    seconds = (unsigned)strtoul(env, NULL, 0);
  wd->stopped = 0;
  wd->limit_ns = (uint64_t)seconds * 1000000000;
  wd->what = what;
  wd->progress = progress;
  ASSERT_OK(uv_mutex_init(&wd->lock));
  ASSERT_OK(uv_cond_init(&wd->cond));
  ASSERT_OK(uv_thread_create(&wd->thread, tl__watchdog_main, wd));
}

static inline void
tl_watchdog_stop(tl_watchdog_t *wd)
{
  uv_mutex_lock(&wd->lock);
  wd->stopped = 1;
  uv_cond_signal(&wd->cond);
  uv_mutex_unlock(&wd->lock);
  ASSERT_OK(uv_thread_join(&wd->thread));
  uv_cond_destroy(&wd->cond);
  uv_mutex_destroy(&wd->lock);
}

/* An append-only record of events (e.g. which waiter woke) in the order
 * they happened, written by any thread. */
#define TL_TEST_LOG_MAX 256

typedef struct {
  _Atomic int len;
  _Atomic int entries[TL_TEST_LOG_MAX];
} tl_test_log_t;

static inline void
tl_test_log_init(tl_test_log_t *log)
{
  atomic_store(&log->len, 0);
  for (int i = 0; i < TL_TEST_LOG_MAX; i++)
    atomic_store(&log->entries[i], -1);
}

/* Slots are claimed with fetch_add, so an entry may be visible a moment
 * after `len` grew; readers wait for the entry with tl_test_log_get. */
static inline void
tl_test_log_add(tl_test_log_t *log, int value)
{
  int i = atomic_fetch_add(&log->len, 1);
  ASSERT_LT(i, TL_TEST_LOG_MAX);
  atomic_store(&log->entries[i], value);
}

static inline int
tl_test_log_get(tl_test_log_t *log, int i)
{
  WAIT_UNTIL(atomic_load(&log->entries[i]) != -1);
  return atomic_load(&log->entries[i]);
}

/* A thread that makes one tl_wait call and reports how it ended. */
typedef struct {
  uv_thread_t thread;
  void *addr;
  int width;
  int64_t expected;
  double timeout_ms;
  int index;           /* logged when the wait ends with TL_RESULT_OK */
  tl_test_log_t *log;  /* may be NULL */
  int result;          /* written before `done` is set */
  uint64_t elapsed_ns; /* written before `done` is set */
  _Atomic int done;
} tl_test_waiter_t;

static inline void
tl__test_waiter_main(void *arg)
{
  tl_test_waiter_t *tw = arg;
  uint64_t start = uv_hrtime();
  int r = tl_wait(tw->addr, tw->width, tw->expected, tw->timeout_ms, NULL);

  tw->elapsed_ns = uv_hrtime() - start;
  tw->result = r;
  if (r == TL_RESULT_OK && tw->log != NULL)
    tl_test_log_add(tw->log, tw->index);
  atomic_store(&tw->done, 1);
}

/* Waits until `addr` holds `enqueued` waiters and returns 1; or returns 0
 * as soon as `*unless` is set (when not NULL). A test whose order depends on
 * a waiter with a short timeout passes that waiter's `done` here: on a
 * machine so loaded that the waiter timed out before the others were
 * enqueued, the test retries with a longer timeout instead of failing. */
static inline int
tl_test_wait_enqueued(void *addr, size_t enqueued, _Atomic int *unless)
{
  int seen = 0;
  WAIT_UNTIL((seen = tl_waiter_count(addr) == enqueued) ||
             (unless != NULL && atomic_load(unless)));
  return seen;
}

/* Starts a thread waiting on `addr` and returns once it is enqueued, i.e.
 * once the address holds `enqueued` waiters (see tl_test_wait_enqueued for
 * `unless`). Starting waiters one after the other this way fixes their FIFO
 * order. */
static inline int
tl_test_waiter_start_unless(tl_test_waiter_t *tw, void *addr, int width,
                            int64_t expected, double timeout_ms, int index,
                            tl_test_log_t *log, size_t enqueued,
                            _Atomic int *unless)
{
  tw->addr = addr;
  tw->width = width;
  tw->expected = expected;
  tw->timeout_ms = timeout_ms;
  tw->index = index;
  tw->log = log;
  tw->result = -1;
  tw->elapsed_ns = 0;
  atomic_store(&tw->done, 0);
  ASSERT_OK(uv_thread_create(&tw->thread, tl__test_waiter_main, tw));
  return tl_test_wait_enqueued(addr, enqueued, unless);
}

static inline void
tl_test_waiter_start(tl_test_waiter_t *tw, void *addr, int width,
                     int64_t expected, double timeout_ms, int index,
                     tl_test_log_t *log, size_t enqueued)
{
  tl_test_waiter_start_unless(tw, addr, width, expected, timeout_ms, index, log,
                              enqueued, NULL);
}

/* Joins the thread and returns its result. */
static inline int
tl_test_waiter_join(tl_test_waiter_t *tw)
{
  ASSERT_OK(uv_thread_join(&tw->thread));
  ASSERT_EQ(atomic_load(&tw->done), 1);
  return tw->result;
}

#endif /* TL_TEST_H_ */
