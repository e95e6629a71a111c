/* The process-wide waiter list.
 *
 * Waiters are keyed by the address of the waited-on element. A fixed table
 * of buckets, each with one mutex and one FIFO list holding sync and async
 * waiters alike, serves every thread of the process. The value check and the
 * enqueue happen under the bucket lock that notify also takes, so a notify
 * that follows a store can never be missed.
 */
#include "waiters.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>

#include "platform.h"

#define TL_BUCKET_BITS 10
#define TL_BUCKET_COUNT (1u << TL_BUCKET_BITS)

typedef struct tl_bucket_s {
  _Alignas(64) tl_mutex_t lock;
  tl_waiter_t *head; /* protected by lock */
  tl_waiter_t *tail; /* protected by lock */
  size_t count;      /* protected by lock */
} tl_bucket_t;

/* A sync waiter lives on the stack of the thread that waits. */
typedef struct tl_sync_waiter_s {
  tl_waiter_t base;
  tl_cond_t cond; /* signalled under the bucket lock when parked */
} tl_sync_waiter_t;

static tl_bucket_t tl__table[TL_BUCKET_COUNT];
static tl_once_t tl__table_once = TL_ONCE_INIT;

/* Live lock owners; protected by tl__registry_lock. Threads come and go
 * rarely and a process has few of them, so a plain array is enough. */
static tl_mutex_t tl__registry_lock;
static uint32_t *tl__registry;
static size_t tl__registry_len;
static size_t tl__registry_cap;

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
  tl_mutex_init(&tl__registry_lock);
}

/* Fibonacci hashing spreads the 4- or 8-byte aligned addresses evenly. */
static tl_bucket_t *
tl__bucket(uintptr_t addr)
{
  uint64_t h = (uint64_t)addr * UINT64_C(0x9E3779B97F4A7C15);
  tl_once(&tl__table_once, tl__table_init);
  return &tl__table[h >> (64 - TL_BUCKET_BITS)];
}

static int64_t
tl__load(const void *addr, int width)
{
  if (width == 8)
    return atomic_load((_Atomic int64_t *)addr);
  return atomic_load((_Atomic int32_t *)addr);
}

/* Converts a relative timeout in milliseconds into an absolute deadline in
 * nanoseconds; UINT64_MAX stands for no deadline. */
static uint64_t
tl__deadline(double timeout_ms)
{
  uint64_t now = tl_now_ns();
  double ns;

  /* DoWait step 9: NaN and +Infinity mean no deadline, negative means 0. */
  if (isnan(timeout_ms) || (isinf(timeout_ms) && timeout_ms > 0))
    return UINT64_MAX;
  if (timeout_ms <= 0)
    return now;
  ns = ceil(timeout_ms * 1e6);
  if (ns >= (double)(UINT64_MAX - now))
    return UINT64_MAX;
  return now + (uint64_t)ns;
}

/* Appends `w` to the bucket's FIFO. Expects b->lock. */
static void
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

/* Puts `w` first in the bucket's FIFO, ahead of every waiter on every
 * address of the bucket. Expects b->lock. */
static void
tl__enqueue_front(tl_bucket_t *b, tl_waiter_t *w)
{
  w->prev = NULL;
  w->next = b->head;
  if (b->head != NULL)
    b->head->prev = w;
  else
    b->tail = w;
  b->head = w;
  b->count++;
}

/* Unlinks `w` from the bucket's FIFO. Expects b->lock. */
static void
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

/* The first gate waiter (lock, semaphore, read-write lock) on `addr` at
 * or after `from`. Expects b->lock. */
static tl_waiter_t *
tl__next_gate_waiter(tl_waiter_t *from, uintptr_t addr)
{
  for (tl_waiter_t *w = from; w != NULL; w = w->next)
    if (w->addr == addr && w->gate != TL_GATE_NONE)
      return w;
  return NULL;
}

