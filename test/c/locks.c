/* The lock operations of the core: mutual exclusion together with the
 * compare-exchange fast paths that run outside it, FIFO grants across sync
 * and async requests, EDEADLK, ENOTOWNER, the waiters bit after timeouts and
 * cancels, and owner death with and without waiters.
 *
 * Ids stand for threads: a test registers an id for as long as the "thread"
 * it stands for is alive, exactly like the glue does per env.
 */
#include <math.h>

#include "test.h"

#define WORD(p) ((_Atomic int32_t *)(p))

/* The uncontended paths that lib/ runs in JavaScript: one compare-exchange
 * each, falling back to the core. */
static int
acquire_fast(int32_t *word, uint32_t id, double timeout_ms)
{
  int32_t expected = 0;
  if (atomic_compare_exchange_strong(WORD(word), &expected, (int32_t)id))
    return TL_RESULT_ACQUIRED;
  return tl_lock_acquire(word, id, timeout_ms, NULL);
}

static int
release_fast(int32_t *word, uint32_t id)
{
  int32_t expected = (int32_t)id;
  if (atomic_compare_exchange_strong(WORD(word), &expected, 0))
    return 0;
  return tl_lock_release(word, id);
}

/* An async lock request; the settle callback posts the semaphore. */
typedef struct {
  tl_waiter_t w; /* first, so that the callback can cast back */
  int index;
  tl_test_log_t *log; /* may be NULL */
  uv_sem_t sem;
  _Atomic int settled;
  uint8_t owner_died; /* copied by the callback */
} async_lock_t;

static void
async_lock_settle(tl_waiter_t *w)
{
  async_lock_t *a = (async_lock_t *)w;

  ASSERT_EQ(atomic_load(&w->state), TL_NOTIFIED);
  /* The grant happened before the callback: the word names the new owner. */
  ASSERT_EQ(atomic_load(WORD(w->addr)) & TL_LOCK_ID_MASK, w->lock_id);
  a->owner_died = w->owner_died;
  if (a->log != NULL)
    tl_test_log_add(a->log, a->index);
  atomic_fetch_add(&a->settled, 1);
  uv_sem_post(&a->sem);
}

static void
async_lock_init(async_lock_t *a, int index, tl_test_log_t *log)
{
  tl_waiter_init_async(&a->w, async_lock_settle);
  a->index = index;
  a->log = log;
  a->owner_died = 0;
  atomic_store(&a->settled, 0);
  ASSERT_OK(uv_sem_init(&a->sem, 0));
}

/* A thread that registers `id`, acquires once, logs, optionally releases,
 * and unregisters. */
typedef struct {
  uv_thread_t thread;
  int32_t *word;
  uint32_t id;
  double timeout_ms;
  int index;
  tl_test_log_t *log; /* may be NULL */
  int result;         /* these three are written before `done` */
  int32_t word_seen;  /* the word right after the acquire */
  uint64_t elapsed_ns;
  _Atomic int done;
} locker_t;

static void
locker_main(void *arg)
{
  locker_t *l = arg;
  uint64_t start = uv_hrtime();
  int r = tl_lock_acquire(l->word, l->id, l->timeout_ms, NULL);

  l->elapsed_ns = uv_hrtime() - start;
  l->word_seen = atomic_load(WORD(l->word));
  l->result = r;
  if (r == TL_RESULT_ACQUIRED || r == TL_RESULT_OWNER_DIED) {
    if (l->log != NULL)
      tl_test_log_add(l->log, l->index);
    ASSERT_OK(tl_lock_release(l->word, l->id));
  }
  tl_thread_unregister(l->id);
  atomic_store(&l->done, 1);
}

/* Starts a locker and returns once the word has `enqueued` waiters; see
 * tl_test_wait_enqueued for `unless` and the result. */
static int
locker_start_unless(locker_t *l, int32_t *word, uint32_t id, double timeout_ms,
                    int index, tl_test_log_t *log, size_t enqueued,
                    _Atomic int *unless)
{
  l->word = word;
  l->id = id;
  l->timeout_ms = timeout_ms;
  l->index = index;
  l->log = log;
  l->result = -1;
  atomic_store(&l->done, 0);
  tl_thread_register(id);
  ASSERT_OK(uv_thread_create(&l->thread, locker_main, l));
  return tl_test_wait_enqueued(word, enqueued, unless);
}

