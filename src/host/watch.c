/* threadlock/host, Liveness watchers: a thread per process ahead of this
 * attachment's waiting requests, blocked on that process's liveness byte,
 * which recovers it the moment it dies; started before a request is linked,
 * ended once nothing waits.
 */

#include "table.h"

/* A watcher blocks on a slot's liveness byte: the kernel grants its read
 * lock when the owner's write lock goes, that is, when the owner detaches
 * or dies. No timer and no polling: the death is noticed at once. A
 * watcher no longer needed is cancelled in that wait. */
static void *
tl__watcher(void *data)
{
  tl_watch_t *w = data;
  tl_host_t *h = w->h;
  uint32_t s = w->slot;

  int r = tl__hp_lock_wait_cancellable(h->fd, TL_LIVE + s, 0, &w->ended);
  if (r == 0) {
    tl__hp_unlock(h->fd, TL_LIVE + s);
    if (!atomic_load(&h->stopping) && tl__crit_lock(h, -1) == 0) {
      /* A new process may have claimed the slot in between: it is then
       * alive and has recovered the old owner's state itself. */
      if (h->t->slots[s].state != SLOT_FREE && !tl__alive(h, s))
        tl__recover(h, s);
      tl__crit_unlock(h);
    }
  }
  atomic_store(&w->ended, 1);
  return NULL;
}

/* Joins and frees the watchers that ended. `lock` held. */
static void
tl__reap(tl_host_t *h)
{
  for (tl_watch_t **p = &h->retired; *p != NULL;) {
    tl_watch_t *w = *p;
    if (!atomic_load(&w->ended)) {
      p = &w->next;
      continue;
    }
    *p = w->next;
    tl__hp_thread_join(w->thread);
    free(w);
    atomic_fetch_sub(&h->watchers, 1);
  }
  for (uint32_t s = 0; s < TL_HOST_SLOTS; s++) {
    tl_watch_t *w = h->watch[s];
    if (w != NULL && atomic_load(&w->ended)) {
      tl__hp_thread_join(w->thread);
      free(w);
      atomic_fetch_sub(&h->watchers, 1);
      h->watch[s] = NULL;
    }
  }
}

/* Cancels the watcher of slot `s` (it ends at once if it still waits)
 * and retires it, to be joined once it ended. `lock` held. */
static void
tl__retire(tl_host_t *h, uint32_t s)
{
  tl_watch_t *w = h->watch[s];
  if (w == NULL)
    return;
  if (!w->cancelled) {
    w->cancelled = 1;
    tl__hp_thread_cancel(w->thread);
  }
  h->watch[s] = NULL;
  w->next = h->retired;
  h->retired = w;
}

/* Marks the slots with requests ahead of this attachment's waiting ones
 * (holders and earlier waiters): the processes whose death it must notice.
 * Grants are in order, so the set only shrinks, except when a steal puts a
 * process ahead, which rings `rewatch`. Runs in crit. */
void
tl__ahead(tl_host_t *h, uint8_t ahead[TL_HOST_SLOTS])
{
  memset(ahead, 0, TL_HOST_SLOTS);
  for (uint32_t i = 0; i < TL_HOST_NODES; i++) {
    tl_node_t *n = &h->t->nodes[i];
    if (n->slot != h->slot || atomic_load(&n->state) != TL_HOST_WAITING ||
        n->name >= TL_HOST_NAMES)
      continue;
    int bad = 0;
    uint32_t cur = h->t->names[n->name].head;
    for (uint32_t steps = 0; cur != 0 && cur != i + 1; steps++) {
      h->walked++;
      tl_node_t *c = tl__node_at(h, cur, &bad);
      if (bad || steps > TL_HOST_NODES)
        break;
      if (c->slot < TL_HOST_SLOTS && c->slot != h->slot)
        ahead[c->slot] = 1;
      cur = c->next;
    }
  }
}

