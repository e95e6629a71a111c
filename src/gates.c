/* The public gate API: lock, read-write lock and semaphore words whose
 * grants the core decides under the word's bucket lock. Acquire (blocking
 * and async), retry, release, abandon and owner death for every kind; the
 * policies themselves are lock.c (locks and writers), rwlock.c (readers)
 * and sem.c (semaphores).
 */
#include "waiters.h"

#include "platform.h"
#include "tl_internal.h"

static void tl__gate_abandon_grant(tl_bucket_t *b, tl_waiter_t *w);

static const tl_hooks_t tl__lock_hooks = { tl__lock_left,
                                           tl__gate_abandon_grant };
static const tl_hooks_t tl__read_hooks = { tl__rw_left,
                                           tl__gate_abandon_grant };
static const tl_hooks_t tl__sem_hooks = { tl__sem_left,
                                          tl__gate_abandon_grant };

static int
tl__valid_gate(int gate, uint32_t id, uint32_t amount)
{
  switch (gate) {
  case TL_GATE_SEM:
    return amount <= TL_SEM_MASK;
  case TL_GATE_LOCK:
    return id != 0 && id <= TL_LOCK_ID_MASK &&
           amount <= (TL_LOCK_BARGE | TL_LOCK_HANDOFF | TL_LOCK_KEEP);
  case TL_GATE_WRITE:
    return id != 0 && id <= TL_RW_MASK &&
           amount <= (TL_LOCK_BARGE | TL_LOCK_HANDOFF | TL_LOCK_KEEP);
  case TL_GATE_READ:
    return id != 0 && id <= TL_RW_MASK;
  default:
    return 0;
  }
}

/* Prepares `w` for a request and tries it: takes the gate, or queues. */
static int
tl__gate_try(tl_bucket_t *b, tl_waiter_t *w, int allow_self)
{
  switch (w->gate) {
  case TL_GATE_LOCK:
  case TL_GATE_WRITE:
    w->hooks = &tl__lock_hooks;
    return tl__lock_try(b, w, allow_self);
  case TL_GATE_READ:
    w->hooks = &tl__read_hooks;
    return tl__read_try(b, w, allow_self);
  default:
    w->hooks = &tl__sem_hooks;
    return tl__sem_try(b, w);
  }
}

/* Runs with no lock held before a woken request competes: the lock
 * policy's courtesy wait (lock.c) for locks and writers. A woken semaphore
 * request competes at once: a semaphore has no holder whose slice a
 * prompt taker would cut short. */
static void
tl__gate_courtesy(const tl_waiter_t *w)
{
  if (w->gate == TL_GATE_LOCK || w->gate == TL_GATE_WRITE)
    tl__courtesy_wait(w);
}

/* A queued request whose thread runs again after its wait ended. */
static int
tl__gate_resume(tl_bucket_t *b, tl_waiter_t *w)
{
  if (w->gate == TL_GATE_LOCK || w->gate == TL_GATE_WRITE)
    return tl__lock_resume(b, w);
  if (w->gate == TL_GATE_SEM)
    return tl__sem_resume(b, w);
  if (atomic_load(&w->state) == TL_NOTIFIED)
    return w->owner_died ? TL_RESULT_OWNER_DIED : TL_RESULT_ACQUIRED;
  return TL_RESULT_PENDING;
}

static int
tl__gate_release_locked(tl_bucket_t *b, int32_t *word, int gate, uint32_t id,
                        uint32_t amount)
{
  _Atomic int32_t *aword = (_Atomic int32_t *)word;

  switch (gate) {
  case TL_GATE_LOCK:
  case TL_GATE_WRITE:
    return tl__lock_release(b, aword, gate, id, amount);
  case TL_GATE_READ:
    return tl__read_release(b, aword, id);
  default:
    return tl__sem_release(b, aword, amount);
  }
}

/* The hook for a grant that reaches a thread that will never use it: the
 * gate is released as its holder would have released it. A lock or write
 * lock granted with OWNER_DIED keeps that news for the next holder: nobody
 * has seen the dead owner's half-done work yet (lock.c, I6). */
static void
tl__gate_abandon_grant(tl_bucket_t *b, tl_waiter_t *w)
{
  uint32_t amount =
      w->gate == TL_GATE_SEM ? w->amount : w->amount & TL_LOCK_BARGE;

  if ((w->gate == TL_GATE_LOCK || w->gate == TL_GATE_WRITE) && w->owner_died)
    amount |= TL__LOCK_UNUSED_DIED;

  tl__gate_release_locked(b, (int32_t *)w->addr, w->gate, w->lock_id, amount);
}

