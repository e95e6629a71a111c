/* The semaphore: a count of permits in one word, granted in FIFO order.
 * Once a request waits, later ones queue behind it even if they would fit,
 * so a large request is never starved by small ones. Every function here
 * expects the word's bucket lock. While requests are queued the waiters bit
 * is set and the compare-exchange fast paths in JavaScript stay away, so
 * the stores below cannot lose a concurrent update.
 */
#include "waiters.h"

#include "platform.h"
#include "tl_internal.h"

/* Grants the requests at the head of the queue on `addr` for as long as
 * the permits suffice. */
static void
tl__sem_pass(tl_bucket_t *b, uintptr_t addr)
{
  _Atomic int32_t *word = (_Atomic int32_t *)addr;

  for (;;) {
    tl_waiter_t *h = tl__first_gate_waiter(b, addr);
    int32_t v = atomic_load(word);
    uint32_t avail = (uint32_t)(v & TL_SEM_MASK);

    if (h == NULL) {
      if (v & TL_GATE_WAITERS)
        atomic_fetch_and(word, ~TL_GATE_WAITERS);
      return;
    }
    if (avail < h->amount)
      return;
    v = (int32_t)(avail - h->amount);
    if (tl__next_gate_waiter(h) != NULL)
      v |= TL_GATE_WAITERS;
    atomic_store(word, v);
    tl__gate_grant(b, h, 0);
  }
}

/* A new request for `w->amount` permits: takes them, or queues behind
 * earlier requests. */
int
tl__sem_try(tl_bucket_t *b, tl_waiter_t *w)
{
  _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
  int queued = tl__first_gate_waiter(b, w->addr) != NULL;
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

/* Returns `amount` permits and grants what the queue can take now. */
int
tl__sem_release(tl_bucket_t *b, _Atomic int32_t *word, uint32_t amount)
{
  int32_t v = atomic_load(word);

  /* The fast paths may still run while no request is queued. */
  do {
    if ((uint32_t)(v & TL_SEM_MASK) + amount > TL_SEM_MASK)
      return TL_EOVERFLOW;
  } while (!atomic_compare_exchange_weak(word, &v, v + (int32_t)amount));
  tl__sem_pass(b, (uintptr_t)word);
  return 0;
}

/* The hook of semaphore waiters: `w` left without a grant, which may let
 * smaller requests behind it in. */
void
tl__sem_left(tl_bucket_t *b, tl_waiter_t *w)
{
  tl__sem_pass(b, w->addr);
}
