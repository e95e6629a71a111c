/* Async waiters: one FIFO with the sync waiters of the same address, the
 * settle callback on the notifying thread, cancel versus notify (exactly one
 * of them ends a waiter), the zero-timeout path, node reuse, and ownership
 * passing to the settle callback (which may free the node at once).
 */
#include <math.h>

#include "test.h"

typedef struct {
  tl_waiter_t w; /* first, so that the settle callback can cast back */
  int index;
  tl_test_log_t *log;     /* may be NULL */
  uv_thread_t settled_on; /* written by the callback before `settled` */
  _Atomic int settled;    /* how many times the callback ran */
} async_t;

static _Atomic int total_settled;

/* Runs on the notifying thread with the bucket lock held, so it records and
 * returns; it must not call back into the core. */
static void
on_settle(tl_waiter_t *w)
{
  async_t *a = (async_t *)w;

  ASSERT_EQ(atomic_load(&w->state), TL_NOTIFIED);
  a->settled_on = uv_thread_self();
  if (a->log != NULL)
    tl_test_log_add(a->log, a->index);
  atomic_fetch_add(&a->settled, 1);
  atomic_fetch_add(&total_settled, 1);
}

static void
async_init(async_t *a, int index, tl_test_log_t *log)
{
  tl_waiter_init_async(&a->w, on_settle);
  a->index = index;
  a->log = log;
  atomic_store(&a->settled, 0);
}

typedef struct {
  void *addr;
  int64_t count;
  int64_t result;
} notify_arg_t;

static void
notify_main(void *arg)
{
  notify_arg_t *na = arg;
  na->result = tl_notify(na->addr, na->count);
}

/* Sync and async waiters on one address wake in the order they began to
 * wait, whatever their kind; the settle callback runs on the notifier. */
static void
test_mixed_fifo(int width)
{
  int64_t cell = 0;
  async_t a[3];
  tl_test_waiter_t s[3];
  tl_test_log_t log;
  uv_thread_t self = uv_thread_self();
  size_t n = 0;

  /* Order: a0 s1 a2 s3 a4 s5 (the index is the expected wake order). */
  tl_test_log_init(&log);
  for (int i = 0; i < 3; i++) {
    async_init(&a[i], 2 * i, &log);
    ASSERT_EQ(tl_wait_async(&a[i].w, &cell, width, 0, 0), TL_RESULT_PENDING);
    ASSERT_EQ(tl_waiter_count(&cell), ++n);
    tl_test_waiter_start(&s[i], &cell, width, 0, INFINITY, 2 * i + 1, &log,
                         ++n);
  }
#ifndef NDEBUG
  tl_check_table();
#endif
  for (int i = 0; i < 6; i++) {
    ASSERT_EQ(tl_notify(&cell, 1), 1);
    ASSERT_EQ(tl_test_log_get(&log, i), i);
    if (i % 2 == 0) {
      /* The callback ran inside tl_notify, on this thread. */
      ASSERT_EQ(atomic_load(&a[i / 2].settled), 1);
      ASSERT(uv_thread_equal(&a[i / 2].settled_on, &self));
    }
    ASSERT_EQ(tl_waiter_count(&cell), 5 - i);
  }
  for (int i = 0; i < 3; i++)
    ASSERT_EQ(tl_test_waiter_join(&s[i]), TL_RESULT_OK);

  /* A batch of three, from another thread, wakes a0 s1 a2 and no more. */
  tl_test_log_init(&log);
  n = 0;
  for (int i = 0; i < 3; i++) {
    async_init(&a[i], 2 * i, &log);
    ASSERT_EQ(tl_wait_async(&a[i].w, &cell, width, 0, 0), TL_RESULT_PENDING);
    ASSERT_EQ(tl_waiter_count(&cell), ++n);
    tl_test_waiter_start(&s[i], &cell, width, 0, INFINITY, 2 * i + 1, &log,
                         ++n);
  }
  notify_arg_t na = { &cell, 3, -1 };
  uv_thread_t notifier;
  ASSERT_OK(uv_thread_create(&notifier, notify_main, &na));
  ASSERT_OK(uv_thread_join(&notifier));
  ASSERT_EQ(na.result, 3);
  ASSERT_EQ(atomic_load(&a[0].settled), 1);
  ASSERT_EQ(atomic_load(&a[1].settled), 1);
  ASSERT_EQ(atomic_load(&a[2].settled), 0);
  ASSERT(uv_thread_equal(&a[0].settled_on, &notifier));
  ASSERT(!uv_thread_equal(&a[0].settled_on, &self));
  WAIT_UNTIL(atomic_load(&s[0].done));
  tl_test_sleep_ms(10);
  ASSERT_EQ(atomic_load(&s[1].done), 0);
  ASSERT_EQ(atomic_load(&s[2].done), 0);
  ASSERT_EQ(tl_waiter_count(&cell), 3);
  ASSERT_EQ(tl_notify(&cell, -1), 3);
  for (int i = 0; i < 3; i++)
    ASSERT_EQ(tl_test_waiter_join(&s[i]), TL_RESULT_OK);
  ASSERT_EQ(atomic_load(&a[2].settled), 1);
  tl_test_quiescent();
}

