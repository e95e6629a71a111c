/* The gates on top of the parking table: lock, semaphore and read-write
 * lock words whose grants are decided under the word's bucket lock.
 * Acquire, release, timeout, abandon and retry for every kind, and the
 * semaphore's and read-write lock's policies; the lock's own policy is in
 * lock.c.
 */
#include "waiters.h"

#include <stdlib.h>

#include "platform.h"
#include "tl_internal.h"

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
void
tl__rw_pass(tl_bucket_t *b, uintptr_t addr, int owner_died)
{
  _Atomic int32_t *word = (_Atomic int32_t *)addr;

  for (;;) {
    tl_waiter_t *h = tl__next_gate_waiter(b->head, addr);
    int32_t v = atomic_load(word);
    int32_t readers = v & TL_RW_MASK;
    int32_t next;

    if (h == NULL) {
      if (v & TL_GATE_WAITERS)
        atomic_fetch_and(word, ~TL_GATE_WAITERS);
      return;
    }
    if ((v & TL_RW_WRITER) || (h->gate == TL_GATE_WRITE && readers != 0))
      return;
    next = (v & TL_LOCK_WOKEN) |
           (h->gate == TL_GATE_WRITE ? (int32_t)(TL_RW_WRITER | h->lock_id)
                                     : readers + 1);
    if (tl__next_gate_waiter(h->next, addr) != NULL)
      next |= TL_GATE_WAITERS;
    /* A free word can be taken meanwhile by a barging writer in JavaScript:
     * grant only through a compare-exchange, and look again if it fails. */
    if (!atomic_compare_exchange_strong(word, &v, next))
      continue;
    tl__unlink(b, h);
    h->owner_died = (uint8_t)owner_died;
    h->granted = 1;
    owner_died = 0;
    tl__finish(h, TL_NOTIFIED);
  }
}

/* Grants what the queue on w->addr can take after `w`, a gate waiter, left
 * without a grant; when it was the last one, clears the waiters bit so that
 * the owner can release with a compare-exchange again. Expects b->lock. */
void
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

/* Whether the thread of `w` already has a request queued for its word: a
 * blocking acquire would then wait for a grant that only this very thread
 * could ever use. Expects b->lock. */
int
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
int
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
      if (owner != w->lock_id && owner != TL_LOCK_PASSING &&
          !tl_thread_alive(owner)) {
        atomic_store(word, v & (TL_GATE_WAITERS | TL_LOCK_WOKEN));
        took_over = !queued;
        tl__rw_pass(b, w->addr, 1);
        v = atomic_load(word);
        continue;
      }
    } else if (queued && w->gate == TL_GATE_WRITE &&
               (w->amount & TL_LOCK_BARGE) && (v & TL_RW_MASK) == 0) {
      /* Barging mode: a writer takes a free word while others wait. */
      if (atomic_compare_exchange_weak(
              word, &v, v | (int32_t)(TL_RW_WRITER | w->lock_id)))
        return took_over ? TL_RESULT_OWNER_DIED : TL_RESULT_ACQUIRED;
      continue;
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
  /* A woken waiter (lock or writer) yields or takes the word first. */
  if (w->woken) {
    int r = tl__barge_yield(b, w);
    if (r != 0)
      return r;
  }
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
  if ((gate == TL_GATE_LOCK || gate == TL_GATE_WRITE) &&
      amount > (TL_LOCK_BARGE | TL_LOCK_HANDOFF))
    return 0;
  return (gate == TL_GATE_LOCK || gate == TL_GATE_READ ||
          gate == TL_GATE_WRITE) &&
         id != 0 && id < TL_LOCK_PASSING;
}

/* One attempt of a sync gate waiter: takes the gate or (re)enqueues `sw`,
 * which leaves again at once if its deadline has passed. Takes b->lock. */
static int
tl__gate_enter(tl_bucket_t *b, tl_sync_waiter_t *sw, uint64_t deadline)
{
  int r;

  tl_mutex_lock(&b->lock);
  r = tl__gate_try_enqueue(b, &sw->base, 0);
  if (r == TL_RESULT_PENDING && deadline <= tl_now_ns()) {
    tl__remove(b, &sw->base);
    r = TL_RESULT_TIMED_OUT;
  }
  tl_mutex_unlock(&b->lock);
  return r;
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
  r = tl__gate_enter(b, &sw, deadline);
  while (r == TL_RESULT_PENDING) {
    r = tl__block(b, &sw, deadline, probe, TL_RESULT_ACQUIRED);
    if (r != TL_RESULT_ACQUIRED || sw.base.granted)
      break;
    /* Barging mode: woken, not granted. Compete for the free word (or
     * yield to its owner); on losing, wait again first in line, keeping
     * the original deadline. The waiter is off the list here, so these
     * fields are its own. */
    sw.base.parked = 0;
    sw.base.requeue = 1;
    r = tl__gate_enter(b, &sw, deadline);
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
  int32_t v = atomic_load(aword);
  int r = 0;

  switch (gate) {
  case TL_GATE_LOCK:
    if ((uint32_t)(v & TL_LOCK_ID_MASK) != id) {
      r = TL_ENOTOWNER;
      break;
    }
    r = tl__barge_release_locked(b, aword, v, TL_GATE_LOCK, amount);
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
    if (amount & TL_LOCK_BARGE) {
      r = tl__barge_release_locked(b, aword, v, TL_GATE_WRITE, amount);
      break;
    }
    atomic_fetch_and(aword, TL_GATE_WAITERS | TL_LOCK_WOKEN);
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
 * grant is released; a barging-mode wake (no grant) passes to the next
 * waiter if the lock is still free, so the queue does not stall. Expects
 * b->lock. */
void
tl__abandon(tl_bucket_t *b, tl_waiter_t *w)
{
  if (w->granted) {
    tl__gate_release_locked(b, (int32_t *)w->addr, w->gate, w->lock_id,
                            w->amount);
    return;
  }
  if (w->gate == TL_GATE_LOCK)
    tl__lock_abandon_wake(b, w);
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