/* Ends the wait of `w`, which the caller already unlinked, with `state`.
 * Expects b->lock. For a sync waiter that is still spinning, the store of
 * the state is the last access: the waiter may return and its stack frame
 * vanish right after it. A parked sync waiter needs the bucket lock to
 * leave, so signalling after the store is safe. An async waiter passes to
 * its settle callback. */
static void
tl__finish(tl_waiter_t *w, tl_state_t state)
{
  if (w->is_async) {
    atomic_store(&w->state, state);
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

static void tl__gate_after_leave(tl_bucket_t *b, tl_waiter_t *w);
static void tl__abandon(tl_bucket_t *b, tl_waiter_t *w);

/* Removes a waiting `w` that leaves without a notify or grant (timeout,
 * cancel). A gate waiter's leaving may let the waiters behind it in, and
 * the last one's leaving clears the word's waiters bit. Expects b->lock. */
static void
tl__remove(tl_bucket_t *b, tl_waiter_t *w)
{
  tl__unlink(b, w);
  if (w->gate != TL_GATE_NONE)
    tl__gate_after_leave(b, w);
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
    if (stop && w->gate != TL_GATE_NONE) {
      /* A grant that came while the probe ran reaches a thread that will
       * never run again: give it back now. */
      tl__abandon(b, w);
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
 * b->lock and the lock was released. Returns the final result. */
static int
tl__block(tl_bucket_t *b, tl_sync_waiter_t *sw, uint64_t deadline,
          const tl_probe_t *probe, int done_result)
{
  int r;

  if (tl__spin(&sw->base, deadline))
    return done_result;
  tl_cond_init(&sw->cond);
  tl_mutex_lock(&b->lock);
  r = tl__park(b, sw, deadline, probe);
  tl_mutex_unlock(&b->lock);
  tl_cond_destroy(&sw->cond);
  return r == TL_RESULT_OK ? done_result : r;
}

static void
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
  sw->base.requeue = 0;
  sw->base.since = 0;
  sw->base.parked = 0;
  sw->base.is_async = 0;
  sw->base.settle = NULL;
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
  return tl__block(b, &sw, deadline, probe, TL_RESULT_OK);
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
  w->requeue = 0;
  w->since = 0;
  w->parked = 0;
  w->is_async = 1;
  w->settle = settle;
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
  if (atomic_load(&w->state) == TL_WAITING) {
    tl__remove(b, w);
    atomic_store(&w->state, why);
    removed = 1;
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

/* Registry of live ids. */

int
tl_thread_alive(uint32_t id)
{
  int alive = 0;

  tl__bucket(0);
  tl_mutex_lock(&tl__registry_lock);
  for (size_t i = 0; i < tl__registry_len; i++) {
    if (tl__registry[i] == id) {
      alive = 1;
      break;
    }
  }
  tl_mutex_unlock(&tl__registry_lock);
  return alive;
}

void
tl_thread_register(uint32_t id)
{
  tl__bucket(0);
  tl_mutex_lock(&tl__registry_lock);
  if (tl__registry_len == tl__registry_cap) {
    size_t cap = tl__registry_cap ? tl__registry_cap * 2 : 16;
    uint32_t *grown = realloc(tl__registry, cap * sizeof(*grown));
    if (grown == NULL)
      abort();
    tl__registry = grown;
    tl__registry_cap = cap;
  }
  tl__registry[tl__registry_len++] = id;
  tl_mutex_unlock(&tl__registry_lock);
}

/* Hands the lock at w->addr to `w`, the first lock waiter on it, which the
 * caller already unlinked. Expects b->lock; the caller owns the word. */
static void
tl__grant(tl_bucket_t *b, tl_waiter_t *w, int owner_died)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
  int32_t next = (int32_t)w->lock_id;

  if (owner_died)
    next |= TL_LOCK_OWNER_DIED;
  if (tl__next_gate_waiter(b->head, w->addr) != NULL)
    next |= TL_GATE_WAITERS;
  atomic_store(word, next);
  w->owner_died = (uint8_t)owner_died;
  w->granted = 1;
  tl__finish(w, TL_NOTIFIED);
}

/* Grants semaphore waiters at the head of the queue on `addr` for as long
 * as the permits suffice; FIFO means a large request at the head holds back
 * smaller ones behind it. Expects b->lock. While waiters are queued the
 * waiters bit is set and the compare-exchange fast paths stay away, so the
 * stores below cannot lose a concurrent update. */
static void
tl__sem_pass(tl_bucket_t *b, uintptr_t addr)
{
  _Atomic int32_t *word = (_Atomic int32_t *)addr;

  for (;;) {
    tl_waiter_t *h = tl__next_gate_waiter(b->head, addr);
    int32_t v = atomic_load(word);
    uint32_t avail = (uint32_t)(v & TL_SEM_MASK);

    if (h == NULL) {
      if (v & TL_GATE_WAITERS)
        atomic_fetch_and(word, ~TL_GATE_WAITERS);
      return;
    }
    if (avail < h->amount)
      return;
    tl__unlink(b, h);
    v = (int32_t)(avail - h->amount);
    if (tl__next_gate_waiter(b->head, addr) != NULL)
      v |= TL_GATE_WAITERS;
    atomic_store(word, v);
    h->granted = 1;
    tl__finish(h, TL_NOTIFIED);
  }
}

/* Grants read-write lock waiters at the head of the queue on `addr`: one
 * writer once no reader or writer holds it, or every reader up to the next
 * queued writer. A queued writer thus holds back later readers, so a stream
 * of readers cannot starve it. Expects b->lock. */
static void
tl__rw_pass(tl_bucket_t *b, uintptr_t addr, int owner_died)
{
  _Atomic int32_t *word = (_Atomic int32_t *)addr;

  for (;;) {
    tl_waiter_t *h = tl__next_gate_waiter(b->head, addr);
    int32_t v = atomic_load(word);
    int32_t readers = v & TL_RW_MASK;

    if (h == NULL) {
      if (v & TL_GATE_WAITERS)
        atomic_fetch_and(word, ~TL_GATE_WAITERS);
      return;
    }
    if ((v & TL_RW_WRITER) || (h->gate == TL_GATE_WRITE && readers != 0))
      return;
    tl__unlink(b, h);
    v = h->gate == TL_GATE_WRITE ? (int32_t)(TL_RW_WRITER | h->lock_id)
                                 : readers + 1;
    if (tl__next_gate_waiter(b->head, addr) != NULL)
      v |= TL_GATE_WAITERS;
    atomic_store(word, v);
    h->owner_died = (uint8_t)owner_died;
    h->granted = 1;
    owner_died = 0;
    tl__finish(h, TL_NOTIFIED);
  }
}

/* Grants what the queue on w->addr can take after `w`, a gate waiter, left
 * without a grant; when it was the last one, clears the waiters bit so that
 * the owner can release with a compare-exchange again. Expects b->lock. */
static void
tl__gate_after_leave(tl_bucket_t *b, tl_waiter_t *w)
{
  switch (w->gate) {
  case TL_GATE_LOCK:
    if (tl__next_gate_waiter(b->head, w->addr) == NULL)
      atomic_fetch_and((_Atomic int32_t *)w->addr, ~TL_GATE_WAITERS);
    break;
  case TL_GATE_SEM:
    tl__sem_pass(b, w->addr);
    break;
  default:
    tl__rw_pass(b, w->addr, 0);
    break;
  }
}

void
tl_thread_unregister(uint32_t id)
{
  tl__bucket(0);
  tl_mutex_lock(&tl__registry_lock);
  for (size_t i = 0; i < tl__registry_len; i++) {
    if (tl__registry[i] == id) {
      tl__registry[i] = tl__registry[--tl__registry_len];
      break;
    }
  }
  tl_mutex_unlock(&tl__registry_lock);

  /* Any lock or write lock this id still holds with waiters goes to its
   * first waiter now; one without waiters is taken over by its next
   * acquirer. A waiter that enqueues after its bucket was scanned finds the
   * owner unregistered. */
  for (size_t i = 0; i < TL_BUCKET_COUNT; i++) {
    tl_bucket_t *b = &tl__table[i];
    tl_waiter_t *w, *next;

    tl_mutex_lock(&b->lock);
    for (w = b->head; w != NULL; w = next) {
      _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
      int32_t v = atomic_load(word);

      next = w->next;
      if (w->gate == TL_GATE_LOCK) {
        if ((uint32_t)(v & TL_LOCK_ID_MASK) != id)
          continue;
        /* `w` is the first lock waiter on its word: an earlier one would
         * have been granted already in this pass. */
        tl__unlink(b, w);
        tl__grant(b, w, 1);
      } else if (w->gate == TL_GATE_READ || w->gate == TL_GATE_WRITE) {
        if (!(v & TL_RW_WRITER) || (uint32_t)(v & TL_RW_MASK) != id)
          continue;
        atomic_store(word, v & TL_GATE_WAITERS);
        tl__rw_pass(b, w->addr, 1);
      } else {
        continue;
      }
      next = b->head; /* grants may have unlinked more than `w` */
    }
    tl_mutex_unlock(&b->lock);
  }
}

/* Whether the thread of `w` already has a request queued for its word: a
 * blocking acquire would then wait for a grant that only this very thread
 * could ever use. Expects b->lock. */
static int
tl__queued(tl_bucket_t *b, tl_waiter_t *w)
{
  for (tl_waiter_t *q = b->head; q != NULL; q = q->next)
    if (q->addr == w->addr && q->gate != TL_GATE_NONE &&
        q->lock_id == w->lock_id)
      return 1;
  return 0;
}

/* Enqueues `w` after setting the waiters bit of its word, which `v` was
 * last read as. Returns 0, or -1 when the word changed first (`v` then
 * holds the new value). Expects b->lock. */
static int
tl__gate_enqueue(tl_bucket_t *b, tl_waiter_t *w, int32_t *v)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;

  if (!(*v & TL_GATE_WAITERS) &&
      !atomic_compare_exchange_weak(word, v, *v | TL_GATE_WAITERS))
    return -1;
  atomic_store(&w->state, TL_WAITING);
  if (w->since == 0)
    w->since = tl_now_ns();
  if (w->requeue)
    tl__enqueue_front(b, w);
  else
    tl__enqueue(b, w);
  return 0;
}

/* Tries to take the lock without waiting, or enqueues `w` behind the
 * current owner. A sync request (allow_self == 0) from the owner, or from a
 * thread with a request already queued, fails with TL_EDEADLK; an async one
 * queues. Expects b->lock. */
static int
tl__lock_try_enqueue(tl_bucket_t *b, tl_waiter_t *w, int allow_self)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
  int32_t v = atomic_load(word);

  for (;;) {
    uint32_t owner = (uint32_t)(v & TL_LOCK_ID_MASK);

    /* In the throughput mode a word without an owner is free even while
     * waiters are queued (their bit stays); in the fair mode that state
     * never occurs, since releases hand the lock over. */
    if (v == 0 || (owner == 0 && (w->amount & TL_LOCK_BARGE))) {
      if (atomic_compare_exchange_weak(word, &v, v | (int32_t)w->lock_id))
        return TL_RESULT_ACQUIRED;
      continue;
    }
    if (!allow_self && (owner == w->lock_id || tl__queued(b, w)))
      return TL_EDEADLK;
    if (owner != w->lock_id && !tl_thread_alive(owner)) {
      tl_waiter_t *first = tl__next_gate_waiter(b->head, w->addr);
      if (first == NULL) {
        /* Nobody queued: take over. Gate waiters only write a word with an
         * owner set under this lock, so a plain store is safe. */
        atomic_store(word, (int32_t)(w->lock_id | TL_LOCK_OWNER_DIED));
        return TL_RESULT_OWNER_DIED;
      }
      /* Queued waiters come first: the oldest takes over, we queue. */
      tl__unlink(b, first);
      tl__grant(b, first, 1);
      v = atomic_load(word);
      continue;
    }
    if (tl__gate_enqueue(b, w, &v) == 0)
      return TL_RESULT_PENDING;
  }
}

/* Takes `amount` permits, or queues behind earlier requests. */
static int
tl__sem_try_enqueue(tl_bucket_t *b, tl_waiter_t *w)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
  int queued = tl__next_gate_waiter(b->head, w->addr) != NULL;
  int32_t v = atomic_load(word);

  for (;;) {
    if (!queued && (uint32_t)(v & TL_SEM_MASK) >= w->amount) {
      if (atomic_compare_exchange_weak(word, &v, v - (int32_t)w->amount))
        return TL_RESULT_ACQUIRED;
      continue;
    }
    if (tl__gate_enqueue(b, w, &v) == 0)
      return TL_RESULT_PENDING;
  }
}

/* Takes a read or write lock, or queues. A writer that died holding the
 * word is cleared out first; the grant that follows says so. */
static int
tl__rw_try_enqueue(tl_bucket_t *b, tl_waiter_t *w, int allow_self)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
  int32_t v = atomic_load(word);
  int took_over = 0;

  for (;;) {
    int queued = tl__next_gate_waiter(b->head, w->addr) != NULL;

    if (v & TL_RW_WRITER) {
      uint32_t owner = (uint32_t)(v & TL_RW_MASK);
      if (owner == w->lock_id && !allow_self)
        return TL_EDEADLK;
      if (owner != w->lock_id && !tl_thread_alive(owner)) {
        atomic_store(word, v & TL_GATE_WAITERS);
        took_over = !queued;
        tl__rw_pass(b, w->addr, 1);
        v = atomic_load(word);
        continue;
      }
    } else if (!queued) {
      int32_t next = w->gate == TL_GATE_READ
                         ? v + 1
                         : (int32_t)(TL_RW_WRITER | w->lock_id);
      if (w->gate == TL_GATE_READ ? (v & TL_RW_MASK) < TL_RW_MASK
                                  : (v & TL_RW_MASK) == 0) {
        if (atomic_compare_exchange_weak(word, &v, next))
          return took_over ? TL_RESULT_OWNER_DIED : TL_RESULT_ACQUIRED;
        continue;
      }
    }
    if (!allow_self && tl__queued(b, w))
      return TL_EDEADLK;
    if (tl__gate_enqueue(b, w, &v) == 0)
      return TL_RESULT_PENDING;
  }
}

