/* threadlock/host, Recovery: what a dead process had is freed (its held
 * locks pass on with ownerDied, its requests leave their queues, its slot
 * is freed), and the lists are rebuilt from the nodes after a death inside
 * the critical section.
 */

#include "table.h"

/* Frees what a dead slot had: its held locks pass to their oldest waiters
 * with ownerDied, its waiting requests leave their queues. Runs in crit. */
void
tl__recover(tl_host_t *h, uint32_t s)
{
  uint8_t touched[TL_HOST_NAMES];

  memset(touched, 0, sizeof(touched));
  for (uint32_t i = 0; i < TL_HOST_NODES; i++) {
    tl_node_t *n = &h->t->nodes[i];
    uint32_t st = atomic_load(&n->state);
    if (st == TL_HOST_FREE || n->slot != s)
      continue;
    if ((st == TL_HOST_WAITING || st == TL_HOST_HELD) &&
        n->name < TL_HOST_NAMES) {
      tl__list_unlink(h, n);
      if (st == TL_HOST_HELD)
        h->t->names[n->name].died = 1;
      touched[n->name] = 1;
    }
    n->next = 0;
    atomic_store(&n->state, TL_HOST_FREE);
  }
  h->t->slots[s].state = SLOT_FREE;
  for (uint32_t i = 0; i < TL_HOST_NAMES; i++)
    if (touched[i] && h->t->names[i].state == NAME_USED)
      tl__list_process(h, i, 0);
}

/* Recovers every attached slot whose process is gone. Runs in crit. */
void
tl__sweep(tl_host_t *h)
{
  for (uint32_t s = 0; s < TL_HOST_SLOTS; s++)
    if (h->t->slots[s].state != SLOT_FREE && !tl__alive(h, s))
      tl__recover(h, s);
}

/* After taking the section over from a dead owner: rebuilds every list
 * from the nodes, which name their entry and keep their state. The dead
 * owner may have left a list half-changed; nodes keep their relative order
 * by index (FIFO may bend for the requests of that one moment), held nodes
 * first. Runs in crit. */
void
tl__repair(tl_host_t *h)
{
  tl_table_t *t = h->t;

  for (uint32_t i = 0; i < TL_HOST_NAMES; i++) {
    /* No waiter's epoch is the new one: nobody barges ahead of the
     * waiters of before the repair, whose watchers are unknown. */
    t->names[i].epoch++;
    t->names[i].head = t->names[i].tail = 0;
    memset(t->names[i].seen, 0, sizeof(t->names[i].seen));
    if (t->names[i].state != NAME_USED && t->names[i].state != NAME_TOMB)
      t->names[i].state = NAME_EMPTY;
  }
  for (int pass = 0; pass < 2; pass++) {
    uint32_t want = pass == 0 ? TL_HOST_HELD : TL_HOST_WAITING;
    for (uint32_t i = 0; i < TL_HOST_NODES; i++) {
      tl_node_t *n = &t->nodes[i];
      uint32_t st = atomic_load(&n->state);
      if (st != TL_HOST_FREE && st != TL_HOST_WAITING && st != TL_HOST_HELD &&
          st != TL_HOST_STOLEN) {
        atomic_store(&n->state, TL_HOST_FREE);
        continue;
      }
      if (st != want)
        continue;
      if (n->name >= TL_HOST_NAMES || n->slot >= TL_HOST_SLOTS ||
          t->names[n->name].state != NAME_USED) {
        atomic_store(&n->state, TL_HOST_FREE);
        continue;
      }
      tl_name_t *e = &t->names[n->name];
      n->next = 0;
      tl__seen(e, n->slot);
      if (e->tail == 0)
        e->head = i + 1;
      else
        t->nodes[e->tail - 1].next = i + 1;
      e->tail = i + 1;
    }
  }
  tl__sweep(h);
  for (uint32_t i = 0; i < TL_HOST_NAMES; i++)
    if (t->names[i].state == NAME_USED)
      tl__list_process(h, i, 0);
}
