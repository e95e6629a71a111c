/* The parking table: the process-wide waiter list.
 *
 * Waiters are keyed by the address of the waited-on element. A fixed table
 * of buckets, each with one mutex and one FIFO list holding sync and async
 * waiters alike, serves every thread of the process. The value check and the
 * enqueue happen under the bucket lock that notify also takes, so a notify
 * that follows a store can never be missed. The table knows no gate: a gate
 * waiter carries the hooks (tl_hooks_t) that decide, under the bucket lock,
 * what its leaving means for the others (see tl_internal.h for the layers).
 */
#include "waiters.h"

#include <assert.h>
#include <stdlib.h>

#include "platform.h"
#include "tl_internal.h"

static tl_bucket_t tl__table[TL_BUCKET_COUNT];
static tl_once_t tl__table_once = TL_ONCE_INIT;

/* Pause iterations a sync waiter may spin before it parks; see tl__spin. */
#define TL_SPIN_DEFAULT 4000
#define TL_SPIN_FLOOR 32
static atomic_uint tl__spin_limit = TL_SPIN_DEFAULT;
static _Thread_local unsigned tl__spin_budget; /* 0: not adapted yet */
static _Thread_local unsigned tl__spin_waits;
static atomic_uint tl__spinners;  /* sync waiters spinning right now */
static unsigned tl__max_spinners; /* set once by tl__table_init */

static void
tl__table_init(void)
{
  unsigned cores = uv_available_parallelism();

  tl__max_spinners = cores > 2 ? cores / 2 : 1;
  for (size_t i = 0; i < TL_BUCKET_COUNT; i++)
    tl_mutex_init(&tl__table[i].lock);
}

tl_bucket_t *
tl__bucket(uintptr_t addr)
{
  tl_once(&tl__table_once, tl__table_init);
  return &tl__table[tl__addr_hash(addr, TL_BUCKET_BITS)];
}

tl_bucket_t *
tl__bucket_at(size_t i)
{
  tl_once(&tl__table_once, tl__table_init);
  return &tl__table[i];
}

static int64_t
tl__load(const void *addr, int width)
{
  if (width == 8)
    return atomic_load((_Atomic int64_t *)addr);
  return atomic_load((_Atomic int32_t *)addr);
}

/* Appends `w` to the bucket's FIFO. Expects b->lock. */
void
tl__enqueue(tl_bucket_t *b, tl_waiter_t *w)
{
  w->next = NULL;
  w->prev = b->tail;
  if (b->tail != NULL)
    b->tail->next = w;
  else
    b->head = w;
  b->tail = w;
  b->count++;
}

/* Links `w` into the bucket's FIFO just before `at` (a linked waiter), or
 * at the tail when `at` is NULL. Expects b->lock. */
void
tl__enqueue_before(tl_bucket_t *b, tl_waiter_t *w, tl_waiter_t *at)
{
  if (at == NULL) {
    tl__enqueue(b, w);
    return;
  }
  w->next = at;
  w->prev = at->prev;
  if (at->prev != NULL)
    at->prev->next = w;
  else
    b->head = w;
  at->prev = w;
  b->count++;
}

/* Unlinks `w` from the bucket's FIFO. Expects b->lock. */
void
tl__unlink(tl_bucket_t *b, tl_waiter_t *w)
{
  if (w->prev != NULL)
    w->prev->next = w->next;
  else
    b->head = w->next;
  if (w->next != NULL)
    w->next->prev = w->prev;
  else
    b->tail = w->prev;
  w->next = w->prev = NULL;
  b->count--;
}

/* Ends the wait of `w` with `state`, or (WOKEN) wakes a gate waiter that
 * stays in its place in the queue. Expects b->lock; a NOTIFIED or ended
 * waiter was unlinked by the caller. For a sync waiter that is still
 * spinning, the store of the state is the last access: the waiter may
 * return and its stack frame vanish right after it (a woken one stays
 * linked, and needs the bucket lock to go on). A parked sync waiter needs
 * the bucket lock to leave, so signalling after the store is safe. An
 * async waiter passes to its settle callback once, when it stops WAITING:
 * a request granted after it was woken is already on its way. */
