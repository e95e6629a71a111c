/* The deadline heap of heap.h: an array-backed binary min-heap. */
#include "heap.h"

#include <stddef.h>

#include "alloc.h"
#include "waiters.h"

void
tl_heap_node_init(tl_heap_node_t *n)
{
  n->deadline = UINT64_MAX;
  n->index = TL_HEAP_NONE;
}

static int
tl__heap_less(const tl_heap_t *h, uint32_t a, uint32_t b)
{
  return h->items[a]->deadline < h->items[b]->deadline;
}

static void
tl__heap_swap(tl_heap_t *h, uint32_t a, uint32_t b)
{
  tl_heap_node_t *t = h->items[a];

  h->items[a] = h->items[b];
  h->items[b] = t;
  h->items[a]->index = a;
  h->items[b]->index = b;
}

/* Restores the heap order around position `i`, up or down. */
static void
tl__heap_fix(tl_heap_t *h, uint32_t i)
{
  while (i > 0 && tl__heap_less(h, i, (i - 1) / 2)) {
    tl__heap_swap(h, i, (i - 1) / 2);
    i = (i - 1) / 2;
  }
  for (;;) {
    uint32_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->len && tl__heap_less(h, l, m))
      m = l;
    if (r < h->len && tl__heap_less(h, r, m))
      m = r;
    if (m == i)
      break;
    tl__heap_swap(h, i, m);
    i = m;
  }
}

int
tl_heap_reserve(tl_heap_t *h, uint32_t extra)
{
  uint32_t cap = h->cap ? h->cap : 64;
  tl_heap_node_t **grown;

  if (h->len + extra <= h->cap)
    return 0;
  while (cap < h->len + extra)
    cap *= 2;
  grown = tl__realloc(h->items, cap * sizeof(*grown));
  if (grown == NULL)
    return TL_ENOMEM;
  h->items = grown;
  h->cap = cap;
  return 0;
}

int
tl_heap_push(tl_heap_t *h, tl_heap_node_t *n)
{
  if (tl_heap_reserve(h, 1) != 0)
    return TL_ENOMEM;
  n->index = h->len;
  h->items[h->len++] = n;
  tl__heap_fix(h, n->index);
  return 0;
}

void
tl_heap_remove(tl_heap_t *h, tl_heap_node_t *n)
{
  uint32_t i = n->index;

  if (i == TL_HEAP_NONE)
    return;
  n->index = TL_HEAP_NONE;
  h->len--;
  if (i != h->len) {
    h->items[i] = h->items[h->len];
    h->items[i]->index = i;
    tl__heap_fix(h, i);
  }
}

tl_heap_node_t *
tl_heap_min(const tl_heap_t *h)
{
  return h->len > 0 ? h->items[0] : NULL;
}

void
tl_heap_free(tl_heap_t *h)
{
  tl__free(h->items);
  h->items = NULL;
  h->len = h->cap = 0;
}