/* Starts a watcher for every slot marked in `ahead` that has none.
 * Returns 0, or TL_HOST_ETHREAD when one could not start (the ones that
 * did stay: they are needed by the requests already waiting, or are
 * cancelled by the next tl__prune). */
int
tl__watch(tl_host_t *h, const uint8_t ahead[TL_HOST_SLOTS])
{
  int r = 0;

  tl__hp_mutex_lock(h->lock);
  tl__reap(h);
  for (uint32_t s = 0; s < TL_HOST_SLOTS && r == 0; s++) {
    if (s == h->slot || !ahead[s] || atomic_load(&h->stopping))
      continue;
    if (h->watch[s] != NULL && !h->watch[s]->cancelled)
      continue;
    tl__retire(h, s);
    tl_watch_t *w = calloc(1, sizeof(*w));
    if (w == NULL) {
      r = TL_HOST_ETHREAD;
      break;
    }
    w->h = h;
    w->slot = s;
    w->thread = tl__hp_thread_start(tl__watcher, w, "tl-host-watch");
    if (w->thread == NULL) {
      free(w);
      r = TL_HOST_ETHREAD;
      break;
    }
    h->watch[s] = w;
    atomic_fetch_add(&h->watchers, 1);
    atomic_store(&h->busy_ms, tl__hp_monotonic_ms());
  }
  tl__hp_mutex_unlock(h->lock);
  return r;
}

/* Whether this attachment has a request waiting (mine[] records it). */
static int
tl__waiting_any(tl_host_t *h)
{
  return atomic_load(&h->waiting) != 0;
}

/* Notes, after a call that may have ended a wait (a poll, a release, a
 * blocking wait), whether the attachment still waits: its watchers are
 * ended by tl_host_prune once it has waited for nothing for a while, not
 * at once, so that a process that takes a contended lock in a loop does
 * not start and end threads on every turn. Costs one atomic load when
 * there is no watcher. */
void
tl__prune(tl_host_t *h)
{
  if (atomic_load(&h->watchers) != 0 && tl__waiting_any(h))
    atomic_store(&h->busy_ms, tl__hp_monotonic_ms());
}

int
tl_host_prune(tl_host_t *h)
{
  if (atomic_load(&h->watchers) == 0)
    return 0;
  if (tl__waiting_any(h) ||
      tl__hp_monotonic_ms() - atomic_load(&h->busy_ms) < TL_PRUNE_IDLE_MS) {
    tl__hp_mutex_lock(h->lock);
    tl__reap(h);
    tl__hp_mutex_unlock(h->lock);
    return atomic_load(&h->watchers) != 0;
  }
  tl__hp_mutex_lock(h->lock);
  for (uint32_t s = 0; s < TL_HOST_SLOTS; s++)
    tl__retire(h, s);
  tl__reap(h);
  tl__hp_mutex_unlock(h->lock);
  return atomic_load(&h->watchers) != 0;
}

/* The slots that may have requests in `e`'s list, all ahead of a request
 * about to be put at its tail (the list's watch set). Runs in crit. */
void
tl__ahead_of(tl_host_t *h, tl_name_t *e, uint8_t ahead[TL_HOST_SLOTS])
{
  for (uint32_t s = 0; s < TL_HOST_SLOTS; s++)
    ahead[s] =
        s != h->slot && e->head != 0 && (e->seen[s / 64] >> (s % 64) & 1) != 0;
}

/* Cancels and joins the watcher threads; none starts after it. */
void
tl_host_stop_watchers(tl_host_t *h)
{
  atomic_store(&h->stopping, 1);
  tl__hp_mutex_lock(h->lock);
  for (uint32_t s = 0; s < TL_HOST_SLOTS; s++)
    tl__retire(h, s);
  while (h->retired != NULL) {
    tl_watch_t *w = h->retired;
    h->retired = w->next;
    tl__hp_thread_join(w->thread);
    free(w);
    atomic_fetch_sub(&h->watchers, 1);
  }
  tl__hp_mutex_unlock(h->lock);
}
