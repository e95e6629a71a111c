/* threadlock/host, Doorbells: the word of a slot that is bumped and woken
 * for every grant or steal of its async requests, and the helper threads'
 * side of it.
 */

#include "table.h"

/* Rings the doorbell of slot `s`. Every sleeper is woken, not one: a
 * helper thread that sleeps on several words (futex_waitv) and was woken
 * through another stays queued on this one until it runs again, and a
 * wake of one could go to that stale entry instead of the helper now in
 * charge of the slot (the next one of the process, or of the process that
 * reused the slot). Normally there is exactly one sleeper. */
void
tl__doorbell_ring(tl_host_t *h, uint32_t s)
{
  _Atomic uint32_t *d = &h->t->slots[s].doorbell;
  atomic_fetch_add(d, 1);
  tl__hp_wake((uint32_t *)d, 1 << 30);
}

/* Tells the owner of `n` that its node changed. A blocking (SYNC) waiter
 * sleeps on its node's word; an event loop learns of grants and steals
 * through its slot's doorbell, which a steal rings for SYNC holders too
 * (their lock's signal aborts from the event loop). */
void
tl__ring(tl_host_t *h, tl_node_t *n, int steal)
{
  if (n->flags & TL_HOST_SYNC) {
    atomic_fetch_add(&n->word, 1);
    tl__hp_wake((uint32_t *)&n->word, 1);
    if (!steal)
      return;
  }
  if (n->slot < TL_HOST_SLOTS)
    tl__doorbell_ring(h, n->slot);
}

uint32_t *
tl_host_doorbell(tl_host_t *h)
{
  return (uint32_t *)&h->t->slots[h->slot].doorbell;
}

int
tl_host_doorbell_check(tl_host_t *h, uint32_t *seen)
{
  tl_slot_t *me = &h->t->slots[h->slot];

  if (atomic_load(&h->stopping))
    return 0;
  /* The helper reads the slot only after checking that it can. */
  if (tl__table_ok(h) != 0)
    return -1;
  uint32_t v = atomic_load(&me->doorbell);
  if (v == *seen)
    return 0;
  *seen = v;
  return 1;
}

/* How long a manager's own helper (no futex_waitv) sleeps on its doorbell
 * at most before it looks again: the bound on how late it sees `stopping`
 * when the table was truncated under the process and could not be rung
 * (tl_host_doorbell_stop), and on how late it notices such a table. One
 * wake a second of an idle helper costs nothing measurable. */
#define TL_DOORBELL_SLICE_MS 1000

int
tl_host_doorbell_wait(tl_host_t *h, uint32_t *seen)
{
  uint32_t *d = tl_host_doorbell(h);

  for (;;) {
    if (atomic_load(&h->stopping))
      return -1;
    int c = tl_host_doorbell_check(h, seen);
    if (c != 0)
      return c > 0 ? 0 : -2;
    tl__hp_wait(d, *seen, TL_DOORBELL_SLICE_MS);
  }
}

void
tl_host_doorbell_stop(tl_host_t *h)
{
  atomic_store(&h->stopping, 1);
  /* Ringing writes into the table, which faults with SIGBUS once the file
   * has shrunk under the mapping: rung only while the table is whole;
   * otherwise the helper sees `stopping` when its sleep's slice ends. */
  if (tl__table_ok(h) == 0)
    tl__doorbell_ring(h, h->slot);
}
