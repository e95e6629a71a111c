/* The lock policy of the core (src/lock.c, TL_LOCK_BARGE), with the
 * compare-exchange paths that lib/LockWord.js runs in JavaScript: running
 * threads take a free word while others wait, one woken waiter at a time
 * (LOCK_WOKEN) competes or sleeps again in its place, slices end in a
 * hand-off (TL_LOCK_HANDOFF), also to a woken waiter still on its way.
 * Sync and async waiters, under the sanitizers.
 */
#include <math.h>

#include "test.h"

#define WORD(p) ((_Atomic int32_t *)(p))
#define MODE TL_LOCK_BARGE

/* lib/LockWord.js fast(): 0 -> id, or a word without an owner, bits kept. */
static int
barge_fast(int32_t *word, uint32_t id)
{
  int32_t v = 0;

  if (atomic_compare_exchange_strong(WORD(word), &v, (int32_t)id))
    return 1;
  while ((v & TL_LOCK_ID_MASK) == 0)
    if (atomic_compare_exchange_weak(WORD(word), &v, v | (int32_t)id))
      return 1;
  return 0;
}

/* lib/LockWord.js unlock(): a compare-exchange while the word is exactly
 * the owner's id; the core otherwise, with TL_LOCK_HANDOFF when the slice
 * is over. */
static void
barge_release(int32_t *word, uint32_t id, int slice_over)
{
  int32_t v = (int32_t)id;

  if (atomic_compare_exchange_strong(WORD(word), &v, 0))
    return;
  ASSERT_EQ((uint32_t)(v & TL_LOCK_ID_MASK), id);
  ASSERT_OK(tl_gate_release(word, TL_GATE_LOCK, id,
                            MODE | (slice_over ? TL_LOCK_HANDOFF : 0)));
}

/* An async request; the settle callback posts the semaphore, woken or
 * granted, as the glue queues the node for its thread. */
typedef struct {
  tl_waiter_t w; /* first, so that the callback can cast back */
  uv_sem_t sem;
} async_req_t;

static void
async_settle(tl_waiter_t *w)
{
  /* Granted, or woken to compete (it stays queued until it tries). */
  ASSERT(atomic_load(&w->state) == TL_NOTIFIED ||
         atomic_load(&w->state) == TL_WOKEN);
  uv_sem_post(&((async_req_t *)w)->sem);
}

/* What src/ready.c does for an async lock request: wait for the settle; a
 * wake without a grant competes again (or yields and waits on). */
static void
barge_acquire_async(async_req_t *a, int32_t *word, uint32_t id)
{
  int r;

  if (barge_fast(word, id))
    return;
  tl_waiter_init_async(&a->w, async_settle);
  r = tl_gate_acquire_async(&a->w, word, TL_GATE_LOCK, id, MODE);
  while (r == TL_RESULT_PENDING) {
    uv_sem_wait(&a->sem);
    /* Granted, or woken: the retry tells (a woken request may be granted
     * while it is on its way, so `granted` is read under the lock). */
    r = tl_gate_retry_async(&a->w);
  }
  ASSERT_EQ(r, TL_RESULT_ACQUIRED);
}

static void
barge_acquire(int32_t *word, uint32_t id)
{
  if (!barge_fast(word, id))
    ASSERT_EQ(tl_gate_acquire(word, TL_GATE_LOCK, id, MODE, INFINITY, NULL),
              TL_RESULT_ACQUIRED);
}

/* The same for the writers of a read-write lock word (lib/RWLock.js through
 * lib/LockWord.js); readers always go through the core, which counts them
 * per thread. */
static int
rw_write_fast(int32_t *word, uint32_t id)
{
  int32_t v = 0;
  int32_t own = (int32_t)(TL_RW_WRITER | id);

  if (atomic_compare_exchange_strong(WORD(word), &v, own))
    return 1;
  while ((v & (TL_RW_WRITER | TL_RW_MASK)) == 0)
    if (atomic_compare_exchange_weak(WORD(word), &v, v | own))
      return 1;
  return 0;
}

