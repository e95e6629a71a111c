/* threadlock/host, The request protocol: request, release, the blocking
 * wait of requestSync, the doorbell's poll, query, and the watchers a steal
 * asks for.
 */

#include "table.h"

/* tl__grantable's answers beside 0 (wait) and 1 (grant at the tail). */
enum {
  TL_BARGE = 2,      /* grant, at the head, ahead of young waiters */
  TL_FRONT_FIRST = 3 /* free, with an old first waiter: grant it first */
};

/* Whether a new request of `excl` at the tail of `e` is grantable now:
 * nothing waits, and nothing held conflicts; or nothing is held and it
 * may barge (lists.c, B1-B3). In O(1): a list holds its
 * held requests first and its waiting ones after them (grants go in
 * order, stopping at the first request that must wait, and a steal puts
 * its grant first), so the tail says whether any waits, and the head
 * whether what is held is exclusive (an exclusive holder is alone). Sets
 * *dead when the head or the tail in the way belongs to a dead slot (a
 * dead waiter in the middle is recovered by the watchers behind it). */
static int
tl__grantable(tl_host_t *h, tl_name_t *e, int excl, int barge, int *dead)
{
  int bad = 0;
  tl_node_t *head = tl__node_at(h, e->head, &bad);
  tl_node_t *tail = tl__node_at(h, e->tail, &bad);

  if (bad || (head == NULL) != (tail == NULL))
    return TL_HOST_ECORRUPT;
  if (head == NULL)
    return 1;
  if (head->slot >= TL_HOST_SLOTS || tail->slot >= TL_HOST_SLOTS)
    return TL_HOST_ECORRUPT;
  if (atomic_load(&tail->state) != TL_HOST_WAITING && !excl &&
      !(head->flags & TL_HOST_EXCLUSIVE))
    return 1;
  if (atomic_load(&head->state) == TL_HOST_WAITING) {
    /* Nothing is held, and `head` is the first waiter. Barging ahead of
     * it is allowed when it is not old (B2), is not this attachment's (a
     * manager's own requests keep their order), and every waiter watches
     * this slot, so that they notice if it dies holding the name: this
     * slot is in `seen`, and `seen` has not grown since the first waiter
     * was linked (its epoch), so every waiter, linked after it, watches
     * all of `seen` (tl__ahead_of). Otherwise the request queues. */
    uint32_t s = h->slot;
    if (tl__old(head, tl__hp_monotonic_us()))
      return TL_FRONT_FIRST;
    if (barge && head->slot != s && head->epoch == e->epoch &&
        (e->seen[s / 64] >> (s % 64) & 1) != 0)
      return TL_BARGE;
  }
  if (!tl__alive(h, head->slot) || !tl__alive(h, tail->slot))
    *dead = 1;
  return 0;
}