static void
locker_start(locker_t *l, int32_t *word, uint32_t id, double timeout_ms,
             int index, tl_test_log_t *log, size_t enqueued)
{
  locker_start_unless(l, word, id, timeout_ms, index, log, enqueued, NULL);
}

static int
locker_join(locker_t *l)
{
  ASSERT_OK(uv_thread_join(&l->thread));
  ASSERT_EQ(atomic_load(&l->done), 1);
  return l->result;
}

/* Mutual exclusion: a plain counter incremented with a deliberate window
 * between its load and its store by N threads, some through the fast paths
 * and the core, one through async requests. ThreadSanitizer also checks that
 * every hand-off orders the critical sections. */
typedef struct {
  uv_thread_t thread;
  int32_t *word;
  uint32_t id;
  int iterations;
  int use_async;
  int64_t *counter;
} worker_t;

static void
worker_main(void *arg)
{
  worker_t *wk = arg;
  async_lock_t a;

  tl_thread_register(wk->id);
  async_lock_init(&a, 0, NULL);
  for (int i = 0; i < wk->iterations; i++) {
    int r;

    if (wk->use_async) {
      r = tl_lock_acquire_async(&a.w, wk->word, wk->id);
      if (r == TL_RESULT_PENDING) {
        uv_sem_wait(&a.sem);
        ASSERT_EQ(a.owner_died, 0);
        r = TL_RESULT_ACQUIRED;
      }
    } else if (i % 2 == 0) {
      r = acquire_fast(wk->word, wk->id, INFINITY);
    } else {
      r = tl_lock_acquire(wk->word, wk->id, INFINITY, NULL);
    }
    ASSERT_EQ(r, TL_RESULT_ACQUIRED);
    ASSERT_EQ(atomic_load(WORD(wk->word)) & TL_LOCK_ID_MASK, wk->id);

    int64_t v = *wk->counter;
    if (i % 16 == 0)
      uv_sleep(0);
    else
      for (int k = 0; k < 20; k++)
        tl_cpu_relax();
    *wk->counter = v + 1;

    if (i % 3 == 0)
      ASSERT_OK(tl_lock_release(wk->word, wk->id));
    else
      ASSERT_OK(release_fast(wk->word, wk->id));
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
  uint64_t start = uv_hrtime();

  ASSERT_LE(threads, MAXT);
  for (int i = 0; i < threads; i++) {
    wk[i] = (worker_t){ .word = &word,
                        .id = (uint32_t)(i + 1),
                        .iterations = iterations,
                        .use_async = i == threads - 1,
                        .counter = &counter };
    ASSERT_OK(uv_thread_create(&wk[i].thread, worker_main, &wk[i]));
  }
  for (int i = 0; i < threads; i++)
    ASSERT_OK(uv_thread_join(&wk[i].thread));
  ASSERT_EQ(counter, (int64_t)threads * iterations);
  ASSERT_EQ(atomic_load(WORD(&word)), 0);
  printf("locks: mutual exclusion: %d threads x %d, %.0f ns per section\n",
         threads, iterations,
         (double)(uv_hrtime() - start) / ((double)threads * iterations));
  tl_test_quiescent();
}

/* Grants follow the order of the requests, across sync threads and an async
 * request, and the waiters bit stays set while anyone waits. */
static void
test_fifo_grants(void)
{
  enum { N = 6, ASYNC_AT = 3, OWNER = 100, ASYNC_ID = 50 };
  int32_t word = 0;
  locker_t l[N];
  async_lock_t a;
  tl_test_log_t log;

  tl_test_log_init(&log);
  tl_thread_register(OWNER);
  ASSERT_EQ(tl_lock_acquire(&word, OWNER, INFINITY, NULL), TL_RESULT_ACQUIRED);
  ASSERT_EQ(atomic_load(WORD(&word)), OWNER);
  for (int i = 0; i < N; i++) {
    if (i == ASYNC_AT) {
      tl_thread_register(ASYNC_ID);
      async_lock_init(&a, i, &log);
      ASSERT_EQ(tl_lock_acquire_async(&a.w, &word, ASYNC_ID),
                TL_RESULT_PENDING);
      ASSERT_EQ(tl_waiter_count(&word), (size_t)i + 1);
      continue;
    }
    locker_start(&l[i], &word, (uint32_t)(i + 1), INFINITY, i, &log,
                 (size_t)i + 1);
  }
  ASSERT_EQ(atomic_load(WORD(&word)), OWNER | TL_LOCK_WAITERS);
#ifndef NDEBUG
  tl_check_table();
#endif
  /* The fast-path release must fail while waiters are queued. */
  int32_t expected = OWNER;
  ASSERT(!atomic_compare_exchange_strong(WORD(&word), &expected, 0));

  ASSERT_OK(tl_lock_release(&word, OWNER));
  /* The lockers before the async request run and release one by one; then
   * the async request holds the lock until this thread releases for it. */
  uv_sem_wait(&a.sem);
  ASSERT_EQ(a.owner_died, 0);
  ASSERT_EQ(atomic_load(WORD(&word)) & TL_LOCK_ID_MASK, ASYNC_ID);
  ASSERT(atomic_load(WORD(&word)) & TL_LOCK_WAITERS);
  ASSERT_OK(tl_lock_release(&word, ASYNC_ID));
  for (int i = 0; i < N; i++) {
    if (i != ASYNC_AT)
      ASSERT_EQ(locker_join(&l[i]), TL_RESULT_ACQUIRED);
  }
  for (int i = 0; i < N; i++)
    ASSERT_EQ(tl_test_log_get(&log, i), i);
  /* The last locker saw no waiters behind it. */
  ASSERT_EQ(l[N - 1].word_seen, N);
  ASSERT_EQ(atomic_load(WORD(&word)), 0);
  uv_sem_destroy(&a.sem);
  tl_thread_unregister(ASYNC_ID);
  tl_thread_unregister(OWNER);
  tl_test_quiescent();
}

/* A blocking acquire that could only be granted to the caller itself fails
 * with EDEADLK and changes nothing; an async request may queue behind its
 * own owner. */
static void
test_edeadlk(void)
{
  int32_t word = 0;
  async_lock_t a;

  tl_thread_register(7);
  tl_thread_register(8);
  ASSERT_EQ(tl_lock_acquire(&word, 7, INFINITY, NULL), TL_RESULT_ACQUIRED);
  /* Finite timeouts first, so that a missing check fails rather than
   * hangs. */
  ASSERT_EQ(tl_lock_acquire(&word, 7, 0, NULL), TL_EDEADLK);
  ASSERT_EQ(tl_lock_acquire(&word, 7, 10, NULL), TL_EDEADLK);
  ASSERT_EQ(tl_lock_acquire(&word, 7, INFINITY, NULL), TL_EDEADLK);
  ASSERT_EQ(atomic_load(WORD(&word)), 7);
  ASSERT_EQ(tl_waiter_count(&word), 0);

  /* The owner's own async request queues; a blocking one behind it would
   * wait for itself. */
  async_lock_init(&a, 0, NULL);
  ASSERT_EQ(tl_lock_acquire_async(&a.w, &word, 7), TL_RESULT_PENDING);
  ASSERT_EQ(atomic_load(WORD(&word)), 7 | TL_LOCK_WAITERS);
  ASSERT_EQ(tl_lock_acquire(&word, 7, 10, NULL), TL_EDEADLK);
  ASSERT_EQ(tl_lock_acquire(&word, 7, INFINITY, NULL), TL_EDEADLK);
  ASSERT_OK(tl_lock_release(&word, 7));
  ASSERT_EQ(atomic_load(&a.settled), 1);
  ASSERT_EQ(atomic_load(WORD(&word)), 7);
  ASSERT_OK(release_fast(&word, 7));
  ASSERT_EQ(atomic_load(WORD(&word)), 0);

  /* Queued behind another owner: a blocking acquire by the same id fails,
   * and cancelling the async request clears the waiters bit again. */
  ASSERT_EQ(acquire_fast(&word, 8, INFINITY), TL_RESULT_ACQUIRED);
  ASSERT_EQ(tl_lock_acquire_async(&a.w, &word, 7), TL_RESULT_PENDING);
  ASSERT_EQ(tl_lock_acquire(&word, 7, 10, NULL), TL_EDEADLK);
  ASSERT_EQ(tl_cancel(&a.w, TL_CANCELLED), 1);
  ASSERT_EQ(atomic_load(WORD(&word)), 8);
  ASSERT_OK(release_fast(&word, 8));
  ASSERT_EQ(atomic_load(&a.settled), 1);
  uv_sem_destroy(&a.sem);
  tl_thread_unregister(7);
  tl_thread_unregister(8);
  tl_test_quiescent();
}

/* Releasing a lock the caller does not hold fails and changes nothing. */
static void
test_enotowner(void)
{
  int32_t word = 0;
  locker_t l;

  tl_thread_register(5);
  ASSERT_EQ(tl_lock_release(&word, 5), TL_ENOTOWNER);
  ASSERT_EQ(atomic_load(WORD(&word)), 0);
  ASSERT_EQ(tl_lock_acquire(&word, 5, INFINITY, NULL), TL_RESULT_ACQUIRED);
  ASSERT_EQ(tl_lock_release(&word, 6), TL_ENOTOWNER);
  ASSERT_EQ(atomic_load(WORD(&word)), 5);

  /* With a waiter: the failed release grants nothing. */
  locker_start(&l, &word, 6, INFINITY, 0, NULL, 1);
  ASSERT_EQ(tl_lock_release(&word, 6), TL_ENOTOWNER);
  ASSERT_EQ(tl_lock_release(&word, 4), TL_ENOTOWNER);
  tl_test_sleep_ms(10);
  ASSERT_EQ(atomic_load(&l.done), 0);
  ASSERT_EQ(atomic_load(WORD(&word)), 5 | TL_LOCK_WAITERS);
  ASSERT_OK(tl_lock_release(&word, 5));
  ASSERT_EQ(locker_join(&l), TL_RESULT_ACQUIRED);
  ASSERT_EQ(atomic_load(WORD(&word)), 0);
  ASSERT_EQ(tl_lock_release(&word, 5), TL_ENOTOWNER);
  tl_thread_unregister(5);
  tl_test_quiescent();
}

/* A timed-out or cancelled request leaves; if it was the last waiter the
 * waiters bit goes too, so that the owner's fast release works again. */
static void
test_timeout_clears_waiters_bit(void)
{
  int32_t word = 0;
  locker_t l[3];
  tl_test_log_t log;
  async_lock_t a;

  tl_thread_register(1);
  ASSERT_EQ(acquire_fast(&word, 1, INFINITY), TL_RESULT_ACQUIRED);

  /* Timeout 0 on a held lock: TIMED_OUT at once, nothing left behind. */
  tl_thread_register(2);
  ASSERT_EQ(tl_lock_acquire(&word, 2, 0, NULL), TL_RESULT_TIMED_OUT);
  ASSERT_EQ(atomic_load(WORD(&word)), 1);
  tl_thread_unregister(2);

  /* The only waiter times out: the bit is cleared. */
  locker_start_unless(&l[0], &word, 2, 30, 0, NULL, 1, &l[0].done);
  ASSERT_EQ(locker_join(&l[0]), TL_RESULT_TIMED_OUT);
  ASSERT_GE(l[0].elapsed_ns, UINT64_C(30) * 1000000);
  ASSERT_EQ(atomic_load(WORD(&word)), 1);
  ASSERT_EQ(tl_waiter_count(&word), 0);

  /* Between two patient waiters: the bit stays, the order holds. The
   * middle one must still wait when the third enqueues; on a machine too
   * loaded for that, the case runs again with a longer timeout. */
  for (double timeout = 30;; timeout *= 2) {
    int started = 2, ok;

    ASSERT_LE(timeout, 8000);
    tl_test_log_init(&log);
    locker_start(&l[0], &word, 2, INFINITY, 0, &log, 1);
    ok = locker_start_unless(&l[1], &word, 3, timeout, 1, &log, 2, &l[1].done);
    if (ok) {
      started = 3;
      ok = locker_start_unless(&l[2], &word, 4, INFINITY, 2, &log, 3,
                               &l[1].done);
    }
    ASSERT_EQ(locker_join(&l[1]), TL_RESULT_TIMED_OUT);
    if (ok)
      break;
    tl_test_wait_enqueued(&word, (size_t)started - 1, NULL);
    ASSERT_OK(release_fast(&word, 1));
    ASSERT_EQ(locker_join(&l[0]), TL_RESULT_ACQUIRED);
    if (started == 3)
      ASSERT_EQ(locker_join(&l[2]), TL_RESULT_ACQUIRED);
    ASSERT_EQ(acquire_fast(&word, 1, INFINITY), TL_RESULT_ACQUIRED);
  }
  ASSERT_EQ(atomic_load(WORD(&word)), 1 | TL_LOCK_WAITERS);
#ifndef NDEBUG
  tl_check_table();
#endif
  ASSERT_OK(release_fast(&word, 1));
  ASSERT_EQ(locker_join(&l[0]), TL_RESULT_ACQUIRED);
  ASSERT_EQ(locker_join(&l[2]), TL_RESULT_ACQUIRED);
  ASSERT_EQ(tl_test_log_get(&log, 0), 0);
  ASSERT_EQ(tl_test_log_get(&log, 1), 2);
  ASSERT_EQ(atomic_load(WORD(&word)), 0);

  /* The same for an async request cancelled by its owner. */
  ASSERT_EQ(acquire_fast(&word, 1, INFINITY), TL_RESULT_ACQUIRED);
  tl_thread_register(9);
  async_lock_init(&a, 0, NULL);
  ASSERT_EQ(tl_lock_acquire_async(&a.w, &word, 9), TL_RESULT_PENDING);
  ASSERT_EQ(atomic_load(WORD(&word)), 1 | TL_LOCK_WAITERS);
  ASSERT_EQ(tl_cancel(&a.w, TL_TIMED_OUT), 1);
  ASSERT_EQ(atomic_load(WORD(&word)), 1);
  ASSERT_OK(release_fast(&word, 1));
  ASSERT_EQ(atomic_load(&a.settled), 0);
  uv_sem_destroy(&a.sem);
  tl_thread_unregister(9);
  tl_thread_unregister(1);
  tl_test_quiescent();
}

/* A thread that registers, takes the lock, and dies holding it when told. */
typedef struct {
  uv_thread_t thread;
  int32_t *word;
  uint32_t id;
  _Atomic int held;
  _Atomic int die;
} holder_t;

static void
holder_main(void *arg)
{
  holder_t *h = arg;

  ASSERT_EQ(acquire_fast(h->word, h->id, INFINITY), TL_RESULT_ACQUIRED);
  atomic_store(&h->held, 1);
  while (!atomic_load(&h->die))
    uv_sleep(1);
  tl_thread_unregister(h->id);
}

static void
holder_start(holder_t *h, int32_t *word, uint32_t id, int die_at_once)
{
  h->word = word;
  h->id = id;
  atomic_store(&h->held, 0);
  atomic_store(&h->die, die_at_once);
  tl_thread_register(id);
  ASSERT(tl_thread_alive(id));
  ASSERT_OK(uv_thread_create(&h->thread, holder_main, h));
  WAIT_UNTIL(atomic_load(&h->held));
}

/* The owner dies while others wait: the first waiter takes the lock over
 * and is told so; the next one gets an ordinary grant. */
static void
test_owner_death_with_waiters(void)
{
  int32_t word = 0;
  holder_t h;
  locker_t l[2];
  tl_test_log_t log;
  async_lock_t a;

  tl_test_log_init(&log);
  holder_start(&h, &word, 20, 0);
  locker_start(&l[0], &word, 21, INFINITY, 0, &log, 1);
  locker_start(&l[1], &word, 22, INFINITY, 1, &log, 2);
  atomic_store(&h.die, 1);
  ASSERT_OK(uv_thread_join(&h.thread));
  ASSERT(!tl_thread_alive(20));
  ASSERT_EQ(locker_join(&l[0]), TL_RESULT_OWNER_DIED);
  ASSERT_EQ(l[0].word_seen, 21 | TL_LOCK_OWNER_DIED | TL_LOCK_WAITERS);
  ASSERT_EQ(locker_join(&l[1]), TL_RESULT_ACQUIRED);
  ASSERT_EQ(l[1].word_seen, 22);
  ASSERT_EQ(tl_test_log_get(&log, 0), 0);
  ASSERT_EQ(tl_test_log_get(&log, 1), 1);
  ASSERT_EQ(atomic_load(WORD(&word)), 0);

  /* An async request first in line is told the same way. */
  holder_start(&h, &word, 23, 0);
  tl_thread_register(24);
  async_lock_init(&a, 0, NULL);
  ASSERT_EQ(tl_lock_acquire_async(&a.w, &word, 24), TL_RESULT_PENDING);
  atomic_store(&h.die, 1);
  ASSERT_OK(uv_thread_join(&h.thread));
  uv_sem_wait(&a.sem);
  ASSERT_EQ(a.owner_died, 1);
  ASSERT_EQ(atomic_load(WORD(&word)), 24 | TL_LOCK_OWNER_DIED);
  /* The owner-died bit makes the fast release fail over to the core. */
  int32_t expected = 24;
  ASSERT(!atomic_compare_exchange_strong(WORD(&word), &expected, 0));
  ASSERT_OK(tl_lock_release(&word, 24));
  ASSERT_EQ(atomic_load(WORD(&word)), 0);
  uv_sem_destroy(&a.sem);
  tl_thread_unregister(24);
  tl_test_quiescent();
}

/* The owner dies with nobody waiting: the next acquirer, sync or async,
 * takes the lock over and is told so; after a release all is normal. */
static void
test_owner_death_without_waiters(void)
{
  int32_t word = 0;
  holder_t h;
  async_lock_t a;

  holder_start(&h, &word, 30, 1);
  ASSERT_OK(uv_thread_join(&h.thread));
  ASSERT_EQ(atomic_load(WORD(&word)), 30);
  tl_thread_register(31);
  ASSERT_EQ(acquire_fast(&word, 31, INFINITY), TL_RESULT_OWNER_DIED);
  ASSERT_EQ(atomic_load(WORD(&word)), 31 | TL_LOCK_OWNER_DIED);
  ASSERT_OK(release_fast(&word, 31));
  ASSERT_EQ(atomic_load(WORD(&word)), 0);
  ASSERT_EQ(acquire_fast(&word, 31, INFINITY), TL_RESULT_ACQUIRED);
  ASSERT_OK(release_fast(&word, 31));

  holder_start(&h, &word, 32, 1);
  ASSERT_OK(uv_thread_join(&h.thread));
  async_lock_init(&a, 0, NULL);
  ASSERT_EQ(tl_lock_acquire_async(&a.w, &word, 31), TL_RESULT_OWNER_DIED);
  ASSERT_EQ(atomic_load(WORD(&word)), 31 | TL_LOCK_OWNER_DIED);
  ASSERT_OK(tl_lock_release(&word, 31));
  ASSERT_EQ(atomic_load(&a.settled), 0);
  uv_sem_destroy(&a.sem);

  /* A timed acquire takes over as well, without waiting for its timeout. */
  holder_start(&h, &word, 33, 1);
  ASSERT_OK(uv_thread_join(&h.thread));
  ASSERT_EQ(tl_lock_acquire(&word, 31, 0, NULL), TL_RESULT_OWNER_DIED);
  ASSERT_OK(tl_lock_release(&word, 31));
  tl_thread_unregister(31);
  ASSERT_EQ(atomic_load(WORD(&word)), 0);
  tl_test_quiescent();
}

/* The owner dies while acquirers arrive: whether a request was queued
 * before the death or comes after it, exactly one acquirer per death is told
 * that the owner died, and nobody waits forever. */
static void
test_owner_death_race(int rounds)
{
  enum { K = 4 };
  int32_t word = 0;

  for (int round = 0; round < rounds; round++) {
    holder_t h;
    locker_t l[K];
    int died = 0;

    holder_start(&h, &word, 40, 0);
    for (int i = 0; i < K; i++) {
      l[i].word = &word;
      l[i].id = (uint32_t)(41 + i);
      l[i].timeout_ms = INFINITY;
      l[i].index = i;
      l[i].log = NULL;
      atomic_store(&l[i].done, 0);
      tl_thread_register(l[i].id);
      ASSERT_OK(uv_thread_create(&l[i].thread, locker_main, &l[i]));
      if (i == round % K)
        atomic_store(&h.die, 1);
    }
    ASSERT_OK(uv_thread_join(&h.thread));
    for (int i = 0; i < K; i++) {
      int r = locker_join(&l[i]);
      ASSERT(r == TL_RESULT_ACQUIRED || r == TL_RESULT_OWNER_DIED);
      died += r == TL_RESULT_OWNER_DIED;
    }
    ASSERT_EQ(died, 1);
    ASSERT_EQ(atomic_load(WORD(&word)), 0);
    tl_test_quiescent();
  }
}

int
main(int argc, char **argv)
{
  tl_watchdog_t wd;
  int iterations = (int)tl_test_setting(argc, argv, 1, "TL_LOCK_ITERS", 10000);
  int threads = (int)tl_test_setting(argc, argv, 2, "TL_LOCK_THREADS", 4);
  static const unsigned spins[] = { 0, 2000 };

  tl_watchdog_start(&wd, "locks", 120, NULL);
  for (size_t s = 0; s < sizeof(spins) / sizeof(spins[0]); s++) {
    tl_set_spin(spins[s]);
    test_mutual_exclusion(threads, iterations);
    test_fifo_grants();
    test_edeadlk();
    test_enotowner();
    test_timeout_clears_waiters_bit();
    test_owner_death_with_waiters();
    test_owner_death_without_waiters();
    test_owner_death_race(20);
  }
  tl_test_quiescent();
  tl_watchdog_stop(&wd);
  printf("locks: ok\n");
  return 0;
}