static int
tl__gate_try_enqueue(tl_bucket_t *b, tl_waiter_t *w, int allow_self)
{
  switch (w->gate) {
  case TL_GATE_LOCK:
    return tl__lock_try_enqueue(b, w, allow_self);
  case TL_GATE_SEM:
    return tl__sem_try_enqueue(b, w);
  default:
    return tl__rw_try_enqueue(b, w, allow_self);
  }
}

static int
tl__valid_gate(int gate, uint32_t id, uint32_t amount)
{
  if (gate == TL_GATE_SEM)
    return amount <= TL_SEM_MASK;
  if (gate == TL_GATE_LOCK && amount > TL_LOCK_BARGE)
    return 0;
  return (gate == TL_GATE_LOCK || gate == TL_GATE_READ ||
          gate == TL_GATE_WRITE) &&
         id != 0 && id <= TL_LOCK_ID_MASK;
}

int
tl_gate_acquire(int32_t *word, int gate, uint32_t id, uint32_t amount,
                double timeout_ms, const tl_probe_t *probe)
{
  tl_bucket_t *b = tl__bucket((uintptr_t)word);
  uint64_t deadline = tl__deadline(timeout_ms);
  tl_sync_waiter_t sw;
  int r;

  if (!tl__valid_gate(gate, id, amount))
    return TL_EINVAL;
  tl__init_sync(&sw, (uintptr_t)word, gate, id, amount);
  tl_mutex_lock(&b->lock);
  r = tl__gate_try_enqueue(b, &sw.base, 0);
  if (r != TL_RESULT_PENDING) {
    tl_mutex_unlock(&b->lock);
    return r;
  }
  if (deadline <= tl_now_ns()) {
    tl__remove(b, &sw.base);
    tl_mutex_unlock(&b->lock);
    return TL_RESULT_TIMED_OUT;
  }
  tl_mutex_unlock(&b->lock);
  for (;;) {
    r = tl__block(b, &sw, deadline, probe, TL_RESULT_ACQUIRED);
    if (r != TL_RESULT_ACQUIRED || sw.base.granted)
      break;
    /* Throughput mode: woken, not granted. Compete for the free word; on
     * losing, wait again first in line, keeping the original deadline. */
    tl_mutex_lock(&b->lock);
    sw.base.parked = 0;
    sw.base.requeue = 1;
    r = tl__gate_try_enqueue(b, &sw.base, 0);
    if (r != TL_RESULT_PENDING) {
      tl_mutex_unlock(&b->lock);
      return r;
    }
    if (deadline <= tl_now_ns()) {
      tl__remove(b, &sw.base);
      tl_mutex_unlock(&b->lock);
      return TL_RESULT_TIMED_OUT;
    }
    tl_mutex_unlock(&b->lock);
  }
  if (r == TL_RESULT_ACQUIRED && sw.base.owner_died)
    r = TL_RESULT_OWNER_DIED;
  return r;
}