int
tl_host_request(tl_host_t *h, const uint16_t *name, size_t len, int flags,
                int64_t crit_ms, uint32_t *node, uint64_t *token,
                int *owner_died)
{
  int excl = (flags & TL_HOST_EXCLUSIVE) != 0;
  int barge = (flags & TL_HOST_NO_BARGE) == 0;
  int r, at, dead = 0;
  uint8_t ahead[TL_HOST_SLOTS];

  if (len > TL_HOST_NAME_MAX)
    return TL_HOST_ENAMES;
  if ((r = tl__crit_lock(h, crit_ms)) != 0)
    return r;
  at = tl__name_find(h, name, len, 1);
  if (at < 0) {
    r = at;
    goto out;
  }
  tl_name_t *e = &h->t->names[at];
  tl_node_t *n = tl__node_alloc(h);
  if (n == NULL) {
    tl__name_trim(h, (uint32_t)at);
    r = TL_HOST_ENODES;
    goto out;
  }
  memset(n, 0, sizeof(*n));
  n->slot = h->slot;
  n->name = (uint32_t)at;
  n->flags = (uint32_t)(flags & (TL_HOST_EXCLUSIVE | TL_HOST_SYNC));
  if (flags & TL_HOST_STEAL) {
    /* Web Locks "request a lock", steal: every held lock of the name is
     * released (its owner is told), and the request goes first. */
    int bad = 0;
    uint32_t cur = e->head;
    for (uint32_t steps = 0; cur != 0; steps++) {
      h->walked++;
      tl_node_t *c = tl__node_at(h, cur, &bad);
      if (bad || steps > TL_HOST_NODES) {
        r = TL_HOST_ECORRUPT;
        goto out;
      }
      cur = c->next;
      if (atomic_load(&c->state) == TL_HOST_HELD) {
        tl__list_unlink(h, c);
        if (c->slot < TL_HOST_SLOTS && tl__alive(h, c->slot)) {
          atomic_store(&c->state, TL_HOST_STOLEN);
          tl__ring(h, c, 1);
        } else {
          atomic_store(&c->state, TL_HOST_FREE);
        }
      } else if (c->slot < TL_HOST_SLOTS && c->slot != h->slot) {
        /* A waiter now waits behind a new holder: its attachment's helper
         * makes sure that holder is watched (tl_host_doorbell_wait). */
        atomic_fetch_add(&h->t->slots[c->slot].rewatch, 1);
        tl__doorbell_ring(h, c->slot);
      }
    }
    e->died = 0;
    if (e->head == 0)
      memset(e->seen, 0, sizeof(e->seen));
    tl__seen(e, n->slot);
    n->next = e->head;
    e->head = tl__node_ref(h, n);
    if (e->tail == 0)
      e->tail = e->head;
    atomic_store(&n->state, TL_HOST_WAITING);
    tl__grant(h, e, n, 0);
  } else {
    r = tl__grantable(h, e, excl, barge, &dead);
    if (r == TL_FRONT_FIRST) {
      /* B1: the old first waiter is granted before this one is placed. */
      tl__list_process(h, (uint32_t)at, 0);
      r = tl__grantable(h, e, excl, barge, &dead);
    }
    if (r < 0)
      goto undo;
    if (!r && dead) {
      /* Whoever is in the way died: recover it before deciding. The
       * recovery may have freed the name's entry (nobody else wanted
       * it): look it up again. */
      tl__sweep(h);
      dead = 0;
      at = tl__name_find(h, name, len, 1);
      if (at < 0) {
        r = at;
        goto out;
      }
      e = &h->t->names[at];
      n->name = (uint32_t)at;
      r = tl__grantable(h, e, excl, barge, &dead);
      if (r == TL_FRONT_FIRST) {
        tl__list_process(h, (uint32_t)at, 0);
        r = tl__grantable(h, e, excl, barge, &dead);
      }
      if (r < 0)
        goto undo;
    }
    if (r == TL_FRONT_FIRST)
      r = 0; /* the grant above failed (a corrupt list): wait */
    if (!r && (flags & TL_HOST_IF_AVAILABLE)) {
      r = TL_HOST_UNAVAILABLE;
      goto undo;
    }
    if (!r) {
      /* The processes ahead are watched (their death noticed) from now
       * on; the watchers start before the request is linked, so that one
       * that cannot start leaves nothing behind but an error. */
      tl__ahead_of(h, e, ahead);
      if (tl__watch(h, ahead) != 0) {
        r = TL_HOST_ETHREAD;
        goto undo;
      }
    }
    atomic_store(&n->state, TL_HOST_WAITING);
    n->next = 0;
    uint32_t ref = tl__node_ref(h, n);
    if (r == TL_BARGE) {
      /* First in the list: nothing is held, so the held-first order
       * holds (tl__grantable checked that its slot is in `seen`). */
      n->next = e->head;
      e->head = ref;
      tl__grant(h, e, n, 0);
      goto linked;
    }
    if (e->tail == 0) {
      memset(e->seen, 0, sizeof(e->seen));
      e->epoch++;
    }
    tl__seen(e, n->slot);
    n->epoch = e->epoch;
    n->token = tl__hp_monotonic_us(); /* the link time, until a grant */
    if (e->tail == 0) {
      e->head = ref;
    } else {
      int bad = 0;
      tl_node_t *last = tl__node_at(h, e->tail, &bad);
      if (bad) {
        r = TL_HOST_ECORRUPT;
        goto undo;
      }
      last->next = ref;
    }
    if (!r && tl__fault_armed() == 1)
      raise(SIGKILL); /* the tail still points at the old last node */
    if (!r && tl__fault_armed() == 2) {
      /* Stopped inside the section (once), as a debugger or SIGSTOP may. */
      atomic_store_explicit(&tl__fault, 0, memory_order_relaxed);
      raise(SIGSTOP);
    }
    e->tail = ref;
    if (r)
      tl__grant(h, e, n, 0);
  }
linked:
  tl__mine_set(h, tl__node_ref(h, n) - 1, atomic_load(&n->state));
  atomic_fetch_add(&h->owned, 1);
  *node = tl__node_ref(h, n) - 1;
  *token = n->token;
  *owner_died = (int)n->owner_died;
  r = (int)atomic_load(&n->state);
  tl__crit_unlock(h);
  return r;

undo:
  atomic_store(&n->state, TL_HOST_FREE);
  tl__name_trim(h, (uint32_t)at);
out:
  tl__crit_unlock(h);
  return r;
}