int
tl_gate_acquire(int32_t *word, int gate, uint32_t id, uint32_t amount,
                double timeout_ms, const tl_probe_t *probe)
{
  tl_bucket_t *b = tl__bucket((uintptr_t)word);
  uint64_t deadline = tl__deadline(timeout_ms);
  tl_sync_waiter_t sw;
  int r, waited = 0;

  if (!tl__valid_gate(gate, id, amount))
    return TL_EINVAL;
  tl__init_sync(&sw, (uintptr_t)word, gate, id, amount);
  tl_mutex_lock(&b->lock);
  r = tl__gate_try(b, &sw.base, 0);
  for (;;) {
    if (r == TL_RESULT_PENDING && deadline <= tl_now_ns()) {
      /* Queued (again) with no time left: leave at once. */
      tl__remove(b, &sw.base);
      atomic_store(&sw.base.state, TL_TIMED_OUT);
      r = TL_RESULT_TIMED_OUT;
    }
    tl_mutex_unlock(&b->lock);
    if (r != TL_RESULT_PENDING)
      break;
    waited = 1;
    /* A waiter of the lock policy (lock, write lock) parks at once: it is
     * woken to compete, and the holder and the barging threads it competes
     * with need the cores it would spin on (bench/README.md, "Profiles of
     * the misses": blocking lock waiters spinning on 2 cores cost rows 5c
     * and 5rw a fifth of their throughput). Readers and semaphore requests
     * spin as plain waits do. */
    r = tl__block(b, &sw, deadline, probe,
                  gate != TL_GATE_LOCK && gate != TL_GATE_WRITE);
    if (r != TL_RESULT_OK)
      return r;
    /* Granted, or woken to compete: the waiter is still linked unless
     * granted, so its fields are the table's until the lock is taken. */
    tl__gate_courtesy(&sw.base);
    tl_mutex_lock(&b->lock);
    r = tl__gate_resume(b, &sw.base);
  }
  /* A grant that came while this thread slept may reach a thread that is
   * being stopped (worker.terminate()) and will run none of its code
   * again: nothing would ever release a semaphore's permits, and a lock
   * would wait for owner-death recovery. Asked once more, the probe tells;
   * the grant is then given back as if never used (a lock's owner-died
   * news is kept for the next holder, lock.c I6). */
  if (waited && probe != NULL &&
      (r == TL_RESULT_ACQUIRED || r == TL_RESULT_OWNER_DIED) &&
      probe->fn(probe->data)) {
    tl_mutex_lock(&b->lock);
    sw.base.owner_died = r == TL_RESULT_OWNER_DIED;
    tl__gate_abandon_grant(b, &sw.base);
    tl_mutex_unlock(&b->lock);
    return TL_RESULT_INTERRUPTED;
  }
  return r;
}

int
tl_gate_acquire_async(tl_waiter_t *w, int32_t *word, int gate, uint32_t id,
                      uint32_t amount)
{
  return tl_gate_acquire_async_at(w, word, gate, id, amount, 0);
}

int
tl_gate_acquire_async_at(tl_waiter_t *w, int32_t *word, int gate, uint32_t id,
                         uint32_t amount, uint64_t waited_ns)
{
  tl_bucket_t *b = tl__bucket((uintptr_t)word);
  uint64_t now;
  int r;

  if (!tl__valid_gate(gate, id, amount))
    return TL_EINVAL;
  w->addr = (uintptr_t)word;
  w->gate = (uint8_t)gate;
  w->lock_id = id;
  w->amount = amount;
  w->owner_died = 0;
  w->granted = 0;
  /* A request that already waited takes its place by its first arrival
   * (tl__gate_enqueue); 0 is "now". */
  now = tl_now_ns();
  w->since = waited_ns != 0 && waited_ns < now ? now - waited_ns : 0;
  w->present = 0;
  tl_mutex_lock(&b->lock);
  r = tl__gate_try(b, w, 1);
  tl_mutex_unlock(&b->lock);
  return r;
}

int
tl__retry_begin(tl_waiter_t *w, int *r)
{
  tl_bucket_t *b = tl__bucket(w->addr);
  int watch;

  tl__gate_courtesy(w);
  tl_mutex_lock(&b->lock);
  *r = tl__gate_resume(b, w);
  /* A lock or write request that came and found the word taken is
   * present: the next release owes it the lock (lock.c, I7), and its
   * thread watches for it a moment before it goes back to its loop. */
  watch = *r == TL_RESULT_PENDING && w->present &&
          atomic_load(&w->state) == TL_WAITING;
  if (watch)
    w->watching = 1;
  tl_mutex_unlock(&b->lock);
  return watch;
}

