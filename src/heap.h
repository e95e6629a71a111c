/* A binary min-heap of deadlines, one per env, that tells the env's single
 * timer when to fire next. Nodes are embedded in their owners and know
 * their own position, so that removing any node is O(log n).
 *
 * Not thread-safe: every heap lives on its env's thread.
 */
#ifndef TL_HEAP_H_
#define TL_HEAP_H_

#include <stdint.h>

#define TL_HEAP_NONE UINT32_MAX

typedef struct tl_heap_node_s {
  uint64_t deadline; /* tl_now_ns time; UINT64_MAX when there is none */
  uint32_t index;    /* position in the heap; TL_HEAP_NONE when not in it */
} tl_heap_node_t;

typedef struct tl_heap_s {
  tl_heap_node_t **items;
  uint32_t len;
  uint32_t cap;
} tl_heap_t;

/* Marks `n` as in no heap, with no deadline. */
void tl_heap_node_init(tl_heap_node_t *n);

/* Makes room for `extra` more nodes; returns 0, or TL_ENOMEM with the heap
 * unchanged. A push into reserved room cannot fail. */
int tl_heap_reserve(tl_heap_t *h, uint32_t extra);

/* Adds `n`; returns 0, or TL_ENOMEM with the heap unchanged. */
int tl_heap_push(tl_heap_t *h, tl_heap_node_t *n);

/* Removes `n` if it is in the heap; otherwise does nothing. */
void tl_heap_remove(tl_heap_t *h, tl_heap_node_t *n);

/* The node with the earliest deadline, or NULL when the heap is empty. */
tl_heap_node_t *tl_heap_min(const tl_heap_t *h);

/* Frees the heap's array; the nodes are their owners' business. */
void tl_heap_free(tl_heap_t *h);

#endif /* TL_HEAP_H_ */