static void
test_not_equal_and_zero_timeout(void)
{
  int32_t v32 = 7;
  int64_t v64 = INT64_C(7) << 32;
  async_t a;

  async_init(&a, 0, NULL);
  ASSERT_EQ(tl_wait_async(&a.w, &v32, 4, 8, 0), TL_RESULT_NOT_EQUAL);
  ASSERT_EQ(tl_wait_async(&a.w, &v64, 8, 7, 0), TL_RESULT_NOT_EQUAL);
  /* DoWait step 23: the comparison first, then the zero timeout. */
  ASSERT_EQ(tl_wait_async(&a.w, &v32, 4, 8, 1), TL_RESULT_NOT_EQUAL);
  ASSERT_EQ(tl_wait_async(&a.w, &v32, 4, 7, 1), TL_RESULT_TIMED_OUT);
  ASSERT_EQ(tl_wait_async(&a.w, &v64, 8, v64, 1), TL_RESULT_TIMED_OUT);
  ASSERT_EQ(tl_waiter_count(&v32), 0);
  ASSERT_EQ(tl_waiter_count(&v64), 0);
  ASSERT_EQ(tl_notify(&v32, -1), 0);
  ASSERT_EQ(tl_notify(&v64, -1), 0);
  ASSERT_EQ(atomic_load(&a.settled), 0);
  tl_test_quiescent();
}

/* tl_cancel removes a waiting node and reports 1; after a notify (or a
 * previous cancel) it reports 0 and changes nothing. */
