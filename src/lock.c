/* The lock policy: one state machine for lock words (AsyncLock) and for the
 * writers of a read-write lock word (RWLock). Its vocabulary is Go's
 * sync.Mutex: normal mode, starvation, woken, hand-off.
 *
 * The word, as the policy sees it (O: owner field, W: LOCK_WAITERS, K:
 * LOCK_WOKEN; an RWLock word also counts readers, which must be 0 for a
 * writer to take it):
 *
 *          JS cas 0->id               core: enqueue
 *   FREE ---------------> HELD ------------------------> HELD+WAITERS
 *   O=0  <--------------- O=id <------------------------ O=id, W
 *   W=0    JS cas id->0   W=0   release, last waiter     |  ^     |
 *     ^                    ^    handed the lock          |  |     | release
 *     |                    |                 release,    |  |     | (normal
 *     | woken waiter       |                 hand-off    |  |     |  mode)
 *     | takes it, no more  +-------------------------<---+  |     v
 *     | waiters                                             |  FREE+WOKEN
 *     +------------------------------------------------- O=0, W, K
 *                                                        |  ^  |
 *        woken waiter finds it taken: sleeps again  <----+  |  | JS barge:
 *        in its place (K cleared, HELD+WAITERS)             |  | cas O=0->id
 *                                                           |  v
 *                                release (normal): frees  HELD+WOKEN
 *                                it, wakes nobody --------O=id, W, K
 *
 * - Normal mode. A release that finds waiters and nobody woken frees the
 *   word and wakes the oldest waiter to compete (K set, the waiter WOKEN);
 *   meanwhile a running thread may take the free word (barging, one
 *   compare-exchange in JavaScript). While K is set a release wakes nobody
 *   else. The woken waiter, once it runs, takes the word if it is free, or
 *   goes back to sleep in its place (K cleared) if somebody took it.
 * - Starvation (hand-off). A hand-off is due when the oldest waiter has
 *   waited TL_POLICY_STARVING_NS, when the holder's slice is over
 *   (TL_LOCK_HANDOFF, counted by the holder in JavaScript), and always in
 *   the FIFO mode (no TL_LOCK_BARGE). This is checked at every release that
 *   finds a waiter, whoever releases and through which API, and also when
 *   the holder asks to keep the lock for its own next request
 *   (TL_LOCK_KEEP): a due hand-off is never kept.
 * - Parked waiters and event-loop waiters. A blocking request's thread is
 *   parked: woken, it runs in microseconds. A promise request's thread
 *   takes a grant up only when its event loop runs, which may be hundreds
 *   of milliseconds away (`on_loop`). So a due hand-off in the default
 *   mode goes, the word never free in between, to the oldest waiter that
 *   can take it up at once: a parked one, or an event-loop request that is
 *   `present` (its thread came to try, found the word taken and sleeps
 *   again). Event-loop requests ahead of it keep their places: one asleep
 *   since it queued is woken to come (K); one woken and on its way stays
 *   so. With nobody to take it up at once, a due hand-off frees the word
 *   and wakes the oldest if nobody is on the way (never keeps it): once
 *   the event-loop request is here, it takes the free word, or is present
 *   and the next release hands it the lock (a present request makes a
 *   hand-off due: waking it again would send it round its loop again; and
 *   with K clear every release goes through the core). Its thread, still
 *   in the core call that found the word taken, watches its state for
 *   TL_POLICY_PRESENT_NS before it goes back to its loop
 *   (tl__present_watch): a hand-off that lands meanwhile is taken up at
 *   once, instead of the lock waiting, held, for a wake of that loop. The
 *   watch changes no bit and no place in the queue: the present request
 *   is linked and WAITING, and a grant or wake during the watch is the
 *   same grant or wake, taken up by the watch instead of the settle
 *   callback (src/ready.c). The FIFO mode hands
 *   the lock to the oldest waiter, whatever its thread does: strict order,
 *   at the price that a busy event loop holds up the queue behind it.
 * - Only the core under the bucket lock changes a word that has W or K set
 *   and an owner; JavaScript only takes a word whose owner field is 0 and
 *   only releases a word that is exactly its own id.
 *
 * Invariants, kept at every release of the bucket lock (and checked by
 * test/c/interleave.c after every step):
 *   I1  K is set iff the first gate waiter on the word is WOKEN; at most one
 *       waiter is WOKEN; a WOKEN waiter stays linked in its place.
 *   I2  W is set iff a gate waiter (WAITING or WOKEN) is linked.
 *   I3  Never O=0 with W set and K clear: a free word with waiters always
 *       has a woken waiter on its way, so nobody sleeps on a free word.
 *   I4  A woken waiter that leaves (timeout, abort, its thread's death)
 *       gives K back and, if the word is free, wakes the next waiter.
 *   I5  A release wakes the oldest waiter only, and hands the lock over
 *       to the oldest only, of those that can take it up at once in the
 *       default mode (I7): the queue's order is the order of first
 *       arrival, and a waiter keeps its place. A holder's own request that
 *       waited in its thread's queue counts from when it was made: sent to
 *       the core (before the holder releases) it is linked before the
 *       waiters that came later (never before the woken first: I1). A
 *       release passes the lock to the releasing thread's own queued
 *       request while no hand-off is due (the in-thread pass), and counts
 *       it among the waiters that can take the lock up at once (its thread
 *       is running).
 *   I6  The news that an owner died reaches a holder that runs: only the
 *       release of a holder that was told (or a later one) clears the died
 *       bit. A grant with OWNER_DIED that its thread never uses (the thread
 *       is terminated first: tl__gate_abandon_grant) is given back with
 *       TL__LOCK_UNUSED_DIED, which hands it on with OWNER_DIED or leaves
 *       the died bit on the free word, where the next taker finds it (the
 *       core, and JavaScript's barging compare-exchange, keep the bit).
 *   I7  In the default mode a release grants the lock only to a waiter
 *       that can take it up at once (parked, present, or the releasing
 *       thread's own), and to the
 *       oldest of them (I5 among those); an event-loop request that is
 *       woken, or asleep since it queued, is never handed the lock, so its
 *       busy loop holds up nobody; it keeps its place at the head, and a
 *       due hand-off with nobody present frees the word or calls it.
 *       JavaScript's shortcut (lib/LockWord.js) frees the word only while
 *       K is set and no hand-off is due: the core says how long until the
 *       oldest waiter starves, or a full TL_POLICY_STARVING_NS while only
 *       event-loop requests that are not present are queued
 *       (tl_lock_release_ex).
 *
 * Every function here expects the word's bucket lock, but the courtesy
 * wait, which runs with no lock held.
 */
