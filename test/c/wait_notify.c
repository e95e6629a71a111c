/* Sync wait and notify with real threads: the value check, timeout 0, the
 * count that notify takes and returns, FIFO wake order, both widths, and
 * independence of addresses, including two that share a bucket.
 *
 * Every case runs twice: once with waiters that park at once and once with
 * waiters that spin first, because notify takes a different path for a
 * waiter that has not parked yet.
 */
#include <math.h>

#include "test.h"
#include "tl_internal.h"

#define NWAITERS 8

static void
test_not_equal(void)
{
  int32_t v32 = 5;
  int64_t v64 = (INT64_C(1) << 32) | 5;

  ASSERT_EQ(tl_wait(&v32, 4, 6, 0, NULL), TL_RESULT_NOT_EQUAL);
  ASSERT_EQ(tl_wait(&v32, 4, 5, 0, NULL), TL_RESULT_TIMED_OUT);
  /* An 8-byte wait compares all 8 bytes, not only the low half. */
  ASSERT_EQ(tl_wait(&v64, 8, 5, 0, NULL), TL_RESULT_NOT_EQUAL);
  ASSERT_EQ(tl_wait(&v64, 8, v64, 0, NULL), TL_RESULT_TIMED_OUT);
  /* A 4-byte value is compared as a signed 32-bit integer. */
  v32 = -1;
  ASSERT_EQ(tl_wait(&v32, 4, -1, 0, NULL), TL_RESULT_TIMED_OUT);
  v64 = INT64_MIN;
  ASSERT_EQ(tl_wait(&v64, 8, INT64_MIN, 0, NULL), TL_RESULT_TIMED_OUT);
  ASSERT_EQ(tl_wait(&v64, 8, INT64_MAX, 0, NULL), TL_RESULT_NOT_EQUAL);
  ASSERT_EQ(tl_waiter_count(&v32), 0);
  ASSERT_EQ(tl_waiter_count(&v64), 0);
  tl_test_quiescent();
}

static void
test_timeout_zero(void)
{
  int32_t v = 0;

  ASSERT_EQ(tl_wait(&v, 4, 0, 0, NULL), TL_RESULT_TIMED_OUT);
  ASSERT_EQ(tl_wait(&v, 4, 0, -0.0, NULL), TL_RESULT_TIMED_OUT);
  ASSERT_EQ(tl_wait(&v, 4, 0, -5, NULL), TL_RESULT_TIMED_OUT);
  ASSERT_EQ(tl_wait(&v, 4, 0, -INFINITY, NULL), TL_RESULT_TIMED_OUT);
  /* The comparison comes before the timeout. */
  ASSERT_EQ(tl_wait(&v, 4, 1, 0, NULL), TL_RESULT_NOT_EQUAL);
  ASSERT_EQ(tl_notify(&v, -1), 0);
  tl_test_quiescent();
}

/* NaN means no deadline: the waiter stays until notified. */
static void
test_nan_waits_forever(void)
{
  int32_t v = 0;
  tl_test_waiter_t tw;

  tl_test_waiter_start(&tw, &v, 4, 0, NAN, 0, NULL, 1);
  tl_test_sleep_ms(30);
  ASSERT_EQ(atomic_load(&tw.done), 0);
  ASSERT_EQ(tl_notify(&v, 1), 1);
  ASSERT_EQ(tl_test_waiter_join(&tw), TL_RESULT_OK);
  tl_test_quiescent();
}

/* The usual pattern: store, then notify; the waiter sees the notify. */
static void
test_store_then_notify(int width)
{
  int64_t cell = 0;
  tl_test_waiter_t tw;

  tl_test_waiter_start(&tw, &cell, width, 0, INFINITY, 0, NULL, 1);
  if (width == 8)
    atomic_store((_Atomic int64_t *)&cell, INT64_C(1) << 40);
  else
    atomic_store((_Atomic int32_t *)&cell, 1);
  ASSERT_EQ(tl_notify(&cell, 1), 1);
  ASSERT_EQ(tl_test_waiter_join(&tw), TL_RESULT_OK);
  /* The value changed, so a new wait on the old value does not block. */
  ASSERT_EQ(tl_wait(&cell, width, 0, 0, NULL), TL_RESULT_NOT_EQUAL);
  tl_test_quiescent();
}

static int
woken_count(tl_test_waiter_t *tw, int n)
{
  int woken = 0;
  for (int i = 0; i < n; i++)
    woken += atomic_load(&tw[i].done);
  return woken;
}

/* notify(0) wakes nobody, notify(k) wakes exactly k while there are at
 * least k, a larger count wakes and returns only as many as there are, and
 * a negative count wakes all. */