static void
test_cancel(void)
{
  int32_t cell = 0;
  async_t a[4];

  for (int i = 0; i < 4; i++) {
    async_init(&a[i], i, NULL);
    ASSERT_EQ(tl_wait_async(&a[i].w, &cell, 4, 0, 0), TL_RESULT_PENDING);
  }
  ASSERT_EQ(tl_cancel(&a[1].w, TL_CANCELLED), 1);
  ASSERT_EQ(atomic_load(&a[1].w.state), TL_CANCELLED);
  ASSERT_EQ(tl_cancel(&a[1].w, TL_CANCELLED), 0);
  ASSERT_EQ(tl_waiter_count(&cell), 3);
#ifndef NDEBUG
  tl_check_table();
#endif

  /* The cancelled node is skipped: the next in line is a[2]. */
  ASSERT_EQ(tl_notify(&cell, 1), 1);
  ASSERT_EQ(atomic_load(&a[0].settled), 1);
  ASSERT_EQ(tl_notify(&cell, 1), 1);
  ASSERT_EQ(atomic_load(&a[1].settled), 0);
  ASSERT_EQ(atomic_load(&a[2].settled), 1);

  /* Cancel after notify: too late, the node stays NOTIFIED. */
  ASSERT_EQ(tl_cancel(&a[0].w, TL_CANCELLED), 0);
  ASSERT_EQ(tl_cancel(&a[2].w, TL_TIMED_OUT), 0);
  ASSERT_EQ(atomic_load(&a[0].w.state), TL_NOTIFIED);
  ASSERT_EQ(atomic_load(&a[2].w.state), TL_NOTIFIED);

  /* A timeout is a cancel with another reason. */
  ASSERT_EQ(tl_cancel(&a[3].w, TL_TIMED_OUT), 1);
  ASSERT_EQ(atomic_load(&a[3].w.state), TL_TIMED_OUT);
  ASSERT_EQ(tl_notify(&cell, -1), 0);
  ASSERT_EQ(atomic_load(&a[3].settled), 0);

  /* The last waiter of a bucket list can be cancelled, and the list is
   * usable afterwards. */
  ASSERT_EQ(tl_wait_async(&a[0].w, &cell, 4, 0, 0), TL_RESULT_PENDING);
  ASSERT_EQ(tl_wait_async(&a[1].w, &cell, 4, 0, 0), TL_RESULT_PENDING);
  ASSERT_EQ(tl_cancel(&a[1].w, TL_CANCELLED), 1);
  ASSERT_EQ(tl_cancel(&a[0].w, TL_CANCELLED), 1);
  ASSERT_EQ(tl_wait_async(&a[2].w, &cell, 4, 0, 0), TL_RESULT_PENDING);
  ASSERT_EQ(tl_notify(&cell, -1), 1);
  ASSERT_EQ(atomic_load(&a[2].settled), 2);
  tl_test_quiescent();
}

static void
on_settle_free(tl_waiter_t *w)
{
  atomic_fetch_add(&total_settled, 1);
  free(w);
}

/* The settle callback owns the node: it may free it at once, and the core
 * must not touch it afterwards (AddressSanitizer checks this). */
static void
test_settle_takes_ownership(void)
{
  int32_t cell = 0;
  enum { N = 64 };

  atomic_store(&total_settled, 0);
  for (int i = 0; i < N; i++) {
    tl_waiter_t *w = malloc(sizeof(*w));
    ASSERT(w != NULL);
    tl_waiter_init_async(w, on_settle_free);
    ASSERT_EQ(tl_wait_async(w, &cell, 4, 0, 0), TL_RESULT_PENDING);
  }
  ASSERT_EQ(tl_notify(&cell, 5), 5);
  ASSERT_EQ(tl_notify(&cell, -1), N - 5);
  ASSERT_EQ(atomic_load(&total_settled), N);
  tl_test_quiescent();
}

/* With more addresses than the table has buckets, some addresses must share
 * a bucket whatever the hash; a notify still wakes only its own address. */