#include "waiters.h"

#include "platform.h"
#include "tl_internal.h"

/* The word views of the two kinds of word the policy serves. */
static int32_t
tl__died_bit(int gate)
{
  return gate == TL_GATE_LOCK ? TL_LOCK_OWNER_DIED : TL_RW_OWNER_DIED;
}

static uint32_t
tl__owner_of(int gate, int32_t v)
{
  if (gate == TL_GATE_LOCK)
    return (uint32_t)(v & TL_LOCK_ID_MASK);
  return (v & TL_RW_WRITER) ? (uint32_t)(v & TL_RW_MASK) : 0;
}

/* Readers holding a read-write lock word; 0 for a lock word. */
static int32_t
tl__readers_of(int gate, int32_t v)
{
  return gate == TL_GATE_LOCK || (v & TL_RW_WRITER) ? 0 : v & TL_RW_MASK;
}

static int32_t
tl__held_by(int gate, uint32_t id)
{
  return gate == TL_GATE_LOCK ? (int32_t)id : (int32_t)(TL_RW_WRITER | id);
}

/* The word that names `id` the holder, read as `v`, with the waiters bit
 * as the queue (less `leaving`, which is about to leave it) needs it. */
static int32_t
tl__taken(tl_bucket_t *b, tl_waiter_t *leaving, uintptr_t addr, int gate,
          int32_t v, uint32_t id, int owner_died)
{
  int32_t next = tl__held_by(gate, id);
  tl_waiter_t *first = tl__first_gate_waiter(b, addr);

  if (first == leaving && first != NULL)
    first = tl__next_gate_waiter(first);
  if (first != NULL)
    next |= TL_GATE_WAITERS;
  if (owner_died || (v & tl__died_bit(gate)))
    next |= tl__died_bit(gate);
  return next;
}

