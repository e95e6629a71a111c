/* The semaphore policy: the lock policy of lock.c (normal mode, woken,
 * starvation) for a count of permits. Its vocabulary is lock.c's.
 *
 * The word (src/waiters.h): P, the permits available (SEM_MASK); W,
 * GATE_WAITERS (requests are queued in the core); K, SEM_WOKEN (the
 * request at the head of the queue was woken to compete and has not tried
 * yet); R, SEM_RESERVED (the head has starved: the permits are kept for
 * it).
 *
 *                   JS cas P -> P-k (R clear)
 *   P permits  <------------------------------------  a new request, fits
 *   W=0        ------------------------------------>  JS cas P -> P+k
 *      |            (W and K clear)
 *      | core: the request does not fit (or R): it queues, W set
 *      v
 *   P, W      -- release, head fits, not starving --> P, W, K (head WOKEN)
 *      ^                                                  |
 *      |   woken head finds P too small: sleeps again     | woken head takes
 *      +---------------- in its place, K cleared ---------+ its permits, K
 *      |                                                  | cleared; wakes
 *      | release (or a head that leaves) while the head   | the next if P
 *      | has waited TL_POLICY_STARVING_NS: grants heads   | suffices for it
 *      v in order while P suffices; the rest:             v
 *   P, W, R   (the head still does not fit: nobody else takes permits, not
 *              even through the fast path, until it is granted or leaves)
 *
 * - Normal mode. A request takes permits whenever enough are available and
 *   not reserved, also while others are queued (barging, one
 *   compare-exchange in JavaScript). A release that finds the head asleep,
 *   nobody woken and enough permits for the head wakes it to compete (K).
 *   The woken head, once it runs, takes its permits if they are still
 *   there, and then wakes the next request if what is left suffices for it
 *   (a chain, so that a release of many permits serves many requests);
 *   otherwise it sleeps again in its place.
 * - Starvation. A release (or a departure from the queue) that finds the
 *   head waited TL_POLICY_STARVING_NS grants the heads in order, the woken
 *   one too, for as long as the permits suffice, and sets R if the head
 *   that is then first has starved and still does not fit. R stops every
 *   other taker, so the permits that later releases return gather for the
 *   head; it is cleared when the head is granted or leaves (unless the next
 *   head has starved too and does not fit either).
 * - JavaScript takes permits only with R clear, and releases outside the
 *   core with W and K clear, or with K set and R clear while no queued
 *   request can have starved yet (the woken shortcut, below); everything
 *   else is the core's, under the bucket lock. The core changes the word by
 *   compare-exchange or atomic bit operations, since the fast path's
 *   acquire and release may run at any time.
 * - The woken shortcut. While K is set the head is WOKEN and on its way
 *   (S1), so a release through the core only adds the permits, as long as
 *   the head has not starved: tl__sem_pass wakes nobody while K is set,
 *   and R is clear. tl_sem_release_ex tells the releasing thread how long
 *   until the oldest queued request starves (or, with nobody queued, the
 *   full TL_POLICY_STARVING_NS: anyone queued later starves later still),
 *   so until then its next releases that find K set and R clear add their
 *   permits with one compare-exchange (lib/Semaphore.js release). Every
 *   request queued at any later time starves no earlier, because the queue
 *   is in arrival order, so the bound stays true. The compare-exchange
 *   orders the shortcut against the head's own attempt (tl__sem_resume):
 *   permits added before it are seen by it; once it clears K, W is still
 *   set for the rest of the queue and releases go through the core again.
 *   In a 2-permit, 4-thread contended loop, releases through the core were
 *   15% of all samples (bench/README.md, rows 5sem and 7b).
 *
 * Invariants, kept at every release of the bucket lock (and checked by
 * test/c/interleave.c after every step):
 *   S1  K is set iff the first gate waiter on the word is WOKEN; at most
 *       one waiter is WOKEN (the first); it stays linked in its place.
 *   S2  W is set iff a gate waiter (WAITING or WOKEN) is linked.
 *   S3  No stall: never a first waiter that is WAITING while the permits
 *       suffice for it (with or without R), so nobody sleeps while its
 *       permits lie idle.
 *   S4  R is set only while the first waiter has starved and does not
 *       fit; once a release while it starves has passed, no other request
 *       takes permits before it.
 *   S5  Queued requests are granted (or woken) in the order of their first
 *       arrival; a woken request that sleeps again keeps its place.
 *   S6  Permits are added outside the core while W is set only with K set,
 *       R clear and no queued request starved (the woken shortcut), so such
 *       a release is one that the core would have made without a grant, a
 *       wake or a reservation (S3, S4 hold without it).
 *
 * Every function here expects the word's bucket lock.
 */