static void
test_notify_counts(int width)
{
  int64_t cell = 0;
  tl_test_waiter_t tw[NWAITERS];
  tl_test_log_t log;

  tl_test_log_init(&log);
  ASSERT_EQ(tl_notify(&cell, 1), 0);
  ASSERT_EQ(tl_notify(&cell, -1), 0);
  for (int i = 0; i < 5; i++)
    tl_test_waiter_start(&tw[i], &cell, width, 0, INFINITY, i, &log, i + 1);

  ASSERT_EQ(tl_notify(&cell, 0), 0);
  tl_test_sleep_ms(10);
  ASSERT_EQ(woken_count(tw, 5), 0);
  ASSERT_EQ(tl_waiter_count(&cell), 5);

  ASSERT_EQ(tl_notify(&cell, 1), 1);
  WAIT_UNTIL(woken_count(tw, 5) == 1);
  ASSERT_EQ(tl_waiter_count(&cell), 4);

  ASSERT_EQ(tl_notify(&cell, 2), 2);
  WAIT_UNTIL(woken_count(tw, 5) == 3);
  ASSERT_EQ(tl_waiter_count(&cell), 2);

  /* More than there are: returns how many it really woke. */
  ASSERT_EQ(tl_notify(&cell, 10), 2);
  WAIT_UNTIL(woken_count(tw, 5) == 5);
  ASSERT_EQ(tl_waiter_count(&cell), 0);
  ASSERT_EQ(tl_notify(&cell, 10), 0);
  for (int i = 0; i < 5; i++)
    ASSERT_EQ(tl_test_waiter_join(&tw[i]), TL_RESULT_OK);

  /* A negative count wakes all. */
  for (int i = 0; i < NWAITERS; i++)
    tl_test_waiter_start(&tw[i], &cell, width, 0, INFINITY, i, &log, i + 1);
  ASSERT_EQ(tl_notify(&cell, -1), NWAITERS);
  for (int i = 0; i < NWAITERS; i++)
    ASSERT_EQ(tl_test_waiter_join(&tw[i]), TL_RESULT_OK);
  ASSERT_EQ(atomic_load(&log.len), 5 + NWAITERS);
  tl_test_quiescent();
}

/* Waiters wake in the order in which they began to wait, one notify at a
 * time and in batches. */
static void
test_fifo(int width)
{
  int64_t cell = 0;
  tl_test_waiter_t tw[NWAITERS];
  tl_test_log_t log;

  tl_test_log_init(&log);
  for (int i = 0; i < NWAITERS; i++)
    tl_test_waiter_start(&tw[i], &cell, width, 0, INFINITY, i, &log, i + 1);
  for (int i = 0; i < NWAITERS; i++) {
    ASSERT_EQ(tl_notify(&cell, 1), 1);
    ASSERT_EQ(tl_test_log_get(&log, i), i);
  }
  for (int i = 0; i < NWAITERS; i++)
    ASSERT_EQ(tl_test_waiter_join(&tw[i]), TL_RESULT_OK);

  /* notify(3) wakes exactly the three oldest, whatever order they then
   * run in. */
  tl_test_log_init(&log);
  for (int i = 0; i < NWAITERS; i++)
    tl_test_waiter_start(&tw[i], &cell, width, 0, INFINITY, i, &log, i + 1);
  ASSERT_EQ(tl_notify(&cell, 3), 3);
  WAIT_UNTIL(woken_count(tw, NWAITERS) == 3);
  for (int i = 0; i < 3; i++)
    ASSERT_EQ(atomic_load(&tw[i].done), 1);
  ASSERT_EQ(tl_waiter_count(&cell), NWAITERS - 3);
  ASSERT_EQ(tl_notify(&cell, 2), 2);
  WAIT_UNTIL(woken_count(tw, NWAITERS) == 5);
  for (int i = 3; i < 5; i++)
    ASSERT_EQ(atomic_load(&tw[i].done), 1);
  ASSERT_EQ(tl_notify(&cell, -1), NWAITERS - 5);
  for (int i = 0; i < NWAITERS; i++)
    ASSERT_EQ(tl_test_waiter_join(&tw[i]), TL_RESULT_OK);
  tl_test_quiescent();
}

/* A notify on one address never wakes, counts or disturbs the waiters of
 * another: neighbours in memory, and an address in the same bucket. */
