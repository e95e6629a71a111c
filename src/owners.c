/* The registry of live lock owners: answers "is this thread alive?".
 *
 * Every env registers its thread id while it lives. What a dead thread
 * held is the gates' business (tl_thread_unregister in gates.c forgets the
 * id here, then recovers its locks).
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
tl__thread_forget(uint32_t id)
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
}