void
tl__finish(tl_waiter_t *w, tl_state_t state)
{
  if (w->is_async) {
    int prev = atomic_exchange(&w->state, state);
    if (prev == TL_WAITING)
      w->settle(w);
    return;
  }
  if (w->parked) {
    tl_sync_waiter_t *sw = (tl_sync_waiter_t *)w;
    atomic_store(&w->state, state);
    tl_cond_signal(&sw->cond);
    return;
  }
  atomic_store(&w->state, state);
}

/* Removes a queued `w` (WAITING or WOKEN) that leaves without a notify or
 * grant (timeout, cancel, a stopped thread). Its gate decides what that
 * means for the waiters behind it. Expects b->lock; the caller sets the
 * final state afterwards. */
void
tl__remove(tl_bucket_t *b, tl_waiter_t *w)
{
  tl__unlink(b, w);
  if (w->hooks != NULL)
    w->hooks->left(b, w);
}

/* Sleeps until `sw` leaves the list. Called with b->lock held and the
 * waiter enqueued; returns with b->lock held. */
static int
tl__park(tl_bucket_t *b, tl_sync_waiter_t *sw, uint64_t deadline,
         const tl_probe_t *probe)
{
  tl_waiter_t *w = &sw->base;

  w->parked = 1;
  for (;;) {
    uint64_t now, slice;

    if (atomic_load(&w->state) != TL_WAITING)
      return TL_RESULT_OK;
    now = tl_now_ns();
    /* DoWait: a spurious wakeup never ends the wait; only the deadline does. */
    if (now >= deadline) {
      tl__remove(b, w);
      atomic_store(&w->state, TL_TIMED_OUT);
      return TL_RESULT_TIMED_OUT;
    }
    slice = deadline == UINT64_MAX ? UINT64_MAX : deadline - now;
    if (probe != NULL && probe->slice_ns < slice)
      slice = probe->slice_ns;
    if (slice == UINT64_MAX) {
      tl_cond_wait(&sw->cond, &b->lock);
      continue;
    }
    if (!tl_cond_timedwait(&sw->cond, &b->lock, slice))
      continue;
    if (probe == NULL || atomic_load(&w->state) != TL_WAITING)
      continue;
    /* The probe may call into the runtime; never do that under a bucket
     * lock. A notify that comes meanwhile is seen by the state check. */
    tl_mutex_unlock(&b->lock);
    int stop = probe->fn(probe->data);
    tl_mutex_lock(&b->lock);
    if (stop && atomic_load(&w->state) == TL_WAITING) {
      tl__remove(b, w);
      atomic_store(&w->state, TL_CANCELLED);
      return TL_RESULT_INTERRUPTED;
    }
    if (stop && atomic_load(&w->state) == TL_WOKEN) {
      /* Woken to compete while the probe ran: withdraw, passing the wake
       * on. */
      tl__remove(b, w);
      atomic_store(&w->state, TL_CANCELLED);
      return TL_RESULT_INTERRUPTED;
    }
    if (stop && w->hooks != NULL) {
      /* A grant that came while the probe ran reaches a thread that will
       * never run again: give it back now. */
      w->hooks->abandon(b, w);
      return TL_RESULT_INTERRUPTED;
    }
  }
}

/* Spins briefly on the waiter's own state before the caller parks; a
 * notify that comes within the spin costs no system call on either side.
 * Runs without any lock. Returns nonzero if the wait already ended. */
