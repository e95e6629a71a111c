/* The lock gate's policy: who gets a lock word when, in the FIFO mode and
 * in the barging mode (TL_LOCK_BARGE), where running threads may take a free
 * word while others wait, one woken waiter at a time competes or yields to
 * an owner in use, slices end in a hand-off and a waiter starving for
 * TL_LOCK_STARVING_NS is handed the lock. The compare-exchange paths of the
 * same policy run in JavaScript (lib/LockWord.js). Every function here
 * expects the word's bucket lock.
 */
#include "waiters.h"

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

/* The barging policy serves two kinds of word: a lock word (the owner in
 * the id field) and a read-write lock word for its writers (RW_WRITER and
 * the writer in the id field, or a count of readers). These give the owner
 * field of either, in the terms the policy needs. */
static int32_t
tl__owner_mask(const tl_waiter_t *w)
{
  return w->gate == TL_GATE_LOCK ? TL_LOCK_ID_MASK : TL_RW_WRITER | TL_RW_MASK;
}

static uint32_t
tl__owner_of(const tl_waiter_t *w, int32_t v)
{
  if (w->gate == TL_GATE_LOCK)
    return (uint32_t)(v & TL_LOCK_ID_MASK);
  return (v & TL_RW_WRITER) ? (uint32_t)(v & TL_RW_MASK) : 0;
}

/* Readers holding a read-write lock word; 0 for a lock word. */
static int32_t
tl__readers_of(const tl_waiter_t *w, int32_t v)
{
  return w->gate == TL_GATE_LOCK || (v & TL_RW_WRITER) ? 0 : v & TL_RW_MASK;
}

/* The owner field that names `id` as the holder. */
static int32_t
tl__held_by(const tl_waiter_t *w, uint32_t id)
{
  return w->gate == TL_GATE_LOCK ? (int32_t)id : (int32_t)(TL_RW_WRITER | id);
}

/* A woken waiter (a lock waiter, or a writer) gives its word's woken bit
 * back before it competes, so that the next release wakes a waiter again. A
 * word that a release passed to it (owner LOCK_PASSING) it takes: returns
 * ACQUIRED. If the word is in use, the waiter does not compete at all: it
 * goes back first in line (keeping its age) and returns PENDING. A word
 * that is free at that moment may belong to an owner in a hot loop, between
 * two of its critical sections, and taking it would cut that owner's slice
 * short (an owner on an event loop leaves such gaps of a few hundred
 * nanoseconds at every grant). So the waiter watches a free word for
 * TL_LOCK_COURTESY_NS first, and takes it (returns ACQUIRED) only if nobody
 * else does. The bit goes back in the same compare-exchange that sets the
 * waiters bit, so the owner's release cannot miss the waiter. Expects
 * b->lock. */
int
tl__barge_yield(tl_bucket_t *b, tl_waiter_t *w)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
  uint64_t until = 0;
  int32_t v = atomic_load(word);

  w->woken = 0;
  for (;;) {
    uint32_t owner = tl__owner_of(w, v);
    int take = owner == TL_LOCK_PASSING;

    if (!take &&
        ((owner != 0 && owner != w->lock_id && tl_thread_alive(owner)) ||
         tl__readers_of(w, v) != 0)) {
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
      /* Still free: the woken waiter takes it, whether or not its own
       * request may barge (a thread's later write requests may not), since
       * nobody else is woken to take it. */
      take = 1;
    }
    if (take) {
      /* Passed to this waiter, or free: take it. */
      if (!atomic_compare_exchange_weak(
              word, &v,
              (v & ~(TL_LOCK_WOKEN | tl__owner_mask(w))) |
                  tl__held_by(w, w->lock_id)))
        continue;
      return TL_RESULT_ACQUIRED;
    }
    /* Held by this very thread or by a dead one: the usual way. */
    atomic_fetch_and(word, ~TL_LOCK_WOKEN);
    return 0;
  }
}

/* Tries to take the lock without waiting, or enqueues `w` behind the
 * current owner. A sync request (allow_self == 0) from the owner, or from a
 * thread with a request already queued, fails with TL_EDEADLK; an async one
 * queues. Expects b->lock. */
int
tl__lock_try_enqueue(tl_bucket_t *b, tl_waiter_t *w, int allow_self)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
  int32_t v = atomic_load(word);

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

/* Releases a barging word (`gate` TL_GATE_LOCK: a lock word; TL_GATE_WRITE:
 * a read-write lock word held by a writer), read as `v` and owned by the
 * caller. Expects b->lock. While the word has an owner only the owner and
 * the core under this lock change it, so plain stores cannot lose an
 * update. */
int
tl__barge_release_locked(tl_bucket_t *b, _Atomic int32_t *word, int32_t v,
                         int gate, uint32_t amount)
{
  tl_waiter_t *first = tl__next_gate_waiter(b->head, (uintptr_t)word);
  int32_t passing =
      gate == TL_GATE_LOCK ? TL_LOCK_PASSING : TL_RW_WRITER | TL_LOCK_PASSING;

  if (first == NULL) {
    /* A woken waiter may still be on its way; its bit stays. If the
     * owner's slice is over, the word waits for that waiter (LOCK_PASSING),
     * so that running threads cannot take it first. */
    if ((amount & TL_LOCK_HANDOFF) && (v & TL_LOCK_WOKEN))
      atomic_store(word, TL_LOCK_WOKEN | passing);
    else
      atomic_store(word, v & TL_LOCK_WOKEN);
  } else if (!(amount & TL_LOCK_BARGE) || (amount & TL_LOCK_HANDOFF) ||
             first->gate == TL_GATE_READ ||
             tl_now_ns() - first->since >= TL_LOCK_STARVING_NS) {
    /* Direct hand-off: the word never becomes free while `first` waits,
     * so nobody can barge in; in the FIFO mode this is every release.
     * Readers at the head of a read-write lock's queue enter together. */
    if (gate == TL_GATE_LOCK) {
      tl__unlink(b, first);
      tl__grant(b, first, 0);
    } else {
      atomic_store(word, v & (TL_LOCK_WOKEN | TL_GATE_WAITERS));
      tl__rw_pass(b, (uintptr_t)word, 0);
    }
  } else if (v & TL_LOCK_WOKEN) {
    /* Somebody is already on the way: free the word and wake nobody. */
    atomic_store(word, v & (TL_LOCK_WOKEN | TL_GATE_WAITERS));
  } else {
    atomic_store(word, TL_GATE_WAITERS);
    tl__lock_wake(b, word, first);
  }
  return 0;
}

/* A woken waiter that will never try (its thread went away or its request
 * could not be booked): gives its bit back, and wakes the next waiter if
 * the word is still free, so that the queue moves on. The word may be free,
 * and running threads then change it: atomic updates only. */
void
tl__lock_abandon_wake(tl_bucket_t *b, tl_waiter_t *w)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
  tl_waiter_t *first;
  int32_t v;

  if (!w->woken)
    return;
  w->woken = 0;
  atomic_fetch_and(word, ~TL_LOCK_WOKEN);
  /* A word passed to this waiter has no owner to release it. */
  if (tl__owner_of(w, atomic_load(word)) == TL_LOCK_PASSING)
    atomic_fetch_and(word, ~tl__owner_mask(w));
  v = atomic_load(word);
  if (tl__owner_of(w, v) != 0 || tl__readers_of(w, v) != 0 ||
      (first = tl__next_gate_waiter(b->head, w->addr)) == NULL)
    return;
  if (first->gate == TL_GATE_READ)
    tl__rw_pass(b, w->addr, 0);
  else
    tl__lock_wake(b, word, first);
}