static void
test_addresses(void)
{
  static int32_t cells[4096];
  tl_test_waiter_t a[2], b, c[2];
  tl_test_log_t log;
  int other = -1;

  /* Two addresses in one bucket, found with the table's own hash; the
   * test asserts that they collide, so that a change of the hash or the
   * table size cannot quietly turn this into a test of two buckets. */
  for (int i = 2; i < 4096 && other < 0; i++)
    if (tl__bucket((uintptr_t)&cells[i]) == tl__bucket((uintptr_t)&cells[0]))
      other = i;
  ASSERT_GT(other, 1);
  ASSERT(tl__bucket((uintptr_t)&cells[other]) ==
         tl__bucket((uintptr_t)&cells[0]));

  tl_test_log_init(&log);
  /* Interleave the enqueues so that the bucket list mixes the addresses. */
  tl_test_waiter_start(&a[0], &cells[0], 4, 0, INFINITY, 0, &log, 1);
  tl_test_waiter_start(&c[0], &cells[other], 4, 0, INFINITY, 20, &log, 1);
  tl_test_waiter_start(&b, &cells[1], 4, 0, INFINITY, 10, &log, 1);
  tl_test_waiter_start(&a[1], &cells[0], 4, 0, INFINITY, 1, &log, 2);
  tl_test_waiter_start(&c[1], &cells[other], 4, 0, INFINITY, 21, &log, 2);

  ASSERT_EQ(tl_notify(&cells[2], -1), 0);
  ASSERT_EQ(tl_notify(&cells[1], -1), 1);
  ASSERT_EQ(tl_test_waiter_join(&b), TL_RESULT_OK);
  ASSERT_EQ(tl_waiter_count(&cells[0]), 2);
  ASSERT_EQ(tl_waiter_count(&cells[other]), 2);

  ASSERT_EQ(tl_notify(&cells[other], 1), 1);
  ASSERT_EQ(tl_test_waiter_join(&c[0]), TL_RESULT_OK);
  ASSERT_EQ(tl_waiter_count(&cells[0]), 2);
  ASSERT_EQ(tl_waiter_count(&cells[other]), 1);

  ASSERT_EQ(tl_notify(&cells[0], 1), 1);
  ASSERT_EQ(tl_test_waiter_join(&a[0]), TL_RESULT_OK);
  ASSERT_EQ(tl_notify(&cells[0], -1), 1);
  ASSERT_EQ(tl_test_waiter_join(&a[1]), TL_RESULT_OK);
  ASSERT_EQ(tl_waiter_count(&cells[other]), 1);
  ASSERT_EQ(atomic_load(&c[1].done), 0);
  ASSERT_EQ(tl_notify(&cells[other], -1), 1);
  ASSERT_EQ(tl_test_waiter_join(&c[1]), TL_RESULT_OK);

  ASSERT_EQ(tl_test_log_get(&log, 0), 10);
  ASSERT_EQ(tl_test_log_get(&log, 1), 20);
  ASSERT_EQ(tl_test_log_get(&log, 2), 0);
  ASSERT_EQ(tl_test_log_get(&log, 3), 1);
  ASSERT_EQ(tl_test_log_get(&log, 4), 21);
  tl_test_quiescent();
}

/* A 4-byte and an 8-byte wait on overlapping memory are keyed by address
 * alone, like Atomics on two views of one buffer. */
static void
test_mixed_widths(void)
{
  int64_t cell = 0;
  tl_test_waiter_t w4, w8;

  tl_test_waiter_start(&w4, &cell, 4, 0, INFINITY, 0, NULL, 1);
  tl_test_waiter_start(&w8, &cell, 8, 0, INFINITY, 1, NULL, 2);
  ASSERT_EQ(tl_notify(&cell, -1), 2);
  ASSERT_EQ(tl_test_waiter_join(&w4), TL_RESULT_OK);
  ASSERT_EQ(tl_test_waiter_join(&w8), TL_RESULT_OK);
  tl_test_quiescent();
}

int
main(void)
{
  tl_watchdog_t wd;
  static const unsigned spins[] = { 0, 2000 };

  tl_watchdog_start(&wd, "wait_notify", 120, NULL);
  for (size_t s = 0; s < sizeof(spins) / sizeof(spins[0]); s++) {
    tl_set_spin(spins[s]);
    test_not_equal();
    test_timeout_zero();
    test_nan_waits_forever();
    test_store_then_notify(4);
    test_store_then_notify(8);
    test_notify_counts(4);
    test_notify_counts(8);
    test_fifo(4);
    test_fifo(8);
    test_addresses();
    test_mixed_widths();
  }
  tl_test_quiescent();
  tl_watchdog_stop(&wd);
  printf("wait_notify: ok\n");
  return 0;
}