static void
test_many_addresses(uint64_t seed)
{
  enum { N = 4096 };
  static int32_t cells[N];
  static async_t a[N];
  static int order[N];
  tl_rng_t rng;

  tl_rng_seed(&rng, seed);
  atomic_store(&total_settled, 0);
  for (int i = 0; i < N; i++) {
    async_init(&a[i], i, NULL);
    ASSERT_EQ(tl_wait_async(&a[i].w, &cells[i], 4, 0, 0), TL_RESULT_PENDING);
    order[i] = i;
  }
  ASSERT_EQ(tl_waiter_total(), N);
#ifndef NDEBUG
  tl_check_table();
#endif
  for (int i = N - 1; i > 0; i--) {
    int j = (int)tl_rng_below(&rng, (uint64_t)i + 1);
    int t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (int i = 0; i < N; i++) {
    int k = order[i];
    ASSERT_EQ(tl_notify(&cells[k], 0), 0);
    ASSERT_EQ(tl_waiter_count(&cells[k]), 1);
    ASSERT_EQ(tl_notify(&cells[k], -1), 1);
    ASSERT_EQ(atomic_load(&a[k].settled), 1);
    ASSERT_EQ(atomic_load(&total_settled), i + 1);
    ASSERT_EQ(tl_waiter_total(), (size_t)(N - i - 1));
  }
  tl_test_quiescent();
}

/* Cancel (the owner's timeout or teardown) races with notify from another
 * thread: every node ends exactly once, and notify counts only the nodes it
 * really settled. */
typedef struct {
  int32_t *cell;
  int rounds;
  uint64_t seed;
  int64_t cancelled; /* written by the thread, read after join */
  int64_t settled;
} canceller_t;

static void
canceller_main(void *arg)
{
  canceller_t *c = arg;
  tl_rng_t rng;
  async_t a;

  tl_rng_seed(&rng, c->seed);
  c->cancelled = c->settled = 0;
  for (int i = 0; i < c->rounds; i++) {
    async_init(&a, i, NULL);
    ASSERT_EQ(tl_wait_async(&a.w, c->cell, 4, 0, 0), TL_RESULT_PENDING);
    for (uint64_t n = tl_rng_below(&rng, 200); n > 0; n--)
      atomic_thread_fence(memory_order_seq_cst);
    if (tl_cancel(&a.w, TL_CANCELLED)) {
      c->cancelled++;
      ASSERT_EQ(atomic_load(&a.w.state), TL_CANCELLED);
      ASSERT_EQ(atomic_load(&a.settled), 0);
    } else {
      /* The notifier settles under the bucket lock that cancel takes, so
       * the callback has finished by now and the node is free to reuse. */
      c->settled++;
      ASSERT_EQ(atomic_load(&a.w.state), TL_NOTIFIED);
      ASSERT_EQ(atomic_load(&a.settled), 1);
    }
  }
}

typedef struct {
  int32_t *cell;
  _Atomic int *stop;
  int64_t woken;
} notifier_t;

static void
notifier_main(void *arg)
{
  notifier_t *n = arg;
  int64_t k = 0;

  n->woken = 0;
  while (!atomic_load(n->stop))
    n->woken += tl_notify(n->cell, (k++ % 3) - 1); /* -1, 0, 1 */
}

static void
test_cancel_races_notify(uint64_t seed, int rounds)
{
  enum { NC = 3, NN = 2 };
  int32_t cell = 0;
  canceller_t c[NC];
  notifier_t n[NN];
  uv_thread_t ct[NC], nt[NN];
  _Atomic int stop = 0;
  int64_t cancelled = 0, settled = 0, woken = 0;

  for (int i = 0; i < NN; i++) {
    n[i] = (notifier_t){ &cell, &stop, 0 };
    ASSERT_OK(uv_thread_create(&nt[i], notifier_main, &n[i]));
  }
  for (int i = 0; i < NC; i++) {
    c[i] = (canceller_t){ &cell, rounds, seed + (uint64_t)i, 0, 0 };
    ASSERT_OK(uv_thread_create(&ct[i], canceller_main, &c[i]));
  }
  for (int i = 0; i < NC; i++) {
    ASSERT_OK(uv_thread_join(&ct[i]));
    cancelled += c[i].cancelled;
    settled += c[i].settled;
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < NN; i++) {
    ASSERT_OK(uv_thread_join(&nt[i]));
    woken += n[i].woken;
  }
  ASSERT_EQ(cancelled + settled, (int64_t)NC * rounds);
  ASSERT_EQ(woken, settled);
  printf("async: cancel race: %" PRId64 " settled, %" PRId64 " cancelled\n",
         settled, cancelled);
  tl_test_quiescent();
}

int
main(int argc, char **argv)
{
  tl_watchdog_t wd;
  uint64_t seed = tl_test_seed("async");
  int rounds = (int)tl_test_setting(argc, argv, 1, "TL_ASYNC_ROUNDS", 20000);

  tl_watchdog_start(&wd, "async", 120, NULL);
  for (unsigned spin = 0; spin <= 2000; spin += 2000) {
    tl_set_spin(spin);
    test_mixed_fifo(4);
    test_mixed_fifo(8);
  }
  test_not_equal_and_zero_timeout();
  test_cancel();
  test_settle_takes_ownership();
  test_many_addresses(seed);
  test_cancel_races_notify(seed, rounds);
  tl_test_quiescent();
  tl_watchdog_stop(&wd);
  printf("async: ok\n");
  return 0;
}