/* A new request for the lock or the write lock: takes it, or queues.
 * `allow_self` (async requests) lets a thread queue behind itself; a sync
 * request by the holder or by a thread that has a request queued fails
 * with EDEADLK instead. */
int
tl__lock_try(tl_bucket_t *b, tl_waiter_t *w, int allow_self)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
  int gate = w->gate;
  int32_t v = atomic_load(word);

  for (;;) {
    uint32_t owner = tl__owner_of(gate, v);
    tl_waiter_t *first = tl__first_gate_waiter(b, w->addr);

    if (!allow_self &&
        (owner == w->lock_id || tl__queued(b, w->addr, w->lock_id) ||
         (gate == TL_GATE_WRITE &&
          tl__read_count(b, w->addr, w->lock_id, 0) != 0)))
      return TL_EDEADLK;
    if (owner != 0 && owner != w->lock_id && !tl_thread_alive(owner)) {
      if (first == NULL) {
        /* Nobody queued: take it over. A word with an owner changes only
         * under this lock. */
        atomic_store(word, tl__taken(b, NULL, w->addr, gate, v, w->lock_id, 1));
        return TL_RESULT_OWNER_DIED;
      }
      /* The oldest waiter takes it over; this request queues. */
      tl__lock_owner_died(b, w->addr, gate);
      v = atomic_load(word);
      continue;
    }
    if (owner == 0 && tl__readers_of(gate, v) == 0 &&
        (first == NULL || (w->amount & TL_LOCK_BARGE))) {
      /* Free: take it; in normal mode even while others wait (barging).
       * JavaScript may take a free word meanwhile: compare-exchange. */
      int32_t next = (v & (TL_GATE_WAITERS | TL_LOCK_WOKEN)) |
                     tl__held_by(gate, w->lock_id) | (v & tl__died_bit(gate));
      if (!atomic_compare_exchange_strong(word, &v, next))
        continue;
      return (v & tl__died_bit(gate)) ? TL_RESULT_OWNER_DIED
                                      : TL_RESULT_ACQUIRED;
    }
    if (tl__gate_enqueue(b, w, &v) == 0)
      return TL_RESULT_PENDING;
  }
}

/* Runs with no lock held, on the thread of `w`, before a WOKEN waiter
 * competes: while the word stays free, gives its previous holder
 * TL_POLICY_COURTESY_NS to take it again (see waiters.h). */
void
tl__courtesy_wait(const tl_waiter_t *w)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
  uint64_t until = 0;

  while (atomic_load(&w->state) == TL_WOKEN) {
    int32_t v = atomic_load(word);
    uint64_t now;

    if (tl__owner_of(w->gate, v) != 0 || tl__readers_of(w->gate, v) != 0)
      return;
    now = tl_now_ns();
    if (until == 0)
      until = now + TL_POLICY_COURTESY_NS;
    if (now >= until)
      return;
    for (int i = 0; i < 16; i++)
      tl_cpu_relax();
  }
}

/* Runs with no lock held, on the thread of the present event-loop request
 * `w` (tl_gate_retry_async): watches its state for up to
 * TL_POLICY_PRESENT_NS, for the hand-off that the next release owes it.
 * Only the state is read; tl__retry_end takes up what came. */