static tl_node_t *
tl__mine(tl_host_t *h, uint32_t node)
{
  if (node >= TL_HOST_NODES || h->mine[node] == TL_HOST_FREE)
    return NULL;
  tl_node_t *n = &h->t->nodes[node];
  return n->slot == h->slot ? n : NULL;
}

int
tl_host_release(tl_host_t *h, uint32_t node, int64_t crit_ms)
{
  int r;

  if ((r = tl__crit_lock(h, crit_ms)) != 0)
    return r;
  tl_node_t *n = tl__mine(h, node);
  if (n == NULL) {
    tl__crit_unlock(h);
    return TL_HOST_ENOTMINE;
  }
  r = (int)atomic_load(&n->state);
  if ((r == TL_HOST_WAITING || r == TL_HOST_HELD) && n->name < TL_HOST_NAMES) {
    uint32_t at = n->name;
    tl__list_unlink(h, n);
    tl__node_free(h, n);
    tl__list_process(h, at, 1);
  } else {
    tl__node_free(h, n);
  }
  tl__crit_unlock(h);
  tl__prune(h);
  return r;
}

/* A waiter's own visit to its name (in crit): it was rung to take the
 * name a release left free (TL_NODE_OFFER, cleared here), or it has
 * waited TL_BARGE_MS (`age`: it becomes old, B2). A name found free is
 * granted in order from its first waiter, this one or an earlier one. */
static void
tl__claim_node(tl_host_t *h, tl_node_t *n, int age)
{
  int bad = 0;

  if (atomic_load(&n->state) != TL_HOST_WAITING || n->name >= TL_HOST_NAMES)
    return;
  atomic_fetch_and(&n->flags, ~TL_NODE_OFFER);
  if (age)
    atomic_fetch_or(&n->flags, TL_NODE_OLD);
  tl_node_t *head = tl__node_at(h, h->t->names[n->name].head, &bad);
  if (!bad && head != NULL && atomic_load(&head->state) == TL_HOST_WAITING)
    tl__list_process(h, n->name, 0);
}