#include "waiters.h"

#include "platform.h"
#include "tl_internal.h"

static uint32_t
tl__permits(int32_t v)
{
  return (uint32_t)(v & TL_SEM_MASK);
}

static int
tl__starving(const tl_waiter_t *w, uint64_t now)
{
  return now - w->since >= TL_POLICY_STARVING_NS;
}

/* Decides for the queue on `addr` after anything changed it or the
 * permits: the starvation grants and the reservation, or the wake of the
 * head (S1-S4). Reads the clock into *now, if it is 0, when it needs it:
 * tl_sem_release_ex reuses that reading. */
static void
tl__sem_pass_at(tl_bucket_t *b, uintptr_t addr, uint64_t *now_io)
{
  _Atomic int32_t *word = (_Atomic int32_t *)addr;
  tl_waiter_t *h = tl__first_gate_waiter(b, addr);
  int32_t v = atomic_load(word);
  uint64_t now;

  if (h == NULL) {
    /* Nobody queued: nobody woken and nothing reserved (S1, S4). */
    if (v & (TL_GATE_WAITERS | TL_SEM_RESERVED))
      atomic_fetch_and(word, ~(TL_GATE_WAITERS | TL_SEM_RESERVED));
    return;
  }
  if (*now_io == 0)
    *now_io = tl_now_ns();
  now = *now_io;
  if (tl__starving(h, now)) {
    /* Starvation: the heads in order while the permits suffice. */
    while (h != NULL && tl__permits(v) >= h->amount) {
      int32_t next = (v - (int32_t)h->amount) & ~TL_SEM_RESERVED;
      if (atomic_load(&h->state) == TL_WOKEN)
        next &= ~TL_SEM_WOKEN;
      if (!atomic_compare_exchange_weak(word, &v, next))
        continue;
      tl__gate_grant(b, h, 0);
      h = tl__first_gate_waiter(b, addr);
      v = next;
    }
    if (h == NULL) {
      atomic_fetch_and(word, ~TL_GATE_WAITERS);
      return;
    }
    if (tl__starving(h, now)) {
      /* Keep what comes back for it. */
      if (!(v & TL_SEM_RESERVED))
        atomic_fetch_or(word, TL_SEM_RESERVED);
      return;
    }
  }
  /* Normal mode: the head has not starved, so nothing is reserved. The
   * fast path may have taken permits meanwhile (only taken: W is set). */
  v = atomic_load(word);
  if (v & TL_SEM_RESERVED)
    v = atomic_fetch_and(word, ~TL_SEM_RESERVED) & ~TL_SEM_RESERVED;
  if (!(v & TL_SEM_WOKEN) && atomic_load(&h->state) == TL_WAITING &&
      tl__permits(v) >= h->amount) {
    atomic_fetch_or(word, TL_SEM_WOKEN);
    tl__gate_wake(h);
  }
}

static void
tl__sem_pass(tl_bucket_t *b, uintptr_t addr)
{
  uint64_t now = 0;

  tl__sem_pass_at(b, addr, &now);
}

/* A new request for `w->amount` permits: takes them if they are available
 * and not reserved, also while others are queued; otherwise queues. */
int
tl__sem_try(tl_bucket_t *b, tl_waiter_t *w)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
  int32_t v = atomic_load(word);

  for (;;) {
    if (!(v & TL_SEM_RESERVED) && tl__permits(v) >= w->amount) {
      if (atomic_compare_exchange_weak(word, &v, v - (int32_t)w->amount))
        return TL_RESULT_ACQUIRED;
      continue;
    }
    /* It does not fit, so as the first waiter it need not be woken (S3);
     * behind others it waits for its turn. */
    if (tl__gate_enqueue(b, w, &v) == 0)
      return TL_RESULT_PENDING;
  }
}