void
tl__present_watch(const tl_waiter_t *w)
{
  uint64_t until = tl_now_ns() + TL_POLICY_PRESENT_NS;

  while (atomic_load_explicit(&w->state, memory_order_acquire) == TL_WAITING) {
    for (int i = 0; i < 32; i++)
      tl_cpu_relax();
    if (tl_now_ns() >= until)
      return;
  }
}

/* The queued request `w` runs again: granted meanwhile (ACQUIRED or
 * OWNER_DIED), or WOKEN: it takes the word if it is free (or held by a
 * dead thread), and otherwise sleeps again in its place (PENDING). */
int
tl__lock_resume(tl_bucket_t *b, tl_waiter_t *w)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
  int gate = w->gate;
  int32_t v;

  switch (atomic_load(&w->state)) {
  case TL_NOTIFIED:
    return w->owner_died ? TL_RESULT_OWNER_DIED : TL_RESULT_ACQUIRED;
  case TL_WOKEN:
    break;
  default:
    return TL_RESULT_PENDING;
  }
  v = atomic_load(word);
  for (;;) {
    uint32_t owner = tl__owner_of(gate, v);
    int dead = owner != 0 && owner != w->lock_id && !tl_thread_alive(owner);

    if ((owner == 0 && tl__readers_of(gate, v) == 0) || dead) {
      int32_t next =
          tl__taken(b, w, w->addr, gate, dead ? 0 : v, w->lock_id, dead);
      if (!atomic_compare_exchange_strong(word, &v, next))
        continue;
      tl__unlink(b, w);
      w->owner_died = (uint8_t)((next & tl__died_bit(gate)) != 0);
      w->granted = 1;
      atomic_store(&w->state, TL_NOTIFIED);
      return w->owner_died ? TL_RESULT_OWNER_DIED : TL_RESULT_ACQUIRED;
    }
    /* Taken by a running thread (or by this one through another object):
     * sleep again, first in line; its release goes through the core. */
    if (!atomic_compare_exchange_strong(word, &v, v & ~TL_LOCK_WOKEN))
      continue;
    /* An event-loop request's thread is here now: the next release hands
     * it the lock (I7), and every release goes through the core while it
     * sleeps (K clear). A parked waiter is simply woken again. */
    w->present = w->on_loop;
    atomic_store(&w->state, TL_WAITING);
    return TL_RESULT_PENDING;
  }
}

/* Whether the thread of the queued lock or write waiter `w` can take up a
 * grant at once: a parked thread (microseconds), an event-loop request
 * whose thread came to try, found the word taken and sleeps again
 * (`present`), or one of thread `self`, which is running: it releases
 * now. An event-loop request asleep since it queued, or woken and on its
 * way, may not run its loop for hundreds of milliseconds. */
static int
tl__runs_at_once(const tl_waiter_t *w, uint32_t self)
{
  return !w->on_loop || w->present || w->lock_id == self;
}

tl_waiter_t *
tl__lock_target(tl_bucket_t *b, uintptr_t addr, int fifo, uint32_t self)
{
  tl_waiter_t *first = tl__first_gate_waiter(b, addr);

#if defined(TL_INJECT_BUG) && TL_INJECT_BUG == 4
  /* Injected bug 4 (test/c/run.sh): the oldest, whatever its thread does
   * (before I7). */
  fifo = 1;
#endif
  /* The FIFO mode serves the oldest, whatever its thread does. */
  if (first == NULL || first->gate == TL_GATE_READ || fifo)
    return first;
  /* The oldest that runs at once, if only event-loop requests that do not
   * are ahead of it (readers keep the read-write lock's own order). */
  for (tl_waiter_t *w = first; w != NULL; w = tl__next_gate_waiter(w)) {
    if (w->gate == TL_GATE_READ)
      break;
    if (tl__runs_at_once(w, self))
      return w;
  }
  return NULL;
}