int
tl_host_wait(tl_host_t *h, uint32_t node, int64_t timeout_ms,
             const tl_host_stop_t *stop, uint64_t *token, int *owner_died)
{
  uint64_t deadline = timeout_ms < 0 ? 0 : tl__hp_monotonic_ms() + timeout_ms;
  /* B2: the waiter becomes old after TL_BARGE_MS (the clock counts whole
   * milliseconds: one more, so that it is never early). */
  uint64_t aging = tl__hp_monotonic_ms() + TL_BARGE_MS + 1;
  int aged = 0;
  int interrupted = 0;
  tl_node_t *n;
  int r;

  if (node >= TL_HOST_NODES || h->mine[node] == TL_HOST_FREE)
    return TL_HOST_ENOTMINE;
  n = &h->t->nodes[node];
  for (;;) {
    if (tl__table_ok(h) != 0)
      return TL_HOST_ECORRUPT;
    uint32_t w = atomic_load(&n->word);
    if (atomic_load(&n->state) != TL_HOST_WAITING)
      break;
    uint64_t now = tl__hp_monotonic_ms();
    int64_t left = -1;
    if (timeout_ms >= 0) {
      if (now >= deadline)
        break;
      left = (int64_t)(deadline - now);
    }
    int age = !aged && now >= aging;
    if (age || (atomic_load(&n->flags) & TL_NODE_OFFER)) {
      /* Rung to take the name, or old now: a visit in the section, which
       * a blocking call may wait for (at most a slice on a worker, which
       * must stay terminable, else what is left of its timeout). */
      int c = tl__crit_lock(h, stop != NULL ? stop->slice_ms : left);
      if (c == 0) {
        tl__claim_node(h, n, age);
        aged |= age;
        tl__crit_unlock(h);
        continue;
      }
      if (c == TL_HOST_ECORRUPT)
        return c;
      if (c == TL_HOST_ETIMEDOUT && stop != NULL && stop->fn(stop->data)) {
        interrupted = 1;
        break;
      }
      continue;
    }
    if (!aged && (left < 0 || (int64_t)(aging - now) < left))
      left = (int64_t)(aging - now);
    /* A thread that may be terminated (a worker) sleeps in slices and asks
     * between them, as threadlock's other blocking waits do. */
    if (stop != NULL && (left < 0 || left > stop->slice_ms))
      left = stop->slice_ms;
    if (tl__hp_wait((uint32_t *)&n->word, w, left) == TL_HP_TIMED_OUT &&
        stop != NULL && stop->fn(stop->data)) {
      interrupted = 1;
      break;
    }
  }
  /* Granted (or stolen): the grant wrote the token before the state, and
   * nobody but this thread changes the node of a live owner now, so no
   * lock is needed to read it. `mine` is this attachment's JS thread's. */
  r = (int)atomic_load(&n->state);
  if (r == TL_HOST_HELD || r == TL_HOST_STOLEN) {
    tl__mine_set(h, node, (uint32_t)r);
    *token = n->token;
    *owner_died = (int)n->owner_died;
    tl__prune(h);
    return r;
  }
  /* The withdrawal does not wait for the section either: when another
   * process holds it, the caller is told (TL_HOST_EAGAIN) and withdraws
   * the request later, from a thread that may wait. */
  if ((r = tl__crit_lock(h, 0)) != 0)
    return r == TL_HOST_EAGAIN ? TL_HOST_EAGAIN : r;
  r = (int)atomic_load(&n->state);
  if (r == TL_HOST_WAITING) {
    /* Timed out or interrupted: the request leaves its queue, which may
     * let the ones behind it through. */
    uint32_t at = n->name;
    tl__list_unlink(h, n);
    tl__node_free(h, n);
    if (at < TL_HOST_NAMES)
      tl__list_process(h, at, 1);
    r = interrupted ? TL_HOST_EINTR : TL_HOST_ETIMEDOUT;
  } else {
    tl__mine_set(h, node, (uint32_t)r);
    *token = n->token;
    *owner_died = (int)n->owner_died;
  }
  tl__crit_unlock(h);
  tl__prune(h);
  return r;
}

/* Reads what another process may be changing in node `n` of this
 * attachment, without the critical section: its state, and with HELD its
 * token and ownerDied. Returns 1 with a consistent reading, 0 when the node
 * was no longer this slot's (taken away by a repair: *st is FREE), -1 when
 * it kept changing (the caller looks again at the next poll).
 *
 * Invariants that make the reading sound without the section (the
 * attachment's `local` mutex is held, so no thread of this attachment
 * allocates, frees or changes a node of its slot meanwhile):
 * - Only this attachment allocates nodes for its slot, so a node whose
 *   `slot` reads as ours before and after was not freed and reused in
 *   between by another process (it would carry that process's slot, and
 *   could not come back to ours without us).
 * - A grant writes `token` and `owner_died` before its store of HELD; the
 *   load of the state that sees HELD (acquire) therefore sees them, and
 *   nobody writes them again while the node stays ours (a steal only
 *   moves HELD to STOLEN; a repair only frees).
 * - The second load of the state, after an acquire fence, shows whether
 *   the node changed while it was read (a seqlock's reader); a change
 *   means the writer rang the doorbell or freed the node, and the next
 *   reading tells. */
