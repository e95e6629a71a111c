/* The read side of a read-write lock word, and the grants of its queue.
 *
 * Writers follow the lock policy (lock.c). Readers are counted in the word
 * and, per thread, here: every read hold is booked under the word's bucket
 * lock as (word, thread, count), so that a thread that dies holding read
 * locks gives them back (the next writer is told, RW_OWNER_DIED), and so
 * that a blocking request that could never be granted (a reader asking for
 * the write lock, or for another read lock behind a queued writer) fails
 * with EDEADLK instead of sleeping forever.
 *
 * A queued writer holds back readers that come after it, so a stream of
 * readers cannot starve writers; the readers queued before the next writer
 * enter together. Every function here expects the word's bucket lock.
 *
 * A word that the recovery of a dead thread frees carries RW_OWNER_DIED
 * from the same atomic step on: a writer in JavaScript may take a free word
 * with one compare-exchange at any moment, outside the bucket lock, and
 * keeps the bit it finds (lib/LockWord.js), so a free word without the bit
 * for even one instant would let a writer in untold.
 */
#include "waiters.h"

#include "alloc.h"
#include "platform.h"
#include "tl_internal.h"

/* The read holds of one thread on one word; in its bucket's `reads` list.
 * `pending` counts its queued read requests, whose grant must not fail for
 * want of memory. Freed when both counts are 0. */
struct tl_read_hold_s {
  tl_read_hold_t *next; /* protected by the bucket lock, as every field */
  uintptr_t addr;
  uint32_t id;
  uint32_t count;
  uint32_t pending;
};

static tl_read_hold_t **
tl__hold_slot(tl_bucket_t *b, uintptr_t addr, uint32_t id)
{
  tl_read_hold_t **p = &b->reads;

  while (*p != NULL && ((*p)->addr != addr || (*p)->id != id))
    p = &(*p)->next;
  return p;
}

static tl_read_hold_t *
tl__hold_find(tl_bucket_t *b, uintptr_t addr, uint32_t id)
{
  return *tl__hold_slot(b, addr, id);
}

/* The record of (addr, id), made if missing; NULL when memory ran out. */
static tl_read_hold_t *
tl__hold_get(tl_bucket_t *b, uintptr_t addr, uint32_t id)
{
  tl_read_hold_t *h = tl__hold_find(b, addr, id);

  if (h != NULL)
    return h;
  h = tl__malloc(sizeof(*h));
  if (h == NULL)
    return NULL;
  h->addr = addr;
  h->id = id;
  h->count = 0;
  h->pending = 0;
  h->next = b->reads;
  b->reads = h;
  return h;
}

static void
tl__hold_drop_if_empty(tl_bucket_t *b, uintptr_t addr, uint32_t id)
{
  tl_read_hold_t **p = tl__hold_slot(b, addr, id);
  tl_read_hold_t *h = *p;

  if (h != NULL && h->count == 0 && h->pending == 0) {
    *p = h->next;
    tl__free(h);
  }
}

int
tl__read_count(tl_bucket_t *b, uintptr_t addr, uint32_t id, int delta)
{
  tl_read_hold_t *h = tl__hold_find(b, addr, id);

  (void)delta;
  return h == NULL ? 0 : (int)h->count;
}

/* Grants the waiters at the head of the queue on `addr` for as long as they
 * fit: one writer once no reader or writer holds the word, or every reader
 * up to the next queued writer. `owner_died` goes to every grant of this
 * pass: the writer, or each reader of the batch let in together, since
 * each of them is the first to see what the dead holder left. */
void
tl__rw_pass(tl_bucket_t *b, uintptr_t addr, int owner_died)
{
  _Atomic int32_t *word = (_Atomic int32_t *)addr;

  for (;;) {
    tl_waiter_t *h = tl__first_gate_waiter(b, addr);
    int32_t v = atomic_load(word);
    int32_t readers = v & TL_RW_MASK;
    int32_t next;

    if (h == NULL) {
      if (v & TL_GATE_WAITERS)
        atomic_fetch_and(word, ~TL_GATE_WAITERS);
      return;
    }
    if ((v & TL_RW_WRITER) ||
        (h->gate == TL_GATE_WRITE ? readers != 0 : readers == TL_RW_MASK))
      return;
    /* A woken writer is first (lock.c, I1), so a grant clears the woken
     * bit: it goes either to that writer or, if the first is a reader, no
     * writer is woken. */
    next = v & TL_RW_OWNER_DIED;
    next |= h->gate == TL_GATE_WRITE ? (int32_t)(TL_RW_WRITER | h->lock_id)
                                     : readers + 1;
    if (tl__next_gate_waiter(h) != NULL)
      next |= TL_GATE_WAITERS;
    /* A free word can be taken meanwhile by a barging writer in JavaScript:
     * grant only through a compare-exchange, and look again if it fails. */
    if (!atomic_compare_exchange_strong(word, &v, next))
      continue;
    if (h->gate == TL_GATE_READ) {
      tl_read_hold_t *hold = tl__hold_find(b, addr, h->lock_id);
      /* Booked when the request queued (tl__read_try). */
      hold->pending--;
      hold->count++;
    }
    tl__gate_grant(b, h,
                   owner_died || (h->gate == TL_GATE_WRITE &&
                                  (v & TL_RW_OWNER_DIED) != 0));
#if defined(TL_INJECT_BUG) && TL_INJECT_BUG == 1
    /* Injected bug 1 (test/c/run.sh): readers let in one per pass. */
    if (h->gate == TL_GATE_READ)
      return;
#endif
  }
}