/* The holder `id` releases the word (lock or write lock). `flags`:
 * TL_LOCK_BARGE (normal mode), TL_LOCK_HANDOFF (its slice is over),
 * TL_LOCK_KEEP (it would keep the lock for its own next request). Returns
 * 0 (released), TL_RESULT_ACQUIRED (kept) or TL_ENOTOWNER. */
int
tl__lock_release(tl_bucket_t *b, _Atomic int32_t *word, int gate, uint32_t id,
                 uint32_t flags)
{
  uintptr_t addr = (uintptr_t)word;
  int32_t v = atomic_load(word);
  int32_t died = tl__died_bit(gate);
  int32_t unused_died;
  tl_waiter_t *first, *target;
  int due;

  if (tl__owner_of(gate, v) != id)
    return TL_ENOTOWNER;
  /* I6: a hold given back unused keeps the news of a dead owner. */
  unused_died = (flags & TL__LOCK_UNUSED_DIED) ? died : 0;
  first = tl__first_gate_waiter(b, addr);
  if (first == NULL) {
    /* Nobody waits, so nobody is woken (I1, I2): the word's only bits are
     * the holder's. */
    if (flags & TL_LOCK_KEEP) {
      atomic_store(word, v & ~died);
      return TL_RESULT_ACQUIRED;
    }
    atomic_store(word, unused_died);
    return 0;
  }
  /* A hand-off is due when the oldest waiter has waited
   * TL_POLICY_STARVING_NS, when the holder's slice is over, in the FIFO
   * mode, for readers at the head, and for an event-loop request that is
   * present: it came once and lost the race, and waking it again would
   * send it round its loop again, where a busy loop may keep it long. I7:
   * a hand-off serves the oldest waiter that can take the lock up at once;
   * an event-loop request that cannot keeps its place ahead of it. */
  target = tl__lock_target(b, addr, !(flags & TL_LOCK_BARGE), id);
  due = !(flags & TL_LOCK_BARGE) || (flags & TL_LOCK_HANDOFF) ||
        first->gate == TL_GATE_READ || (target != NULL && target->present) ||
        tl_now_ns() - first->since >= TL_POLICY_STARVING_NS;
  /* The holder's own next request, queued in the core by its arrival
   * (lib/AsyncLock.js sends it before it releases): within its slice, and
   * while no hand-off is due, the holder passes the lock to it (the
   * in-thread pass; I5 holds, since a hand-off that is due serves the
   * oldest). */
  if (!due && (flags & TL_LOCK_BARGE)) {
    for (tl_waiter_t *q = first; q != NULL; q = tl__next_gate_waiter(q)) {
      if (q->gate == TL_GATE_READ)
        break;
      if (q->lock_id == id && q->on_loop) {
        target = q;
        due = 1;
        break;
      }
    }
  }
#if defined(TL_INJECT_BUG) && TL_INJECT_BUG == 3
  /* Injected bug 3 (test/c/run.sh): the hand-off skips the oldest. */
  if (due && target != NULL && target->gate != TL_GATE_READ &&
      tl__next_gate_waiter(target) != NULL &&
      tl__next_gate_waiter(target)->gate != TL_GATE_READ)
    target = tl__next_gate_waiter(target);
#endif
  if (!due && (flags & TL_LOCK_KEEP)) {
    atomic_store(word, v & ~died);
    return TL_RESULT_ACQUIRED;
  }
  if (due && target != NULL) {
    if (target->gate == TL_GATE_READ) {
      /* Readers at the head of a read-write lock's queue enter together;
       * the word keeps RW_OWNER_DIED for the next writer. */
      atomic_store(word, (v & TL_GATE_WAITERS) | unused_died);
      tl__rw_pass(b, addr, unused_died != 0);
    } else if (target == first) {
      /* Straight to the oldest waiter, woken or asleep (I1: a woken one is
       * the first); K goes with it. */
      atomic_store(word, tl__taken(b, first, addr, gate, 0, first->lock_id,
                                   unused_died != 0));
      tl__gate_grant(b, first, unused_died != 0);
    } else {
      /* Past event-loop requests that cannot take it up now (I7). The
       * first stays first; one asleep in its loop is woken to come, so
       * that once it is here a hand-off serves it (I1: K goes with the
       * first's wake). */
      int32_t next = tl__taken(b, target, addr, gate, 0, target->lock_id,
                               unused_died != 0) |
                     (v & TL_LOCK_WOKEN);
      int wake = atomic_load(&first->state) == TL_WAITING;

      atomic_store(word, next | (wake ? TL_LOCK_WOKEN : 0));
      tl__gate_grant(b, target, unused_died != 0);
      if (wake)
        tl__gate_wake(first);
    }
  } else if (v & TL_LOCK_WOKEN) {
    /* Somebody is on the way already: free the word, wake nobody. A due
     * hand-off with nobody to take it up at once comes here too: the
     * oldest is an event-loop request on its way, and is served once it
     * is here (the lock is never kept for the holder meanwhile). */
    atomic_store(word, (v & (TL_GATE_WAITERS | TL_LOCK_WOKEN)) | unused_died);
  } else {
    /* Normal mode: free the word and wake the oldest to compete; also a
     * due hand-off whose oldest is an event-loop request asleep in its
     * loop: it is called to come. */
    atomic_store(word, TL_GATE_WAITERS | TL_LOCK_WOKEN | unused_died);
    tl__gate_wake(first);
  }
  return 0;
}

