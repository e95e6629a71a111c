/* Timed waits: a timed wait never ends before its deadline, very long
 * timeouts behave like long ones rather than short ones, and many threads
 * with random short timeouts racing with notifies each end exactly once,
 * either woken or timed out, with notify counting exactly the woken ones.
 */
#include <math.h>

#include "test.h"

/* The shortest time a wait of `timeout_ms` must last. */
static uint64_t
min_ns(double timeout_ms)
{
  return (uint64_t)ceil(timeout_ms * 1e6);
}

static void
test_never_early(void)
{
  static const double timeouts[] = { 0.001, 0.5, 1, 1.25, 2.5, 5, 10, 20 };
  int32_t cell = 0;

  for (size_t i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++) {
    for (int rep = 0; rep < 3; rep++) {
      uint64_t start = uv_hrtime();
      int r = tl_wait(&cell, 4, 0, timeouts[i], NULL);
      uint64_t elapsed = uv_hrtime() - start;

      ASSERT_EQ(r, TL_RESULT_TIMED_OUT);
      ASSERT_GE(elapsed, min_ns(timeouts[i]));
    }
  }
  tl_test_quiescent();
}

/* A notify well before the deadline ends the wait at once, not at the
 * deadline; a huge finite timeout and +Infinity both wait for the notify. */
static void
test_notify_before_deadline(void)
{
  int32_t cell = 0;
  static const double timeouts[] = { 10000, 1e13, 1e300, INFINITY };

  for (size_t i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++) {
    tl_test_waiter_t tw;

    tl_test_waiter_start(&tw, &cell, 4, 0, timeouts[i], 0, NULL, 1);
    tl_test_sleep_ms(20);
    ASSERT_EQ(atomic_load(&tw.done), 0);
    ASSERT_EQ(tl_notify(&cell, 1), 1);
    ASSERT_EQ(tl_test_waiter_join(&tw), TL_RESULT_OK);
    ASSERT_LT(tw.elapsed_ns, UINT64_C(5000) * 1000000);
  }
  tl_test_quiescent();
}

/* One timed-out waiter leaves the others in place and in order. The middle
 * waiter must still wait when the third one enqueues; on a machine too
 * loaded for that, the case runs again with a longer timeout. */
static void
test_timeout_keeps_order(void)
{
  int64_t cell = 0;
  tl_test_waiter_t tw[3];
  tl_test_log_t log;

  for (double timeout = 30;; timeout *= 2) {
    int started = 2, ok;

    ASSERT_LE(timeout, 8000);
    tl_test_log_init(&log);
    tl_test_waiter_start(&tw[0], &cell, 8, 0, INFINITY, 0, &log, 1);
    ok = tl_test_waiter_start_unless(&tw[1], &cell, 8, 0, timeout, 1, &log, 2,
                                     &tw[1].done);
    if (ok) {
      started = 3;
      ok = tl_test_waiter_start_unless(&tw[2], &cell, 8, 0, INFINITY, 2, &log,
                                       3, &tw[1].done);
    }
    ASSERT_EQ(tl_test_waiter_join(&tw[1]), TL_RESULT_TIMED_OUT);
    ASSERT_GE(tw[1].elapsed_ns, min_ns(timeout));
    if (!ok) {
      tl_test_wait_enqueued(&cell, (size_t)started - 1, NULL);
      ASSERT_EQ(tl_notify(&cell, -1), started - 1);
      ASSERT_EQ(tl_test_waiter_join(&tw[0]), TL_RESULT_OK);
      if (started == 3)
        ASSERT_EQ(tl_test_waiter_join(&tw[2]), TL_RESULT_OK);
      continue;
    }
    break;
  }
  ASSERT_EQ(tl_waiter_count(&cell), 2);
#ifndef NDEBUG
  tl_check_table();
#endif
  ASSERT_EQ(tl_notify(&cell, 1), 1);
  ASSERT_EQ(tl_test_log_get(&log, 0), 0);
  ASSERT_EQ(tl_notify(&cell, 1), 1);
  ASSERT_EQ(tl_test_log_get(&log, 1), 2);
  ASSERT_EQ(tl_test_waiter_join(&tw[0]), TL_RESULT_OK);
  ASSERT_EQ(tl_test_waiter_join(&tw[2]), TL_RESULT_OK);
  tl_test_quiescent();
}

/* The race: waiter threads wait with random short timeouts (sync) or wait
 * async and cancel after a random delay (the async deadline), while
 * notifier threads notify with random counts. */
typedef struct {
  int32_t *cell;
  int rounds;
  uint64_t seed;
  int64_t ok; /* results, read after join */
  int64_t timed_out;
  _Atomic int *running;
} racer_t;

typedef struct {
  tl_waiter_t w;
  _Atomic int settled;
} race_async_t;

static void
race_settle(tl_waiter_t *w)
{
  atomic_fetch_add(&((race_async_t *)w)->settled, 1);
}