int
tl_gate_acquire_async(tl_waiter_t *w, int32_t *word, int gate, uint32_t id,
                      uint32_t amount)
{
  tl_bucket_t *b = tl__bucket((uintptr_t)word);
  int r;

  if (!tl__valid_gate(gate, id, amount))
    return TL_EINVAL;
  w->addr = (uintptr_t)word;
  w->gate = (uint8_t)gate;
  w->lock_id = id;
  w->amount = amount;
  w->owner_died = 0;
  tl_mutex_lock(&b->lock);
  r = tl__gate_try_enqueue(b, w, 1);
  tl_mutex_unlock(&b->lock);
  return r;
}

int
tl_gate_retry_async(tl_waiter_t *w)
{
  tl_bucket_t *b = tl__bucket(w->addr);
  int r;

  tl_mutex_lock(&b->lock);
  w->requeue = 1;
  r = tl__gate_try_enqueue(b, w, 1);
  tl_mutex_unlock(&b->lock);
  return r;
}

/* tl_gate_release with b->lock held. */
static int
tl__gate_release_locked(tl_bucket_t *b, int32_t *word, int gate, uint32_t id,
                        uint32_t amount)
{
  _Atomic int32_t *aword = (_Atomic int32_t *)word;
  tl_waiter_t *first;
  int32_t v = atomic_load(aword);
  int r = 0;

  switch (gate) {
  case TL_GATE_LOCK:
    if ((uint32_t)(v & TL_LOCK_ID_MASK) != id) {
      r = TL_ENOTOWNER;
      break;
    }
    first = tl__next_gate_waiter(b->head, (uintptr_t)word);
    if (first == NULL) {
      atomic_store(aword, 0);
    } else if ((amount & TL_LOCK_BARGE) &&
               tl_now_ns() - first->since < TL_LOCK_STARVING_NS) {
      /* Throughput mode: free the word, keeping the waiters bit if more
       * wait, and wake the oldest waiter to compete for it. */
      tl__unlink(b, first);
      atomic_store(aword, tl__next_gate_waiter(b->head, (uintptr_t)word)
                              ? TL_GATE_WAITERS
                              : 0);
      first->granted = 0;
      tl__finish(first, TL_NOTIFIED);
    } else {
      /* Direct hand-off keeps the grants in FIFO order: the word never
       * becomes 0 while a waiter is queued, so nobody can barge in. */
      tl__unlink(b, first);
      tl__grant(b, first, 0);
    }
    break;
  case TL_GATE_SEM:
    /* The fast paths may still run while no waiter is queued. */
    do {
      if ((uint32_t)(v & TL_SEM_MASK) + amount > TL_SEM_MASK) {
        r = TL_EOVERFLOW;
        break;
      }
    } while (!atomic_compare_exchange_weak(aword, &v, v + (int32_t)amount));
    if (r == 0)
      tl__sem_pass(b, (uintptr_t)word);
    break;
  case TL_GATE_READ:
    do {
      if ((v & TL_RW_WRITER) || (v & TL_RW_MASK) == 0) {
        r = TL_ENOTOWNER;
        break;
      }
    } while (!atomic_compare_exchange_weak(aword, &v, v - 1));
    if (r == 0)
      tl__rw_pass(b, (uintptr_t)word, 0);
    break;
  default:
    if (!(v & TL_RW_WRITER) || (uint32_t)(v & TL_RW_MASK) != id) {
      r = TL_ENOTOWNER;
      break;
    }
    atomic_fetch_and(aword, TL_GATE_WAITERS);
    tl__rw_pass(b, (uintptr_t)word, 0);
    break;
  }
  return r;
}

