/* The gate policies on top of the parking table: lock, semaphore and
 * read-write lock words whose grants are decided under the word's bucket
 * lock. Acquire, release, grant and hand-off, timeout, abandon and retry.
 */
#include "waiters.h"

#include <stdlib.h>

#include "platform.h"
#include "tl_internal.h"

/* Hands the lock at w->addr to `w`, the first lock waiter on it, which the
 * caller already unlinked. Expects b->lock; the caller owns the word. */
void
tl__grant(tl_bucket_t *b, tl_waiter_t *w, int owner_died)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
  /* A waiter woken to compete may still be on its way: its bit stays. */
  int32_t next = (int32_t)w->lock_id | (atomic_load(word) & TL_LOCK_WOKEN);

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
void
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

/* A woken lock waiter gives its word's woken bit back before it competes,
 * so that the next release wakes a waiter again. A word that a release
 * passed to it (owner LOCK_PASSING) it takes: returns ACQUIRED. If the word
 * is in use, the waiter does not compete at all: it goes back first in line
 * (keeping its age) and returns PENDING. A word that is free at that moment
 * may belong to an owner in a hot loop, between two of its critical
 * sections, and taking it would cut that owner's slice short (an owner on
 * an event loop leaves such gaps of a few hundred nanoseconds at every
 * grant). So the waiter watches a free word for TL_LOCK_COURTESY_NS first,
 * and competes for it (returns 0) only if nobody takes it. The bit goes
 * back in the same compare-exchange that sets the waiters bit, so the
 * owner's release cannot miss the waiter. Expects b->lock. */
static int
tl__lock_yield(tl_bucket_t *b, tl_waiter_t *w)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
  uint64_t until = 0;
  int32_t v = atomic_load(word);

  w->woken = 0;
  for (;;) {
    uint32_t owner = (uint32_t)(v & TL_LOCK_ID_MASK);

    if (owner == TL_LOCK_PASSING) {
      if (!atomic_compare_exchange_weak(
              word, &v,
              (v & ~(TL_LOCK_WOKEN | TL_LOCK_ID_MASK)) | (int32_t)w->lock_id))
        continue;
      return TL_RESULT_ACQUIRED;
    }
    if (owner != 0 && owner != w->lock_id && tl_thread_alive(owner)) {
      if (!atomic_compare_exchange_weak(word, &v,
                                        (v & ~TL_LOCK_WOKEN) | TL_GATE_WAITERS))
        continue;
      atomic_store(&w->state, TL_WAITING);
      tl__enqueue_front(b, w);
      return TL_RESULT_PENDING;
    }
    if (owner == 0) {
      uint64_t now = tl_now_ns();
      if (until == 0)
        until = now + TL_LOCK_COURTESY_NS;
      if (now < until) {
        for (int i = 0; i < 16; i++)
          tl_cpu_relax();
        v = atomic_load(word);
        continue;
      }
    }
    atomic_fetch_and(word, ~TL_LOCK_WOKEN);
    return 0;
  }
}

/* Tries to take the lock without waiting, or enqueues `w` behind the
 * current owner. A sync request (allow_self == 0) from the owner, or from a
 * thread with a request already queued, fails with TL_EDEADLK; an async one
 * queues. Expects b->lock. */
