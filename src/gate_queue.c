/* Gate waiters in a bucket: what every gate kind (lock, read-write lock,
 * semaphore) does with its queue. The waiters of one word keep the order in
 * which they first queued; a woken lock waiter keeps its place until it has
 * tried (lock.c). Every function here expects the bucket lock.
 */
#include "waiters.h"

#include "platform.h"
#include "tl_internal.h"

/* The first gate waiter on `addr`, WAITING or WOKEN. */
tl_waiter_t *
tl__first_gate_waiter(tl_bucket_t *b, uintptr_t addr)
{
  for (tl_waiter_t *w = b->head; w != NULL; w = w->next)
    if (w->addr == addr && w->gate != TL_GATE_NONE)
      return w;
  return NULL;
}

/* The gate waiter on the same word that comes after `after`. */
tl_waiter_t *
tl__next_gate_waiter(tl_waiter_t *after)
{
  for (tl_waiter_t *w = after->next; w != NULL; w = w->next)
    if (w->addr == after->addr && w->gate != TL_GATE_NONE)
      return w;
  return NULL;
}

/* Whether thread `id` has a request queued (asleep or woken) for the word
 * at `addr`: a blocking request of that thread would then wait for a grant
 * that only this very thread could ever use. */
int
tl__queued(tl_bucket_t *b, uintptr_t addr, uint32_t id)
{
  for (tl_waiter_t *q = b->head; q != NULL; q = q->next)
    if (q->addr == addr && q->gate != TL_GATE_NONE && q->lock_id == id)
      return 1;
  return 0;
}

/* Appends `w` after setting the waiters bit of its word, which `v` was
 * last read as. Returns 0, or -1 when the word changed first (`v` then
 * holds the new value). */
int
tl__gate_enqueue(tl_bucket_t *b, tl_waiter_t *w, int32_t *v)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;

  if (!(*v & TL_GATE_WAITERS) &&
      !atomic_compare_exchange_strong(word, v, *v | TL_GATE_WAITERS))
    return -1;
  atomic_store(&w->state, TL_WAITING);
  if (w->since == 0) {
    w->since = tl_now_ns();
    tl__enqueue(b, w);
    return 0;
  }
  /* A request that arrived earlier and waited in its thread's queue
   * (lib/ThreadQueue.js: a holder's own request) takes its place by its
   * first arrival (lock.c, I5): before the first waiter on the word that
   * came later, but never before a woken one (I1: the woken one is the
   * first). */
  {
    tl_waiter_t *at = tl__first_gate_waiter(b, w->addr);

    while (at != NULL &&
           (at->since <= w->since || atomic_load(&at->state) == TL_WOKEN))
      at = tl__next_gate_waiter(at);
    tl__enqueue_before(b, w, at);
  }
  return 0;
}

/* Clears the waiters bit of the word at `addr` once no gate waiter is
 * queued for it, so that the owner can release with a compare-exchange
 * again. */
void
tl__gate_waiters_bit(tl_bucket_t *b, uintptr_t addr)
{
  if (tl__first_gate_waiter(b, addr) == NULL)
    atomic_fetch_and((_Atomic int32_t *)addr, ~TL_GATE_WAITERS);
}

/* Ends the wait of the queued gate waiter `w` with a grant: the caller has
 * already written the word that names it the holder. */
void
tl__gate_grant(tl_bucket_t *b, tl_waiter_t *w, int owner_died)
{
  tl__unlink(b, w);
  w->owner_died = (uint8_t)owner_died;
  w->granted = 1;
  tl__finish(w, TL_NOTIFIED);
}

/* Wakes the queued gate waiter `w` to compete; it keeps its place. */
void
tl__gate_wake(tl_waiter_t *w)
{
  w->granted = 0;
  w->present = 0;
  tl__finish(w, TL_WOKEN);
}