int
tl_gate_release(int32_t *word, int gate, uint32_t id, uint32_t amount)
{
  tl_bucket_t *b = tl__bucket((uintptr_t)word);
  int r;

  if (!tl__valid_gate(gate, id, amount))
    return TL_EINVAL;
  tl_mutex_lock(&b->lock);
  r = tl__gate_release_locked(b, word, gate, id, amount);
  tl_mutex_unlock(&b->lock);
  return r;
}

/* Gives back what the notified gate waiter `w` got but will never use: a
 * grant is released; a throughput-mode wake (no grant) passes to the next
 * waiter if the lock is still free, so the queue does not stall. Expects
 * b->lock. */
static void
tl__abandon(tl_bucket_t *b, tl_waiter_t *w)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
  tl_waiter_t *first;

  if (w->granted) {
    tl__gate_release_locked(b, (int32_t *)w->addr, w->gate, w->lock_id,
                            w->amount);
    return;
  }
  if (w->gate != TL_GATE_LOCK || (atomic_load(word) & TL_LOCK_ID_MASK) != 0 ||
      (first = tl__next_gate_waiter(b->head, w->addr)) == NULL)
    return;
  tl__unlink(b, first);
  if (tl__next_gate_waiter(b->head, w->addr) == NULL)
    atomic_fetch_and(word, ~TL_GATE_WAITERS);
  first->granted = 0;
  tl__finish(first, TL_NOTIFIED);
}

void
tl_gate_abandon(tl_waiter_t *w)
{
  tl_bucket_t *b = tl__bucket(w->addr);

  if (w->gate == TL_GATE_NONE)
    return;
  tl_mutex_lock(&b->lock);
  if (atomic_load(&w->state) == TL_NOTIFIED)
    tl__abandon(b, w);
  tl_mutex_unlock(&b->lock);
}

int
tl_lock_acquire(int32_t *word, uint32_t id, double timeout_ms,
                const tl_probe_t *probe)
{
  return tl_gate_acquire(word, TL_GATE_LOCK, id, 0, timeout_ms, probe);
}

int
tl_lock_acquire_async(tl_waiter_t *w, int32_t *word, uint32_t id)
{
  return tl_gate_acquire_async(w, word, TL_GATE_LOCK, id, 0);
}

int
tl_lock_release(int32_t *word, uint32_t id)
{
  return tl_gate_release(word, TL_GATE_LOCK, id, 0);
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
      assert(atomic_load(&w->state) == TL_WAITING);
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