static int
tl__node_read(tl_host_t *h, tl_node_t *n, uint32_t *st, uint64_t *token,
              int *died)
{
  for (int tries = 0; tries < 8; tries++) {
    uint32_t s1 = atomic_load(&n->state);
    uint32_t slot1 = n->slot;
    uint64_t tk = n->token;
    uint32_t od = n->owner_died;
    atomic_thread_fence(memory_order_acquire);
    uint32_t s2 = atomic_load(&n->state);
    uint32_t slot2 = n->slot;
    if (s1 != s2 || slot1 != slot2)
      continue;
    if (slot1 != h->slot || s1 == TL_HOST_FREE) {
      *st = TL_HOST_FREE;
      return 0;
    }
    *st = s1;
    *token = tk;
    *died = (int)od;
    return 1;
  }
  return -1;
}

/* The poll takes no critical section: it reads only nodes of this
 * attachment's slot, which other processes change only by a grant, a
 * steal or a repair, each of which publishes with one atomic store of the
 * state (tl__node_read says why that reading is sound). It takes the
 * attachment's `local` mutex, which every thread of the attachment holds
 * while it allocates or frees a node of its slot (inside the section), so
 * that no other thread of the attachment changes the nodes read; a woken
 * event loop learns of its grant without waiting for any other process:
 * the releaser that rang may still be inside the section. `crit_ms`
 * bounds the wait for `local` (held by a thread of this attachment that
 * may be waiting for the section: then 0 gives TL_HOST_EAGAIN). */
int
tl_host_poll(tl_host_t *h, tl_host_poll_cb visit, void *data, int64_t crit_ms)
{
  int again = 0;

  if (crit_ms < 0)
    tl__hp_mutex_lock(h->local);
  else if ((crit_ms == 0 ? tl__hp_mutex_trylock(h->local)
                         : tl__hp_mutex_timedlock(h->local, crit_ms)) != 0)
    return crit_ms == 0 ? TL_HOST_EAGAIN : TL_HOST_ETIMEDOUT;
  if (tl__table_ok(h) != 0) {
    tl__hp_mutex_unlock(h->local);
    return TL_HOST_ECORRUPT;
  }
  for (uint32_t i = 0; i < TL_HOST_NODES; i++) {
    if (h->mine[i] == TL_HOST_FREE)
      continue;
    uint32_t st = TL_HOST_FREE;
    uint64_t token = 0;
    int died = 0;
    int c = tl__node_read(h, &h->t->nodes[i], &st, &token, &died);
    if (c < 0) {
      again = 1;
      continue;
    }
    if (c == 0) {
      /* Taken away by a repair: the request is lost as if stolen. */
      tl__mine_set(h, i, TL_HOST_FREE);
      atomic_fetch_sub(&h->owned, 1);
      visit(data, i, TL_HOST_STOLEN, 0, 0);
      continue;
    }
    if (st == h->mine[i]) {
      /* Still waiting, and rung to take the name a release left free:
       * the event loop claims it (tl_host_claim). A blocking waiter
       * claims its own. */
      uint32_t f = atomic_load(&h->t->nodes[i].flags);
      if (st == TL_HOST_WAITING && (f & TL_NODE_OFFER) && !(f & TL_HOST_SYNC))
        visit(data, i, TL_HOST_OFFERED, 0, 0);
      continue;
    }
    tl__mine_set(h, i, st);
    visit(data, i, (int)st, token, died);
  }
  /* The steal's other word, read here so that a doorbell costs one call:
   * the event loop asks for the watchers only when it moved. */
  if (atomic_load(&h->owned) != 0 &&
      atomic_load(&h->t->slots[h->slot].rewatch) !=
          atomic_load(&h->rewatch_seen))
    visit(data, 0, TL_HOST_REWATCH, 0, 0);
  tl__hp_mutex_unlock(h->local);
  /* A node that kept changing is read again by the poll this ring
   * brings. */
  if (again)
    tl__doorbell_ring(h, h->slot);
  tl__prune(h);
  return 0;
}

