/* The probe of a sync wait: asked between bounded slices, always without
 * the bucket lock; its "stop" ends the wait as INTERRUPTED unless a notify
 * or grant came first; a stopped lock or gate waiter leaves the queue as a
 * timed-out one would.
 */
#include <math.h>

#include "test.h"

typedef struct {
  void *addr;
  int calls;                /* the waiting thread only */
  int stop_at;              /* 0: never stop */
  int notify_at;            /* 0: never notify */
  size_t seen;              /* waiters on addr during the last call */
  void (*first_call)(void); /* may be NULL */
} probe_state_t;

/* Runs on the waiting thread. tl_waiter_count takes the bucket lock, so it
 * deadlocks (and the watchdog fires) if the core asks under that lock. */
static int
probe_fn(void *data)
{
  probe_state_t *ps = data;

  ps->calls++;
  ps->seen = tl_waiter_count(ps->addr);
  if (ps->calls == 1 && ps->first_call != NULL)
    ps->first_call();
  if (ps->notify_at != 0 && ps->calls == ps->notify_at)
    ASSERT_EQ(tl_notify(ps->addr, 1), 1);
  return ps->stop_at != 0 && ps->calls >= ps->stop_at;
}

static void
test_wait_interrupted(void)
{
  int32_t cell = 0;
  probe_state_t ps = { &cell, 0, 5, 0, 0, NULL };
  tl_probe_t probe = { probe_fn, &ps, 1000000 };
  uint64_t start = uv_hrtime();

  ASSERT_EQ(tl_wait(&cell, 4, 0, INFINITY, &probe), TL_RESULT_INTERRUPTED);
  ASSERT_EQ(ps.calls, 5);
  ASSERT_EQ(ps.seen, 1); /* still enqueued while it was asked */
  ASSERT_GE(uv_hrtime() - start, UINT64_C(5) * 1000000);
  ASSERT_EQ(tl_waiter_count(&cell), 0);
  ASSERT_EQ(tl_notify(&cell, -1), 0);
  tl_test_quiescent();
}

/* A notify that lands while the probe runs wins over its "stop". */
static void
test_notify_during_probe(void)
{
  int32_t cell = 0;
  probe_state_t ps = { &cell, 0, 2, 2, 0, NULL };
  tl_probe_t probe = { probe_fn, &ps, 1000000 };

  ASSERT_EQ(tl_wait(&cell, 4, 0, INFINITY, &probe), TL_RESULT_OK);
  ASSERT_EQ(ps.calls, 2);
  tl_test_quiescent();
}

/* The deadline still holds when the probe never stops. */
static void
test_probe_and_deadline(void)
{
  int32_t cell = 0;
  probe_state_t ps = { &cell, 0, 0, 0, 0, NULL };
  tl_probe_t probe = { probe_fn, &ps, 1000000 };
  uint64_t start = uv_hrtime();

  ASSERT_EQ(tl_wait(&cell, 4, 0, 8, &probe), TL_RESULT_TIMED_OUT);
  ASSERT_GE(uv_hrtime() - start, UINT64_C(8) * 1000000);
  ASSERT_GE(ps.calls, 1);
  tl_test_quiescent();
}

/* A stopped lock waiter was the last one: the waiters bit goes, and the
 * owner's compare-exchange release works again. A stopped semaphore waiter
 * at the head lets the smaller request behind it in. */
static int32_t sem_word;
static tl_waiter_t sem_async;
static _Atomic int sem_settled;

static void
sem_settle(tl_waiter_t *w)
{
  (void)w;
  atomic_fetch_add(&sem_settled, 1);
}

/* Called from the probe, i.e. while the sync request for 2 waits: queues a
 * request for 1 behind it, then returns a permit, which goes to neither:
 * the head does not fit, and the request behind it keeps its place. */
