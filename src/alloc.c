/* The allocation functions of alloc.h and, with TL_FAULT_INJECTION, the
 * injected failures: as in SQLite's fault simulation, a test arms a count,
 * the allocation that brings it to zero fails, and the test loops over
 * every count until a run makes fewer allocations than that.
 */
#include "alloc.h"

#include <stdatomic.h>
#include <stdlib.h>

#ifdef TL_FAULT_INJECTION
static atomic_uint_fast64_t tl__fault_countdown; /* 0: not armed */
static atomic_int tl__fault_did_fire;
static atomic_int_fast64_t tl__alloc_count;
static void (*tl__fault_on_fail)(void *data); /* set before arming */
static void *tl__fault_data;

void
tl_fault_arm(uint64_t n, void (*on_fail)(void *data), void *data)
{
  atomic_store(&tl__fault_countdown, 0);
  tl__fault_on_fail = on_fail;
  tl__fault_data = data;
  atomic_store(&tl__fault_did_fire, 0);
  atomic_store(&tl__fault_countdown, n);
}

int
tl_fault_fired(void)
{
  return atomic_load(&tl__fault_did_fire);
}

int64_t
tl_alloc_live(void)
{
  return atomic_load(&tl__alloc_count);
}

/* Whether this allocation is the one that must fail. Only one caller can
 * take the count from 1 to 0, so exactly one allocation fails per arming. */
static int
tl__fault_now(void)
{
  uint_fast64_t n = atomic_load(&tl__fault_countdown);

  while (n != 0) {
    if (atomic_compare_exchange_weak(&tl__fault_countdown, &n, n - 1)) {
      if (n != 1)
        return 0;
      if (tl__fault_on_fail != NULL)
        tl__fault_on_fail(tl__fault_data);
      atomic_store(&tl__fault_did_fire, 1);
      return 1;
    }
  }
  return 0;
}

#define TL__FAULT_CHECK()                                                      \
  do {                                                                         \
    if (tl__fault_now())                                                       \
      return NULL;                                                             \
  } while (0)
#define TL__COUNT(p, delta)                                                    \
  do {                                                                         \
    if ((p) != NULL)                                                           \
      atomic_fetch_add(&tl__alloc_count, (delta));                             \
  } while (0)
#else
#define TL__FAULT_CHECK()                                                      \
  do {                                                                         \
  } while (0)
#define TL__COUNT(p, delta)                                                    \
  do {                                                                         \
    (void)(p);                                                                 \
  } while (0)
#endif

void *
tl__malloc(size_t size)
{
  void *p;

  TL__FAULT_CHECK();
  p = malloc(size);
  TL__COUNT(p, 1);
  return p;
}

void *
tl__calloc(size_t count, size_t size)
{
  void *p;

  TL__FAULT_CHECK();
  p = calloc(count, size);
  TL__COUNT(p, 1);
  return p;
}

void *
tl__realloc(void *ptr, size_t size)
{
  void *p;

  TL__FAULT_CHECK();
  p = realloc(ptr, size);
  if (ptr == NULL)
    TL__COUNT(p, 1);
  return p;
}

void
tl__free(void *ptr)
{
  TL__COUNT(ptr, -1);
  free(ptr);
}