/* The queued request `w` runs again: granted meanwhile (ACQUIRED), or
 * WOKEN, and so the first waiter (S1): it takes its permits if they are
 * there (R, if set, is its own), and otherwise sleeps again in its place
 * (PENDING). */
int
tl__sem_resume(tl_bucket_t *b, tl_waiter_t *w)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
  int32_t v;

  switch (atomic_load(&w->state)) {
  case TL_NOTIFIED:
    return TL_RESULT_ACQUIRED;
  case TL_WOKEN:
    break;
  default:
    return TL_RESULT_PENDING;
  }
  v = atomic_load(word);
  for (;;) {
    if (tl__permits(v) >= w->amount) {
      int32_t next =
          (v - (int32_t)w->amount) & ~(TL_SEM_WOKEN | TL_SEM_RESERVED);
      if (!atomic_compare_exchange_weak(word, &v, next))
        continue;
      tl__unlink(b, w);
      w->granted = 1;
      atomic_store(&w->state, TL_NOTIFIED);
      /* What is left may suffice for the next one: the chain goes on. */
      tl__sem_pass(b, w->addr);
      return TL_RESULT_ACQUIRED;
    }
    /* Taken by others meanwhile: sleep again, first in line. Every release
     * goes through the core while W is set, and wakes it again (S3). */
    if (!atomic_compare_exchange_weak(word, &v, v & ~TL_SEM_WOKEN))
      continue;
    atomic_store(&w->state, TL_WAITING);
    return TL_RESULT_PENDING;
  }
}

static int
tl__sem_release_at(tl_bucket_t *b, _Atomic int32_t *word, uint32_t amount,
                   uint64_t *now)
{
  int32_t v = atomic_load(word);

  do {
    if (tl__permits(v) + amount > TL_SEM_MASK)
      return TL_EOVERFLOW;
  } while (!atomic_compare_exchange_weak(word, &v, v + (int32_t)amount));
  tl__sem_pass_at(b, (uintptr_t)word, now);
  return 0;
}

/* Returns `amount` permits and decides for the queue. */
int
tl__sem_release(tl_bucket_t *b, _Atomic int32_t *word, uint32_t amount)
{
  uint64_t now = 0;

  return tl__sem_release_at(b, word, amount, &now);
}

/* The hook of semaphore waiters: `w` left without a grant (timeout, abort,
 * its thread's death). A woken one gives K back; the request that is now
 * first may fit, or may have starved. */
void
tl__sem_left(tl_bucket_t *b, tl_waiter_t *w)
{
  if (atomic_load(&w->state) == TL_WOKEN)
    atomic_fetch_and((_Atomic int32_t *)w->addr, ~TL_SEM_WOKEN);
  tl__sem_pass(b, w->addr);
}

int
tl_sem_release_ex(int32_t *word, uint32_t amount, int64_t *left_ns)
{
  tl_bucket_t *b = tl__bucket((uintptr_t)word);
  tl_waiter_t *first;
  uint64_t now = 0;
  int r;

  *left_ns = TL_POLICY_STARVING_NS;
  if (amount > TL_SEM_MASK)
    return TL_EINVAL;
  tl_mutex_lock(&b->lock);
  r = tl__sem_release_at(b, (_Atomic int32_t *)word, amount, &now);
  first = tl__first_gate_waiter(b, (uintptr_t)word);
  if (first != NULL) {
    /* The reading of the decision, taken before the grants it made: the
     * bound errs early by their time, never late. */
    uint64_t waited;
    if (now == 0)
      now = tl_now_ns();
    waited = now - first->since;
    *left_ns = waited >= TL_POLICY_STARVING_NS
                   ? 0
                   : (int64_t)(TL_POLICY_STARVING_NS - waited);
  }
  tl_mutex_unlock(&b->lock);
  return r;
}