static void
rw_write_release(int32_t *word, uint32_t id, int slice_over)
{
  int32_t own = (int32_t)(TL_RW_WRITER | id);
  int32_t v = own;

  if (atomic_compare_exchange_strong(WORD(word), &v, 0))
    return;
  ASSERT_EQ(v & (TL_RW_WRITER | TL_RW_MASK), own);
  ASSERT_OK(tl_gate_release(word, TL_GATE_WRITE, id,
                            MODE | (slice_over ? TL_LOCK_HANDOFF : 0)));
}

static void
rw_read(int32_t *word, uint32_t id, _Atomic int *writers_inside)
{
  ASSERT_EQ(tl_gate_acquire(word, TL_GATE_READ, id, 0, INFINITY, NULL),
            TL_RESULT_ACQUIRED);
  ASSERT_EQ(atomic_load(writers_inside), 0);
  ASSERT_OK(tl_gate_release(word, TL_GATE_READ, id, 0));
}

typedef struct {
  uv_thread_t thread;
  int32_t *word;
  uint32_t id;
  int iterations;
  int64_t *counter;
  _Atomic int *writers_inside;
} rw_worker_t;

/* Writers (one in eight rounds a reader) with a window in the counter and
 * random slice ends; readers check that no writer is inside. */
static void
rw_worker_main(void *arg)
{
  rw_worker_t *wk = arg;
  tl_rng_t rng;

  tl_thread_register(wk->id);
  tl_rng_seed(&rng, wk->id * 104729u + 3);
  for (int i = 0; i < wk->iterations; i++) {
    uint64_t dice = tl_rng_next(&rng);

    if (dice % 8 == 0) {
      rw_read(wk->word, wk->id, wk->writers_inside);
      continue;
    }
    /* One request in four may not barge, as a thread's later write
     * requests while an earlier one waits: woken, it must still take a free
     * word, or nobody would. */
    if (dice % 4 == 1 || !rw_write_fast(wk->word, wk->id))
      ASSERT_EQ(tl_gate_acquire(wk->word, TL_GATE_WRITE, wk->id,
                                dice % 4 == 1 ? 0 : MODE, INFINITY, NULL),
                TL_RESULT_ACQUIRED);
    ASSERT_EQ(atomic_fetch_add(wk->writers_inside, 1), 0);
    int64_t v = *wk->counter;
    if (dice % 64 == 1)
      uv_sleep(0);
    else
      for (int k = 0; k < 20; k++)
        tl_cpu_relax();
    *wk->counter = v + 1;
    atomic_fetch_sub(wk->writers_inside, 1);
    rw_write_release(wk->word, wk->id, dice % 32 == 3);
  }
  tl_thread_unregister(wk->id);
}

static void
test_rw_writers(int threads, int iterations)
{
  enum { MAXT = 16 };
  int32_t word = 0;
  int64_t counter = 0;
  _Atomic int writers_inside = 0;
  rw_worker_t wk[MAXT];
  int64_t writes = 0;

  ASSERT_LE(threads, MAXT);
  for (int i = 0; i < threads; i++) {
    wk[i] = (rw_worker_t){ .word = &word,
                           .id = (uint32_t)(i + 1),
                           .iterations = iterations,
                           .counter = &counter,
                           .writers_inside = &writers_inside };
    ASSERT_OK(uv_thread_create(&wk[i].thread, rw_worker_main, &wk[i]));
  }
  for (int i = 0; i < threads; i++)
    ASSERT_OK(uv_thread_join(&wk[i].thread));
  for (int i = 0; i < threads; i++) {
    tl_rng_t rng;
    tl_rng_seed(&rng, wk[i].id * 104729u + 3);
    for (int k = 0; k < iterations; k++)
      writes += tl_rng_next(&rng) % 8 != 0;
  }
  ASSERT_EQ(counter, writes);
  ASSERT_EQ(atomic_load(WORD(&word)), 0);
  tl_test_quiescent();
  printf("barge: rw writers: %d threads x %d\n", threads, iterations);
}