static void
racer_main(void *arg)
{
  racer_t *rc = arg;
  tl_rng_t rng;

  tl_rng_seed(&rng, rc->seed);
  rc->ok = rc->timed_out = 0;
  for (int i = 0; i < rc->rounds; i++) {
    uint64_t kind = tl_rng_below(&rng, 10);

    if (kind < 7) {
      /* Sync, 0 to 2 ms in 1/4 ms steps. */
      double timeout = (double)tl_rng_below(&rng, 9) * 0.25;
      uint64_t start = uv_hrtime();
      int r = tl_wait(rc->cell, 4, 0, timeout, NULL);
      uint64_t elapsed = uv_hrtime() - start;

      if (r == TL_RESULT_OK) {
        rc->ok++;
      } else {
        ASSERT_EQ(r, TL_RESULT_TIMED_OUT);
        ASSERT_GE(elapsed, min_ns(timeout));
        rc->timed_out++;
      }
    } else {
      race_async_t a;
      uint64_t until;

      tl_waiter_init_async(&a.w, race_settle);
      atomic_store(&a.settled, 0);
      ASSERT_EQ(tl_wait_async(&a.w, rc->cell, 4, 0, 0), TL_RESULT_PENDING);
      until = uv_hrtime() + tl_rng_below(&rng, 1000000);
      while (uv_hrtime() < until && atomic_load(&a.settled) == 0)
        tl_cpu_relax();
      if (tl_cancel(&a.w, TL_TIMED_OUT)) {
        ASSERT_EQ(atomic_load(&a.settled), 0);
        rc->timed_out++;
      } else {
        ASSERT_EQ(atomic_load(&a.settled), 1);
        ASSERT_EQ(atomic_load(&a.w.state), TL_NOTIFIED);
        rc->ok++;
      }
    }
  }
  atomic_fetch_sub(rc->running, 1);
}

typedef struct {
  int32_t *cell;
  uint64_t seed;
  _Atomic int *running;
  int64_t woken;
  int64_t calls;
} race_notifier_t;

static void
race_notifier_main(void *arg)
{
  race_notifier_t *rn = arg;
  tl_rng_t rng;

  tl_rng_seed(&rng, rn->seed);
  rn->woken = rn->calls = 0;
  while (atomic_load(rn->running) > 0) {
    int64_t count = (int64_t)tl_rng_below(&rng, 5) - 1; /* -1 .. 3 */
    int64_t r = tl_notify(rn->cell, count);

    ASSERT_GE(r, 0);
    if (count >= 0)
      ASSERT_LE(r, count);
    rn->woken += r;
    rn->calls++;
    /* Leave the waiters some time to time out. */
    if (tl_rng_below(&rng, 4) == 0)
      uv_sleep(1);
  }
}

static void
test_race(uint64_t seed, int threads, int rounds)
{
  enum { NN = 2, MAXT = 16 };
  int32_t cell = 0;
  racer_t rc[MAXT];
  race_notifier_t rn[NN];
  uv_thread_t rt[MAXT], nt[NN];
  _Atomic int running = threads;
  int64_t ok = 0, timed_out = 0, woken = 0;

  ASSERT_LE(threads, MAXT);
  for (int i = 0; i < threads; i++) {
    rc[i] = (racer_t){ &cell, rounds, seed + (uint64_t)i, 0, 0, &running };
    ASSERT_OK(uv_thread_create(&rt[i], racer_main, &rc[i]));
  }
  for (int i = 0; i < NN; i++) {
    rn[i] =
        (race_notifier_t){ &cell, seed + 100 + (uint64_t)i, &running, 0, 0 };
    ASSERT_OK(uv_thread_create(&nt[i], race_notifier_main, &rn[i]));
  }
  for (int i = 0; i < threads; i++) {
    ASSERT_OK(uv_thread_join(&rt[i]));
    ok += rc[i].ok;
    timed_out += rc[i].timed_out;
  }
  for (int i = 0; i < NN; i++) {
    ASSERT_OK(uv_thread_join(&nt[i]));
    woken += rn[i].woken;
  }
  printf("timeouts: race: %" PRId64 " ok, %" PRId64 " timed out\n", ok,
         timed_out);
  ASSERT_EQ(ok + timed_out, (int64_t)threads * rounds);
  ASSERT_EQ(woken, ok);
  tl_test_quiescent();
}

int
main(int argc, char **argv)
{
  tl_watchdog_t wd;
  uint64_t seed = tl_test_seed("timeouts");
  int rounds = (int)tl_test_setting(argc, argv, 1, "TL_TIMEOUT_ROUNDS", 300);
  int threads = (int)tl_test_setting(argc, argv, 2, "TL_TIMEOUT_THREADS", 6);

  tl_watchdog_start(&wd, "timeouts", 150, NULL);
  for (unsigned spin = 0; spin <= 2000; spin += 2000) {
    tl_set_spin(spin);
    test_never_early();
    test_notify_before_deadline();
    test_timeout_keeps_order();
    test_race(seed + spin, threads, rounds);
  }
  tl_test_quiescent();
  tl_watchdog_stop(&wd);
  printf("timeouts: ok\n");
  return 0;
}