/* The hook of lock and write waiters: `w` left the queue without a grant.
 * A woken one gives the woken bit back and passes the wake on if the word
 * is free (I4). The word may be free and change under running threads
 * meanwhile: atomic updates only. */
void
tl__lock_left(tl_bucket_t *b, tl_waiter_t *w)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;

  if (atomic_load(&w->state) == TL_WOKEN)
    atomic_fetch_and(word, ~TL_LOCK_WOKEN);
  if (w->gate == TL_GATE_WRITE) {
    /* A writer at the head may have held back readers; a free word goes
     * to whoever is first now. */
    tl__rw_pass(b, w->addr, 0);
  } else {
    int32_t v = atomic_load(word);
    tl_waiter_t *first = tl__first_gate_waiter(b, w->addr);
    if (first != NULL && tl__owner_of(w->gate, v) == 0 &&
        !(v & TL_LOCK_WOKEN) && atomic_load(&first->state) == TL_WAITING) {
      atomic_fetch_or(word, TL_LOCK_WOKEN);
      tl__gate_wake(first);
    }
  }
  tl__gate_waiters_bit(b, w->addr);
}

/* The holder of the word at `addr` died: the oldest waiter takes it over,
 * marked as taken from a dead owner. Without waiters the word keeps the
 * dead id, and the next request takes it over. */
void
tl__lock_owner_died(tl_bucket_t *b, uintptr_t addr, int gate)
{
  _Atomic int32_t *word = (_Atomic int32_t *)addr;
  tl_waiter_t *first = tl__first_gate_waiter(b, addr);

  if (first == NULL)
    return;
  if (gate == TL_GATE_LOCK) {
    atomic_store(word, tl__taken(b, first, addr, gate, 0, first->lock_id, 1));
    tl__gate_grant(b, first, 1);
  } else {
    /* The first grant is told; K goes with a grant to a woken writer. The
     * word is freed with RW_OWNER_DIED, which a writer barging in from
     * JavaScript meanwhile keeps (rwlock.c, at the top). */
    atomic_store(word, (atomic_load(word) & (TL_GATE_WAITERS | TL_LOCK_WOKEN)) |
                           TL_RW_OWNER_DIED);
    tl__rw_pass(b, addr, 1);
  }
}