typedef struct {
  uv_thread_t thread;
  int32_t *word;
  uint32_t id;
  int iterations;
  int use_async;
  int64_t *counter;
} worker_t;

/* Mutual exclusion: a plain counter with a window between its load and its
 * store, random pauses inside and outside, and slices that end at random
 * (about one release in 32 hands over). */
static void
worker_main(void *arg)
{
  worker_t *wk = arg;
  async_req_t a;
  tl_rng_t rng;

  tl_thread_register(wk->id);
  tl_rng_seed(&rng, wk->id * 7919u + 1);
  ASSERT_OK(uv_sem_init(&a.sem, 0));
  for (int i = 0; i < wk->iterations; i++) {
    uint64_t dice = tl_rng_next(&rng);

    if (wk->use_async)
      barge_acquire_async(&a, wk->word, wk->id);
    else
      barge_acquire(wk->word, wk->id);
    ASSERT_EQ((uint32_t)(atomic_load(WORD(wk->word)) & TL_LOCK_ID_MASK),
              wk->id);

    int64_t v = *wk->counter;
    if (dice % 64 == 0)
      uv_sleep(0);
    else
      for (int k = 0; k < 20; k++)
        tl_cpu_relax();
    *wk->counter = v + 1;

    barge_release(wk->word, wk->id, dice % 32 == 1);
    if (dice % 97 == 2)
      uv_sleep(0);
  }
  uv_sem_destroy(&a.sem);
  tl_thread_unregister(wk->id);
}

static void
test_mutual_exclusion(int threads, int iterations)
{
  enum { MAXT = 16 };
  int32_t word = 0;
  int64_t counter = 0;
  worker_t wk[MAXT];

  ASSERT_LE(threads, MAXT);
  for (int i = 0; i < threads; i++) {
    wk[i] = (worker_t){ .word = &word,
                        .id = (uint32_t)(i + 1),
                        .iterations = iterations,
                        .use_async = i % 3 == 2,
                        .counter = &counter };
    ASSERT_OK(uv_thread_create(&wk[i].thread, worker_main, &wk[i]));
  }
  for (int i = 0; i < threads; i++)
    ASSERT_OK(uv_thread_join(&wk[i].thread));
  ASSERT_EQ(counter, (int64_t)threads * iterations);
  /* Every woken waiter gave its bit back; nobody owns the word. */
  ASSERT_EQ(atomic_load(WORD(&word)), 0);
  tl_test_quiescent();
  printf("barge: mutual exclusion: %d threads x %d\n", threads, iterations);
}

typedef struct {
  uv_thread_t thread;
  int32_t *word;
  uint32_t id;
  _Atomic int got;
} taker_t;

static void
taker_main(void *arg)
{
  taker_t *t = arg;

  barge_acquire(t->word, t->id);
  atomic_store(&t->got, 1);
  barge_release(t->word, t->id, 0);
}

/* A release wakes the queued waiter; the owner takes the word again at once
 * and its slice ends while the waiter is still on its way: the hand-off
 * grants the woken waiter directly (the word names it, and no running
 * thread can take it), and the waiter finds the grant when it runs. If the
 * waiter was quicker, it went back to sleep and the hand-off grants it
 * all the same: either way it gets the lock next. */