/* The writer of the word at `addr` died holding it: clear it out and let
 * the queue in, the first grant told so. */
static void
tl__rw_writer_died(tl_bucket_t *b, uintptr_t addr)
{
  _Atomic int32_t *word = (_Atomic int32_t *)addr;

  /* Freed with the mark (see the top); the first grant is told too. */
  atomic_store(word, (atomic_load(word) & (TL_GATE_WAITERS | TL_LOCK_WOKEN)) |
                         TL_RW_OWNER_DIED);
  tl__rw_pass(b, addr, 1);
}

/* A new read request: takes a read lock, or queues. */
int
tl__read_try(tl_bucket_t *b, tl_waiter_t *w, int allow_self)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
  tl_read_hold_t *hold = tl__hold_get(b, w->addr, w->lock_id);
  int32_t v = atomic_load(word);
  int took_over = 0;

  if (hold == NULL)
    return TL_ENOMEM;
  for (;;) {
    int queued = tl__first_gate_waiter(b, w->addr) != NULL;
#if defined(TL_INJECT_BUG) && TL_INJECT_BUG == 2
    /* Injected bug 2 (test/c/run.sh): new readers pass queued writers. */
    queued = 0;
#endif

    if (v & TL_RW_WRITER) {
      uint32_t owner = (uint32_t)(v & TL_RW_MASK);
      if (owner != w->lock_id && !tl_thread_alive(owner)) {
        took_over = tl__first_gate_waiter(b, w->addr) == NULL;
        tl__rw_writer_died(b, w->addr);
        v = atomic_load(word);
        continue;
      }
    }
    if (!allow_self && tl__queued(b, w->addr, w->lock_id)) {
      tl__hold_drop_if_empty(b, w->addr, w->lock_id);
      return TL_EDEADLK;
    }
    if (!(v & TL_RW_WRITER) && !queued && (v & TL_RW_MASK) < TL_RW_MASK) {
      if (!atomic_compare_exchange_strong(word, &v, v + 1))
        continue;
      hold->count++;
      return took_over ? TL_RESULT_OWNER_DIED : TL_RESULT_ACQUIRED;
    }
    /* It would queue. A blocking request of the writer, or of a reader
     * behind a queued writer, would wait for a release that only this very
     * thread can make. */
    if (!allow_self &&
        (((v & TL_RW_WRITER) && (uint32_t)(v & TL_RW_MASK) == w->lock_id) ||
         hold->count != 0)) {
      tl__hold_drop_if_empty(b, w->addr, w->lock_id);
      return TL_EDEADLK;
    }
    if (tl__gate_enqueue(b, w, &v) == 0) {
      hold->pending++;
      return TL_RESULT_PENDING;
    }
  }
}

/* Thread `id` gives back one read lock on `word`. */
int
tl__read_release(tl_bucket_t *b, _Atomic int32_t *word, uint32_t id)
{
  tl_read_hold_t *hold = tl__hold_find(b, (uintptr_t)word, id);
  int32_t v = atomic_load(word);

  if (hold == NULL || hold->count == 0 || (v & TL_RW_WRITER) ||
      (v & TL_RW_MASK) == 0)
    return TL_ENOTOWNER;
  atomic_fetch_sub(word, 1);
  hold->count--;
  tl__hold_drop_if_empty(b, (uintptr_t)word, id);
  tl__rw_pass(b, (uintptr_t)word, 0);
  return 0;
}

/* The hook of read waiters: `w` left the queue without a grant. */
void
tl__rw_left(tl_bucket_t *b, tl_waiter_t *w)
{
  tl_read_hold_t *hold = tl__hold_find(b, w->addr, w->lock_id);

  if (hold != NULL && hold->pending > 0) {
    hold->pending--;
    tl__hold_drop_if_empty(b, w->addr, w->lock_id);
  }
  tl__rw_pass(b, w->addr, 0);
  tl__gate_waiters_bit(b, w->addr);
}

/* Thread `id` is gone: gives back the read locks it held on the words of
 * bucket `b`, marks each such word for its next writer, and lets the queue
 * in. */
void
tl__reads_recover(tl_bucket_t *b, uint32_t id)
{
  tl_read_hold_t **p = &b->reads;

  while (*p != NULL) {
    tl_read_hold_t *h = *p;
    _Atomic int32_t *word = (_Atomic int32_t *)h->addr;

    if (h->id != id) {
      p = &h->next;
      continue;
    }
    *p = h->next;
    if (h->count != 0) {
      /* Its reads leave and the mark comes in one step (see the top). */
      int32_t v = atomic_load(word);
      while (!atomic_compare_exchange_weak(
          word, &v, (v - (int32_t)h->count) | TL_RW_OWNER_DIED))
        ;
      tl__rw_pass(b, h->addr, 0);
    }
    tl__free(h);
  }
}