static int
tl__lock_try_enqueue(tl_bucket_t *b, tl_waiter_t *w, int allow_self)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
  int32_t v;

  if (w->woken) {
    int r = tl__lock_yield(b, w);
    if (r != 0)
      return r;
  }
  v = atomic_load(word);
  for (;;) {
    uint32_t owner = (uint32_t)(v & TL_LOCK_ID_MASK);

    /* In the barging mode a word without an owner is free even while
     * waiters are queued (their bit stays); in the FIFO mode that state
     * never occurs, since releases hand the lock over. */
    if (v == 0 || (owner == 0 && (w->amount & TL_LOCK_BARGE))) {
      if (atomic_compare_exchange_weak(word, &v, v | (int32_t)w->lock_id))
        return TL_RESULT_ACQUIRED;
      continue;
    }
    if (!allow_self && (owner == w->lock_id || tl__queued(b, w)))
      return TL_EDEADLK;
    if (owner != w->lock_id && owner != TL_LOCK_PASSING &&
        !tl_thread_alive(owner)) {
      tl_waiter_t *first = tl__next_gate_waiter(b->head, w->addr);
      if (first == NULL) {
        /* Nobody queued: take over. Gate waiters only write a word with an
         * owner set under this lock, so a plain store is safe. */
        atomic_store(word, (int32_t)(w->lock_id | TL_LOCK_OWNER_DIED) |
                               (v & TL_LOCK_WOKEN));
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
  if (gate == TL_GATE_LOCK && amount > (TL_LOCK_BARGE | TL_LOCK_HANDOFF))
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

/* Wakes `first`, the oldest lock waiter on `word`, to compete for the word
 * that the caller just freed or is about to free, and marks the word so
 * that releases wake nobody else until `first` has tried. Expects b->lock. */
static void
tl__lock_wake(tl_bucket_t *b, _Atomic int32_t *word, tl_waiter_t *first)
{
  tl__unlink(b, first);
  first->granted = 0;
  first->woken = 1;
  atomic_fetch_or(word, TL_LOCK_WOKEN);
  if (tl__next_gate_waiter(b->head, first->addr) == NULL)
    atomic_fetch_and(word, ~TL_GATE_WAITERS);
  tl__finish(first, TL_NOTIFIED);
}

/* Releases the lock word `word`, read as `v` and owned by the caller.
 * Expects b->lock. While the word has an owner only the owner and the core
 * under this lock change it, so plain stores cannot lose an update. */
static int
tl__lock_release_locked(tl_bucket_t *b, _Atomic int32_t *word, int32_t v,
                        uint32_t amount)
{
  tl_waiter_t *first = tl__next_gate_waiter(b->head, (uintptr_t)word);

  if (first == NULL) {
    /* A woken waiter may still be on its way; its bit stays. If the
     * owner's slice is over, the word waits for that waiter (LOCK_PASSING),
     * so that running threads cannot take it first. */
    if ((amount & TL_LOCK_HANDOFF) && (v & TL_LOCK_WOKEN))
      atomic_store(word, TL_LOCK_WOKEN | TL_LOCK_PASSING);
    else
      atomic_store(word, v & TL_LOCK_WOKEN);
  } else if (!(amount & TL_LOCK_BARGE) || (amount & TL_LOCK_HANDOFF) ||
             tl_now_ns() - first->since >= TL_LOCK_STARVING_NS) {
    /* Direct hand-off: the word never becomes free while `first` waits,
     * so nobody can barge in. In the FIFO mode this is every release. */
    tl__unlink(b, first);
    tl__grant(b, first, 0);
  } else if (v & TL_LOCK_WOKEN) {
    /* Somebody is already on the way: free the word and wake nobody. */
    atomic_store(word, v & (TL_LOCK_WOKEN | TL_GATE_WAITERS));
  } else {
    atomic_store(word, TL_GATE_WAITERS);
    tl__lock_wake(b, word, first);
  }
  return 0;
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
    r = tl__lock_release_locked(b, aword, v, amount);
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
 * grant is released; a barging-mode wake (no grant) passes to the next
 * waiter if the lock is still free, so the queue does not stall. Expects
 * b->lock. */
void
tl__abandon(tl_bucket_t *b, tl_waiter_t *w)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
  tl_waiter_t *first;

  if (w->granted) {
    tl__gate_release_locked(b, (int32_t *)w->addr, w->gate, w->lock_id,
                            w->amount);
    return;
  }
  if (w->gate != TL_GATE_LOCK || !w->woken)
    return;
  /* A woken waiter that will never try: give its bit back, and wake the
   * next waiter if the word is still free, so that the queue moves on. The
   * word may be free, and running threads then change it: atomic updates
   * only. */
  w->woken = 0;
  atomic_fetch_and(word, ~TL_LOCK_WOKEN);
  /* A word passed to this waiter has no owner to release it. */
  if ((atomic_load(word) & TL_LOCK_ID_MASK) == TL_LOCK_PASSING)
    atomic_fetch_and(word, ~TL_LOCK_ID_MASK);
  if ((atomic_load(word) & TL_LOCK_ID_MASK) == 0 &&
      (first = tl__next_gate_waiter(b->head, w->addr)) != NULL)
    tl__lock_wake(b, word, first);
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
