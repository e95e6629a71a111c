/* threadlock/host, Names and their request lists: the hash table of names,
 * the FIFO list of each, grants in Web Locks order, and request nodes.
 * Everything here runs inside the critical section.
 */

#include "table.h"

/* Marks slot `s` in `e`'s watch set; the set's epoch moves when it
 * grows. */
void
tl__seen(tl_name_t *e, uint32_t s)
{
  if (s >= TL_HOST_SLOTS)
    return;
  uint64_t bit = (uint64_t)1 << (s % 64);
  if (!(e->seen[s / 64] & bit)) {
    e->seen[s / 64] |= bit;
    e->epoch++;
  }
}

/* Whether waiting node `n` is old (B2): its process marked it, or it was
 * linked TL_BARGE_MS ago or more by this process's clock. The mark is
 * what the bound rests on; the clock lets every process see it without
 * waiting for the owner's timer (its event loop may be busy). A process
 * of another time namespace reads another monotonic clock: a link time
 * ahead of ours counts as young (the mark still comes), one far behind
 * as old (less barging, never a longer wait). */
int
tl__old(const tl_node_t *n, uint64_t now_us)
{
  if (atomic_load(&n->flags) & TL_NODE_OLD)
    return 1;
  return now_us >= n->token && now_us - n->token >= TL_BARGE_MS * 1000u;
}

/* Finds the entry of `name`, or creates it when `create`. Returns the
 * index, -1 when absent, or a negative error. */
int
tl__name_find(tl_host_t *h, const uint16_t *name, size_t len, int create)
{
  uint64_t hash = tl__hash(name, len);
  int free_at = -1;

  for (uint32_t i = 0; i < TL_HOST_NAMES; i++) {
    uint32_t at = (uint32_t)((hash + i) % TL_HOST_NAMES);
    tl_name_t *e = &h->t->names[at];
    if (e->state == NAME_EMPTY) {
      if (free_at < 0)
        free_at = (int)at;
      break;
    }
    if (e->state == NAME_TOMB) {
      if (free_at < 0)
        free_at = (int)at;
      continue;
    }
    if (e->state != NAME_USED || e->len > TL_HOST_NAME_MAX)
      return TL_HOST_ECORRUPT;
    if (e->hash == hash && e->len == len &&
        memcmp(e->name, name, len * sizeof(uint16_t)) == 0)
      return (int)at;
  }
  if (!create)
    return -1;
  if (free_at < 0)
    return TL_HOST_ENAMES;
  tl_name_t *e = &h->t->names[free_at];
  memset(e, 0, sizeof(*e));
  memcpy(e->name, name, len * sizeof(uint16_t));
  e->len = (uint32_t)len;
  e->hash = hash;
  e->state = NAME_USED;
  /* A name whose last holder died with nobody waiting: its next grantee
   * is told. */
  for (uint32_t i = 0; i < TL_DIED_RING; i++) {
    if (h->t->hdr.died_len[i] == len + 1 && h->t->hdr.died_hash[i] == hash) {
      h->t->hdr.died_len[i] = 0;
      e->died = 1;
      break;
    }
  }
  return free_at;
}

/* A name whose list is empty is no longer needed. Linear probing needs a
 * tombstone there, unless the entry after it is empty: then it and the
 * tombstones before it can be empty too, which keeps the probe chains of
 * later lookups short. */
void
tl__name_trim(tl_host_t *h, uint32_t at)
{
  tl_name_t *e = &h->t->names[at];
  if (e->head != 0)
    return;
  if (e->died) {
    /* Remembered outside the entry, which is freed now. */
    uint32_t i = h->t->hdr.died_next % TL_DIED_RING;
    h->t->hdr.died_hash[i] = e->hash;
    h->t->hdr.died_len[i] = e->len + 1;
    h->t->hdr.died_next = i + 1;
    e->died = 0;
  }
  e->state = NAME_TOMB;
  if (h->t->names[(at + 1) % TL_HOST_NAMES].state != NAME_EMPTY)
    return;
  for (uint32_t i = 0; i < TL_HOST_NAMES; i++) {
    tl_name_t *c = &h->t->names[(at + TL_HOST_NAMES - i) % TL_HOST_NAMES];
    if (c->state != NAME_TOMB)
      break;
    c->state = NAME_EMPTY;
  }
}

/* Unlinks `n` from its name's list. */
int
tl__list_unlink(tl_host_t *h, tl_node_t *n)
{
  int bad = 0;
  uint32_t ref = tl__node_ref(h, n);
  if (n->name >= TL_HOST_NAMES)
    return TL_HOST_ECORRUPT;
  tl_name_t *e = &h->t->names[n->name];
  tl_node_t *prev = NULL;
  uint32_t cur = e->head;
  for (uint32_t steps = 0; cur != 0; steps++) {
    h->walked++;
    tl_node_t *c = tl__node_at(h, cur, &bad);
    if (bad || steps > TL_HOST_NODES)
      return TL_HOST_ECORRUPT;
    if (cur == ref) {
      if (prev == NULL)
        e->head = n->next;
      else
        prev->next = n->next;
      if (e->tail == ref)
        e->tail = prev == NULL ? 0 : tl__node_ref(h, prev);
      n->next = 0;
      return 0;
    }
    prev = c;
    cur = c->next;
  }
  return 0; /* not linked */
}

