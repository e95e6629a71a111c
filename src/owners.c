/* The registry of live lock owners.
 *
 * Every env registers its thread id while it lives. A lock whose owner is no
 * longer registered is taken over by its next acquirer, and unregistering
 * hands the locks a dying thread still holds to their first waiters (gates.c
 * decides the grants).
 */
#include "waiters.h"

#include "alloc.h"
#include "platform.h"
#include "tl_internal.h"

/* Live lock owners; protected by tl__registry_lock. Threads come and go
 * rarely and a process has few of them, so a plain array is enough. */
static tl_mutex_t tl__registry_lock;
static uint32_t *tl__registry;
static size_t tl__registry_len;
static size_t tl__registry_cap;
static tl_once_t tl__registry_once = TL_ONCE_INIT;

static void
tl__registry_init(void)
{
  tl_mutex_init(&tl__registry_lock);
}

int
tl_thread_alive(uint32_t id)
{
  int alive = 0;

  tl_once(&tl__registry_once, tl__registry_init);
  tl_mutex_lock(&tl__registry_lock);
  for (size_t i = 0; i < tl__registry_len; i++) {
    if (tl__registry[i] == id) {
      alive = 1;
      break;
    }
  }
  tl_mutex_unlock(&tl__registry_lock);
  return alive;
}

int
tl_thread_register(uint32_t id)
{
  tl_once(&tl__registry_once, tl__registry_init);
  tl_mutex_lock(&tl__registry_lock);
  if (tl__registry_len == tl__registry_cap) {
    size_t cap = tl__registry_cap ? tl__registry_cap * 2 : 16;
    uint32_t *grown = tl__realloc(tl__registry, cap * sizeof(*grown));
    if (grown == NULL) {
      tl_mutex_unlock(&tl__registry_lock);
      return TL_ENOMEM;
    }
    tl__registry = grown;
    tl__registry_cap = cap;
  }
  tl__registry[tl__registry_len++] = id;
  tl_mutex_unlock(&tl__registry_lock);
  return 0;
}

void
tl_thread_unregister(uint32_t id)
{
  tl_once(&tl__registry_once, tl__registry_init);
  tl_mutex_lock(&tl__registry_lock);
  for (size_t i = 0; i < tl__registry_len; i++) {
    if (tl__registry[i] == id) {
      tl__registry[i] = tl__registry[--tl__registry_len];
      break;
    }
  }
  tl_mutex_unlock(&tl__registry_lock);

  /* Any lock or write lock this id still holds with waiters goes to its
   * first waiter now; one without waiters is taken over by its next
   * acquirer. A waiter that enqueues after its bucket was scanned finds the
   * owner unregistered. */
  for (size_t i = 0; i < TL_BUCKET_COUNT; i++) {
    tl_bucket_t *b = tl__bucket_at(i);
    tl_waiter_t *w, *next;

    tl_mutex_lock(&b->lock);
    for (w = b->head; w != NULL; w = next) {
      _Atomic int32_t *word = (_Atomic int32_t *)w->addr;
      int32_t v = atomic_load(word);

      next = w->next;
      if (w->gate == TL_GATE_LOCK) {
        if ((uint32_t)(v & TL_LOCK_ID_MASK) != id)
          continue;
        /* `w` is the first lock waiter on its word: an earlier one would
         * have been granted already in this pass. */
        tl__unlink(b, w);
        tl__grant(b, w, 1);
      } else if (w->gate == TL_GATE_READ || w->gate == TL_GATE_WRITE) {
        if (!(v & TL_RW_WRITER) || (uint32_t)(v & TL_RW_MASK) != id)
          continue;
        atomic_store(word, v & (TL_GATE_WAITERS | TL_LOCK_WOKEN));
        tl__rw_pass(b, w->addr, 1);
      } else {
        continue;
      }
      next = b->head; /* grants may have unlinked more than `w` */
    }
    tl_mutex_unlock(&b->lock);
  }
}