static int
tl__spin(tl_waiter_t *w, uint64_t deadline)
{
  unsigned limit = atomic_load_explicit(&tl__spin_limit, memory_order_relaxed);
  unsigned budget;
  int done = 0;

  if (limit == 0 || (deadline != UINT64_MAX && deadline <= tl_now_ns()))
    return 0;
  /* Spinning pays only while the notifier has a core to run on: with more
   * spinners than half the cores they would take the cores from the very
   * threads they wait for. Late comers park at once. */
  if (atomic_fetch_add(&tl__spinners, 1) >= tl__max_spinners) {
    atomic_fetch_sub(&tl__spinners, 1);
    return 0;
  }
  /* Each thread adapts its spin to how its waits end: a spin that was
   * rewarded doubles the next one, a wasted one halves it, and every 16th
   * wait tries the full limit again in case the load went away. */
  budget = tl__spin_budget != 0 ? tl__spin_budget : limit;
  if (budget > limit || (++tl__spin_waits & 15) == 0)
    budget = limit;
  for (unsigned i = 0; i < budget; i++) {
    if (atomic_load_explicit(&w->state, memory_order_acquire) != TL_WAITING) {
      done = 1;
      break;
    }
    tl_cpu_relax();
  }
  atomic_fetch_sub(&tl__spinners, 1);
  if (done)
    tl__spin_budget = budget * 2 < limit ? budget * 2 : limit;
  else
    tl__spin_budget = budget / 2 > TL_SPIN_FLOOR ? budget / 2 : TL_SPIN_FLOOR;
  return done;
}

/* Runs on the waiting thread, which sleeps; `sw` was enqueued under
 * b->lock and the lock was released. Returns TL_RESULT_OK once the waiter
 * is no longer WAITING, else TIMED_OUT or INTERRUPTED (it left). */
int
tl__block(tl_bucket_t *b, tl_sync_waiter_t *sw, uint64_t deadline,
          const tl_probe_t *probe, int spin)
{
  int r;

  if (spin && tl__spin(&sw->base, deadline))
    return TL_RESULT_OK;
  tl_cond_init(&sw->cond);
  tl_mutex_lock(&b->lock);
  r = tl__park(b, sw, deadline, probe);
  sw->base.parked = 0;
  tl_mutex_unlock(&b->lock);
  tl_cond_destroy(&sw->cond);
  return r;
}

void
tl__init_sync(tl_sync_waiter_t *sw, uintptr_t addr, int gate, uint32_t id,
              uint32_t amount)
{
  sw->base.next = sw->base.prev = NULL;
  sw->base.addr = addr;
  sw->base.gate = (uint8_t)gate;
  sw->base.lock_id = id;
  sw->base.amount = amount;
  atomic_init(&sw->base.state, TL_WAITING);
  sw->base.owner_died = 0;
  sw->base.granted = 0;
  sw->base.since = 0;
  sw->base.hooks = NULL;
  sw->base.parked = 0;
  sw->base.is_async = 0;
  sw->base.settle = NULL;
  sw->base.on_loop = 0;
  sw->base.present = 0;
  sw->base.watching = 0;
}

int
tl_wait(void *addr, int width, int64_t expected, double timeout_ms,
        const tl_probe_t *probe)
{
  tl_bucket_t *b = tl__bucket((uintptr_t)addr);
  uint64_t deadline = tl__deadline(timeout_ms);
  tl_sync_waiter_t sw;

  tl__init_sync(&sw, (uintptr_t)addr, TL_GATE_NONE, 0, 0);
  tl_mutex_lock(&b->lock);
  /* DoWait steps 20-22: compare under the critical section. */
  if (tl__load(addr, width) != expected) {
    tl_mutex_unlock(&b->lock);
    return TL_RESULT_NOT_EQUAL;
  }
  tl__enqueue(b, &sw.base);
  tl_mutex_unlock(&b->lock);
  return tl__block(b, &sw, deadline, probe, 1);
}

void
tl_waiter_init_async(tl_waiter_t *w, tl_settle_cb settle)
{
  w->next = w->prev = NULL;
  w->addr = 0;
  w->gate = TL_GATE_NONE;
  w->lock_id = 0;
  w->amount = 0;
  /* Not WAITING until it is enqueued, so that a tl_cancel of a node that
   * never made it into the list finds nothing to unlink. */
  atomic_init(&w->state, TL_CANCELLED);
  w->owner_died = 0;
  w->granted = 0;
  w->since = 0;
  w->hooks = NULL;
  w->parked = 0;
  w->is_async = 1;
  w->settle = settle;
  w->on_loop = 1;
  w->present = 0;
  w->watching = 0;
}