/* Grants `n`. `ring` is false when the grant happens inside its own
 * request, whose caller learns of it from the return value. */
void
tl__grant(tl_host_t *h, tl_name_t *e, tl_node_t *n, int ring)
{
  n->token = tl__next_token(h);
  n->owner_died = e->died;
  e->died = 0;
  atomic_store(&n->state, TL_HOST_HELD);
  if (ring)
    tl__ring(h, n, 0);
}

/* Web Locks "process the lock request queue": grants the waiting requests
 * at the front of the list that do not conflict with what is held, in
 * order, stopping at the first that must wait.
 *
 * With `barge` (a release or a withdrawal; not a recovery, a repair or a
 * claim), a name left with nothing held whose first waiter is not old
 * (TL_NODE_OLD) is left free instead, so that a request that comes first
 * (often the releaser's next one) takes it without a wake-up of another
 * process; the first waiter is rung once (TL_NODE_RUNG), to come and take
 * it itself (tl_host_claim) if nobody does. Invariants of barging
 * (request.c's tl__grantable is the other half):
 * B1. A name has nothing held and waiters only because a release (or a
 *     withdrawal) left it free for a first waiter that was young then;
 *     whoever finds it so once that waiter is old (a request, a claim, a
 *     release) grants it before anything else happens to the name.
 * B2. A waiter becomes old TL_BARGE_MS after it was linked, marked by its
 *     own process (a timer of its event loop, or its blocking wait): from
 *     then on nobody barges ahead of it, so it is granted at the first
 *     release after that (or by the request or claim that finds the name
 *     free), and a waiter that is at the front waits for at most
 *     TL_BARGE_MS plus one holding by a barger (plus the time its process
 *     takes to run the timer).
 * B3. A free name's first waiter was rung at least once since it became
 *     the first (its RUNG flag), or is old, or its own timer makes it old
 *     within TL_BARGE_MS; so a free name with waiters is taken by one of
 *     them within TL_BARGE_MS even if nobody else comes. */
int
tl__list_process(tl_host_t *h, uint32_t at, int barge)
{
  tl_name_t *e = &h->t->names[at];
  int held_any = 0, held_excl = 0, bad = 0;
  uint32_t cur = e->head;
  uint64_t now_us = 0; /* read at the first waiter, if any */

  for (uint32_t steps = 0; cur != 0; steps++) {
    h->walked++;
    tl_node_t *n = tl__node_at(h, cur, &bad);
    if (bad || steps > TL_HOST_NODES)
      return TL_HOST_ECORRUPT;
    int excl = (n->flags & TL_HOST_EXCLUSIVE) != 0;
    uint32_t st = atomic_load(&n->state);
    if (st == TL_HOST_WAITING) {
      if (excl ? held_any : held_excl)
        break;
      uint32_t f = atomic_load(&n->flags);
      if (barge && !held_any && now_us == 0)
        now_us = tl__hp_monotonic_us();
      if (barge && !held_any && !tl__old(n, now_us)) {
        if (!(f & TL_NODE_RUNG)) {
          atomic_fetch_or(&n->flags, TL_NODE_RUNG | TL_NODE_OFFER);
          tl__ring(h, n, 0);
        }
        break;
      }
      tl__grant(h, e, n, 1);
      st = TL_HOST_HELD;
    }
    if (st == TL_HOST_HELD) {
      held_any = 1;
      held_excl |= excl;
    }
    cur = n->next;
  }
  tl__name_trim(h, at);
  return 0;
}

tl_node_t *
tl__node_alloc(tl_host_t *h)
{
  uint32_t hint = h->t->hdr.node_hint % TL_HOST_NODES;
  for (uint32_t i = 0; i < TL_HOST_NODES; i++) {
    uint32_t at = (hint + i) % TL_HOST_NODES;
    tl_node_t *n = &h->t->nodes[at];
    if (atomic_load(&n->state) == TL_HOST_FREE) {
      h->t->hdr.node_hint = at + 1;
      return n;
    }
  }
  return NULL;
}

void
tl__node_free(tl_host_t *h, tl_node_t *n)
{
  uint32_t i = tl__node_ref(h, n) - 1;
  if (n->slot == h->slot && h->mine[i] != TL_HOST_FREE) {
    tl__mine_set(h, i, TL_HOST_FREE);
    atomic_fetch_sub(&h->owned, 1);
  }
  n->next = 0;
  atomic_store(&n->state, TL_HOST_FREE);
}