int
tl_host_claim(tl_host_t *h, int age, tl_host_poll_cb visit, void *data,
              int64_t crit_ms)
{
  int r;

  if ((r = tl__crit_lock(h, crit_ms)) != 0)
    return r;
  for (uint32_t i = 0; i < TL_HOST_NODES; i++) {
    if (h->mine[i] != TL_HOST_WAITING)
      continue;
    tl_node_t *n = &h->t->nodes[i];
    if (n->slot == h->slot && !(atomic_load(&n->flags) & TL_HOST_SYNC))
      tl__claim_node(h, n, age);
  }
  tl__crit_unlock(h);
  /* What the claims granted, as a poll tells it (the section is free
   * again, and `local` with it). */
  return tl_host_poll(h, visit, data, crit_ms < 0 ? -1 : crit_ms);
}

int
tl_host_query(tl_host_t *h, tl_host_query_cb visit, void *data, int64_t crit_ms)
{
  int bad = 0, r;

  if ((r = tl__crit_lock(h, crit_ms)) != 0)
    return r;
  tl__sweep(h);
  for (uint32_t i = 0; i < TL_HOST_NAMES; i++) {
    tl_name_t *e = &h->t->names[i];
    if (e->state != NAME_USED)
      continue;
    if (e->len > TL_HOST_NAME_MAX) {
      bad = 1;
      break;
    }
    uint32_t cur = e->head;
    for (uint32_t steps = 0; cur != 0 && !bad; steps++) {
      tl_node_t *n = tl__node_at(h, cur, &bad);
      if (bad || steps > TL_HOST_NODES || n->slot >= TL_HOST_SLOTS) {
        bad = 1;
        break;
      }
      tl_slot_t *s = &h->t->slots[n->slot];
      visit(data, e->name, e->len, (n->flags & TL_HOST_EXCLUSIVE) != 0,
            atomic_load(&n->state) == TL_HOST_HELD, s->client, s->pid);
      cur = n->next;
    }
  }
  tl__crit_unlock(h);
  return bad ? TL_HOST_ECORRUPT : 0;
}

int
tl_host_rewatch(tl_host_t *h, int64_t crit_ms)
{
  tl_slot_t *me = &h->t->slots[h->slot];
  uint8_t ahead[TL_HOST_SLOTS];
  int r;

  if (atomic_load(&h->stopping) || atomic_load(&h->owned) == 0 ||
      tl__table_ok(h) != 0)
    return 0;
  uint32_t rw = atomic_load(&me->rewatch);
  if (rw == h->rewatch_seen)
    return 0;
  if ((r = tl__crit_lock(h, crit_ms)) != 0)
    return r;
  h->rewatch_seen = rw;
  tl__ahead(h, ahead);
  tl__crit_unlock(h);
  tl__watch(h, ahead);
  return 0;
}

int
tl_host_stats(tl_host_t *h, uint32_t *slot, uint32_t *nodes, uint32_t *slots,
              uint32_t *names, uint64_t *walked)
{
  *slot = h->slot;
  *nodes = *slots = *names = 0;
  if (tl__crit_lock(h, -1) != 0)
    return TL_HOST_ECORRUPT;
  for (uint32_t i = 0; i < TL_HOST_NODES; i++)
    *nodes += atomic_load(&h->t->nodes[i].state) != TL_HOST_FREE;
  for (uint32_t i = 0; i < TL_HOST_SLOTS; i++)
    *slots += h->t->slots[i].state != SLOT_FREE;
  for (uint32_t i = 0; i < TL_HOST_NAMES; i++)
    *names += h->t->names[i].state == NAME_USED;
  *walked = h->walked;
  tl__crit_unlock(h);
  return 0;
}