int
tl_wait_async(tl_waiter_t *w, void *addr, int width, int64_t expected,
              int zero_timeout)
{
  tl_bucket_t *b = tl__bucket((uintptr_t)addr);

  w->addr = (uintptr_t)addr;
  w->gate = TL_GATE_NONE;
  w->lock_id = 0;
  w->amount = 0;
  w->hooks = NULL;
  tl_mutex_lock(&b->lock);
  if (tl__load(addr, width) != expected) {
    tl_mutex_unlock(&b->lock);
    return TL_RESULT_NOT_EQUAL;
  }
  /* DoWait step 23: an async wait with timeout 0 ends without waiting, but
   * only after the comparison. */
  if (zero_timeout) {
    tl_mutex_unlock(&b->lock);
    return TL_RESULT_TIMED_OUT;
  }
  atomic_store(&w->state, TL_WAITING);
  tl__enqueue(b, w);
  tl_mutex_unlock(&b->lock);
  return TL_RESULT_PENDING;
}

int
tl_cancel(tl_waiter_t *w, tl_state_t why)
{
  tl_bucket_t *b = tl__bucket(w->addr);
  int removed = 0;

  tl_mutex_lock(&b->lock);
  switch (atomic_load(&w->state)) {
  case TL_WAITING:
    removed = TL_CANCEL_WAITING;
    break;
  case TL_WOKEN:
    removed = TL_CANCEL_WOKEN;
    break;
  default:
    break;
  }
  if (removed != 0) {
    tl__remove(b, w);
    atomic_store(&w->state, why);
  }
  tl_mutex_unlock(&b->lock);
  return removed;
}

int64_t
tl_notify(void *addr, int64_t count)
{
  tl_bucket_t *b = tl__bucket((uintptr_t)addr);
  tl_waiter_t *w, *next;
  int64_t woken = 0;

  tl_mutex_lock(&b->lock);
  for (w = b->head; w != NULL && (count < 0 || woken < count); w = next) {
    next = w->next;
    if (w->addr != (uintptr_t)addr || w->gate != TL_GATE_NONE)
      continue;
    tl__unlink(b, w);
    tl__finish(w, TL_NOTIFIED);
    woken++;
  }
  tl_mutex_unlock(&b->lock);
  return woken;
}

size_t
tl_waiter_count(void *addr)
{
  tl_bucket_t *b = tl__bucket((uintptr_t)addr);
  size_t n = 0;

  tl_mutex_lock(&b->lock);
  for (tl_waiter_t *w = b->head; w != NULL; w = w->next)
    if (w->addr == (uintptr_t)addr)
      n++;
  tl_mutex_unlock(&b->lock);
  return n;
}

size_t
tl_waiter_total(void)
{
  size_t n = 0;

  tl__bucket(0); /* initializes the table */
  for (size_t i = 0; i < TL_BUCKET_COUNT; i++) {
    tl_mutex_lock(&tl__table[i].lock);
    n += tl__table[i].count;
    tl_mutex_unlock(&tl__table[i].lock);
  }
  return n;
}

void
tl_set_spin(unsigned iterations)
{
  atomic_store(&tl__spin_limit, iterations);
}

#ifndef NDEBUG
void
tl_check_table(void)
{
  tl__bucket(0);
  for (size_t i = 0; i < TL_BUCKET_COUNT; i++) {
    tl_bucket_t *b = &tl__table[i];
    size_t n = 0;
    tl_waiter_t *prev = NULL;

    tl_mutex_lock(&b->lock);
    for (tl_waiter_t *w = b->head; w != NULL; w = w->next) {
      assert(w->prev == prev);
      assert(atomic_load(&w->state) == TL_WAITING ||
             (w->gate != TL_GATE_NONE && atomic_load(&w->state) == TL_WOKEN));
      assert(tl__bucket(w->addr) == b);
      if (w->gate != TL_GATE_NONE)
        assert(atomic_load((_Atomic int32_t *)w->addr) & TL_GATE_WAITERS);
      prev = w;
      n++;
    }
    assert(b->tail == prev);
    assert(b->count == n);
    tl_mutex_unlock(&b->lock);
  }
}
#endif