int
tl__retry_end(tl_waiter_t *w)
{
  tl_bucket_t *b = tl__bucket(w->addr);
  int r;

  tl_mutex_lock(&b->lock);
  w->watching = 0;
#if defined(TL_INJECT_BUG) && TL_INJECT_BUG == 5
  /* Injected bug 5 (test/c/run.sh): a grant that came during the watch
   * is left where nobody takes it up. */
  if (atomic_load(&w->state) == TL_NOTIFIED) {
    tl_mutex_unlock(&b->lock);
    return TL_RESULT_PENDING;
  }
#endif
  /* What came during the watch did not go to the settle callback: a
   * grant is taken up here (NOTIFIED), a wake competes once more
   * (WOKEN; sleeping again, it is present again and the next settle
   * reaches it). Still WAITING: the next grant or wake goes to the
   * settle callback as usual. */
  r = tl__gate_resume(b, w);
  tl_mutex_unlock(&b->lock);
  return r;
}

int
tl_gate_retry_async(tl_waiter_t *w)
{
  int r;

  if (tl__retry_begin(w, &r)) {
    tl__present_watch(w);
    r = tl__retry_end(w);
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

int
tl_lock_release_ex(int32_t *word, int gate, uint32_t id, uint32_t flags,
                   int64_t *left_ns)
{
  tl_bucket_t *b = tl__bucket((uintptr_t)word);
  tl_waiter_t *first;
  int r;

  *left_ns = -1;
  if ((gate != TL_GATE_LOCK && gate != TL_GATE_WRITE) ||
      !tl__valid_gate(gate, id, flags))
    return TL_EINVAL;
  tl_mutex_lock(&b->lock);
  r = tl__lock_release(b, (_Atomic int32_t *)word, gate, id, flags);
  /* How long until a hand-off is due: the oldest waiter starves. While
   * nobody can take a hand-off up at once (lock.c, I7: only event-loop
   * requests on their way or asleep are queued), a release frees the word
   * whether it is due or not; a request that queues later starves
   * TL_POLICY_STARVING_NS from now at the earliest. */
  first = tl__first_gate_waiter(b, (uintptr_t)word);
  if (first != NULL && tl__lock_target(b, (uintptr_t)word,
                                       !(flags & TL_LOCK_BARGE), 0) == NULL) {
    *left_ns = TL_POLICY_STARVING_NS;
  } else if (first != NULL) {
    uint64_t waited = tl_now_ns() - first->since;
    *left_ns = waited >= TL_POLICY_STARVING_NS
                   ? 0
                   : (int64_t)(TL_POLICY_STARVING_NS - waited);
  }
  tl_mutex_unlock(&b->lock);
  return r;
}

void
tl_gate_abandon(tl_waiter_t *w)
{
  tl_bucket_t *b;

  if (w->gate == TL_GATE_NONE)
    return;
  b = tl__bucket(w->addr);
  tl_mutex_lock(&b->lock);
  switch (atomic_load(&w->state)) {
  case TL_WOKEN:
    tl__remove(b, w);
    atomic_store(&w->state, TL_CANCELLED);
    break;
  case TL_NOTIFIED:
    if (w->granted)
      tl__gate_abandon_grant(b, w);
    w->granted = 0;
    break;
  default:
    break;
  }
  tl_mutex_unlock(&b->lock);
}

int
tl_gate_queued(int32_t *word, uint32_t id)
{
  tl_bucket_t *b = tl__bucket((uintptr_t)word);
  int queued;

  tl_mutex_lock(&b->lock);
  queued = tl__queued(b, (uintptr_t)word, id);
  tl_mutex_unlock(&b->lock);
  return queued;
}

/* The words of bucket `b` that `id` holds and others wait for pass to their
 * oldest waiters. Expects b->lock. Returns 1 if it changed the queue. */
static int
tl__bucket_owner_died(tl_bucket_t *b, uint32_t id)
{
  for (tl_waiter_t *w = b->head; w != NULL; w = w->next) {
    int32_t v = atomic_load((_Atomic int32_t *)w->addr);

    if (w->gate == TL_GATE_LOCK && (uint32_t)(v & TL_LOCK_ID_MASK) == id) {
      tl__lock_owner_died(b, w->addr, TL_GATE_LOCK);
      return 1;
    }
    if ((w->gate == TL_GATE_READ || w->gate == TL_GATE_WRITE) &&
        (v & TL_RW_WRITER) && (uint32_t)(v & TL_RW_MASK) == id) {
      tl__lock_owner_died(b, w->addr, TL_GATE_WRITE);
      return 1;
    }
  }
  return 0;
}

void
tl_thread_unregister(uint32_t id)
{
  tl__thread_forget(id);
  /* Any lock or write lock this id still holds with waiters goes to its
   * first waiter now; one without waiters is taken over by its next
   * acquirer, which finds the id gone. Its read locks are given back. */
  for (size_t i = 0; i < TL_BUCKET_COUNT; i++) {
    tl_bucket_t *b = tl__bucket_at(i);

    tl_mutex_lock(&b->lock);
    while (tl__bucket_owner_died(b, id))
      ;
    tl__reads_recover(b, id);
    tl_mutex_unlock(&b->lock);
  }
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