static void
queue_small_request(void)
{
  tl_waiter_init_async(&sem_async, sem_settle);
  ASSERT_EQ(tl_gate_acquire_async(&sem_async, &sem_word, TL_GATE_SEM, 3, 1),
            TL_RESULT_PENDING);
  ASSERT_OK(tl_gate_release(&sem_word, TL_GATE_SEM, 3, 1));
  ASSERT_EQ(atomic_load(&sem_settled), 0);
}

static void
test_gate_interrupted(void)
{
  int32_t word = 0;
  probe_state_t ps = { &word, 0, 3, 0, 0, NULL };
  tl_probe_t probe = { probe_fn, &ps, 1000000 };
  int32_t expected = 1;

  tl_thread_register(1);
  tl_thread_register(2);
  ASSERT_EQ(tl_lock_acquire(&word, 1, INFINITY, NULL), TL_RESULT_ACQUIRED);
  ASSERT_EQ(tl_lock_acquire(&word, 2, INFINITY, &probe), TL_RESULT_INTERRUPTED);
  ASSERT_EQ(ps.seen, 1);
  ASSERT(
      atomic_compare_exchange_strong((_Atomic int32_t *)&word, &expected, 0));

  atomic_store((_Atomic int32_t *)&sem_word, 0);
  atomic_store(&sem_settled, 0);
  ps = (probe_state_t){ &sem_word, 0, 3, 0, 0, queue_small_request };
  ASSERT_EQ(tl_gate_acquire(&sem_word, TL_GATE_SEM, 2, 2, INFINITY, &probe),
            TL_RESULT_INTERRUPTED);
  ASSERT_EQ(ps.seen, 2);
  ASSERT_EQ(atomic_load(&sem_settled), 1);
  /* Granted if it had starved, else woken to take the permit itself. */
  if (!sem_async.granted)
    ASSERT_EQ(tl_gate_retry_async(&sem_async), TL_RESULT_ACQUIRED);
  ASSERT_EQ(atomic_load((_Atomic int32_t *)&sem_word), 0);
  tl_thread_unregister(1);
  tl_thread_unregister(2);
  tl_test_quiescent();
}

/* Releases 2 permits of `arg` once a request waits on it. */
static void
release_when_queued(void *arg)
{
  while (tl_waiter_count(arg) == 0)
    uv_sleep(1);
  uv_sleep(5); /* parked, not spinning */
  ASSERT_OK(tl_gate_release(arg, TL_GATE_SEM, 3, 2));
}

/* A grant that reaches a sleeping request whose thread is then found
 * stopping is given back: nothing would ever release a semaphore's
 * permits for a thread that runs none of its code again. */
static void
test_grant_then_stop(void)
{
  int32_t word = 0;
  probe_state_t ps = { &word, 0, 1, 0, 0, NULL };
  /* A slice far longer than the test: the probe is asked only once the
   * grant has woken the request. */
  tl_probe_t probe = { probe_fn, &ps, UINT64_C(60) * 1000000000 };
  uv_thread_t releaser;

  ASSERT_OK(uv_thread_create(&releaser, release_when_queued, &word));
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_SEM, 2, 2, INFINITY, &probe),
            TL_RESULT_INTERRUPTED);
  ASSERT_OK(uv_thread_join(&releaser));
  ASSERT_EQ(ps.calls, 1);
  ASSERT_EQ(atomic_load((_Atomic int32_t *)&word), 2);
  tl_test_quiescent();
}

int
main(void)
{
  tl_watchdog_t wd;

  tl_watchdog_start(&wd, "interrupt", 60, NULL);
  for (unsigned spin = 0; spin <= 2000; spin += 2000) {
    tl_set_spin(spin);
    test_wait_interrupted();
    test_notify_during_probe();
    test_probe_and_deadline();
    test_gate_interrupted();
    test_grant_then_stop();
  }
  tl_test_quiescent();
  tl_watchdog_stop(&wd);
  printf("interrupt: ok\n");
  return 0;
}