static void
test_slice_end_passes_to_woken_waiter(int rounds)
{
  int passing = 0;

  tl_thread_register(1);
  for (int i = 0; i < rounds; i++) {
    int32_t word = 0;
    taker_t t = { .word = &word, .id = 2 };
    int32_t v;

    barge_acquire(&word, 1);
    tl_thread_register(2);
    ASSERT_OK(uv_thread_create(&t.thread, taker_main, &t));
    ASSERT_EQ(tl_test_wait_enqueued(&word, 1, NULL), 1);
    barge_release(&word, 1, 0); /* wakes the waiter: LOCK_WOKEN */
    if (barge_fast(&word, 1)) {
      barge_release(&word, 1, 1);
      v = atomic_load(WORD(&word));
      if ((v & TL_LOCK_ID_MASK) == 2) {
        passing++;
        /* Nobody but the woken waiter may take it now. */
        ASSERT_EQ(barge_fast(&word, 3), 0);
      }
    }
    ASSERT_OK(uv_thread_join(&t.thread));
    ASSERT_EQ(atomic_load(&t.got), 1);
    ASSERT_EQ(atomic_load(WORD(&word)), 0);
    tl_thread_unregister(2);
    tl_test_quiescent();
  }
  tl_thread_unregister(1);
  printf("barge: slice end with a waiter on its way: %d of %d rounds handed "
         "it over\n",
         passing, rounds);
}

/* A woken async waiter that never tries (its thread went away) gives the
 * woken bit back, and a word passed to it is freed for the next waiter. */
static void
test_abandoned_wake(void)
{
  int32_t word = 0;
  async_req_t a;
  taker_t t = { .word = &word, .id = 3 };

  tl_thread_register(1);
  tl_thread_register(2);
  tl_thread_register(3);
  ASSERT_OK(uv_sem_init(&a.sem, 0));
  barge_acquire(&word, 1);
  tl_waiter_init_async(&a.w, async_settle);
  ASSERT_EQ(tl_gate_acquire_async(&a.w, &word, TL_GATE_LOCK, 2, MODE),
            TL_RESULT_PENDING);
  ASSERT_OK(uv_thread_create(&t.thread, taker_main, &t));
  ASSERT_EQ(tl_test_wait_enqueued(&word, 2, NULL), 1);
  barge_release(&word, 1, 0); /* wakes the async request, first in line */
  uv_sem_wait(&a.sem);
  ASSERT(!a.w.granted); /* an event loop's request is never handed it */
  ASSERT(atomic_load(WORD(&word)) & TL_LOCK_WOKEN);
  if ((atomic_load(WORD(&word)) & TL_LOCK_ID_MASK) == 0) {
    ASSERT(barge_fast(&word, 1));
    barge_release(&word, 1, 1); /* slice over: handed to the queued taker */
  }
  /* Otherwise the request had waited 1 ms (a slow machine), and the
   * release handed the lock to the taker, the oldest waiter that can take
   * it up at once (lock.c, I7), as it woke the request. Either way the
   * request's thread goes away before it could try, and the taker gets the
   * lock. */
  tl_gate_abandon(&a.w);
  ASSERT_OK(uv_thread_join(&t.thread));
  ASSERT_EQ(atomic_load(&t.got), 1);
  ASSERT_EQ(atomic_load(WORD(&word)), 0);
  uv_sem_destroy(&a.sem);
  tl_thread_unregister(3);
  tl_thread_unregister(2);
  tl_thread_unregister(1);
  tl_test_quiescent();
  printf("barge: abandoned wake\n");
}

int
main(int argc, char **argv)
{
  tl_watchdog_t wd;
  int iterations = (int)tl_test_setting(argc, argv, 1, "TL_LOCK_ITERS", 20000);
  int threads = (int)tl_test_setting(argc, argv, 2, "TL_LOCK_THREADS", 6);
  static const unsigned spins[] = { 0, 2000 };

  tl_watchdog_start(&wd, "barge", 120, NULL);
  for (size_t s = 0; s < sizeof(spins) / sizeof(spins[0]); s++) {
    tl_set_spin(spins[s]);
    test_mutual_exclusion(threads, iterations);
    test_rw_writers(threads, iterations);
    test_slice_end_passes_to_woken_waiter(50);
    test_abandoned_wake();
  }
  tl_watchdog_stop(&wd);
  printf("barge: ok\n");
  return 0;
}
