/* An intrusive, circular, doubly linked list, after libuv's queue.h.
 *
 * A list head and a list node are the same type. A node that is on no list
 * points at itself, so removing a node twice is harmless and "is it on a
 * list" is a question the node answers itself: !tl_queue_empty(node). Every
 * node must therefore be initialized with tl_queue_init before its first
 * use. The list does no locking; every user says which lock protects it.
 */
#ifndef TL_QUEUE_H_
#define TL_QUEUE_H_

#include <stddef.h>

typedef struct tl_queue_s {
  struct tl_queue_s *next;
  struct tl_queue_s *prev;
} tl_queue_t;

/* The structure of type `type` whose member `field` is the node `ptr`. */
#define tl_queue_data(ptr, type, field)                                        \
  ((type *)((char *)(ptr)-offsetof(type, field)))

/* Visits every node of the list `h`; the body must not remove `q`. */
#define tl_queue_foreach(q, h)                                                 \
  for ((q) = (h)->next; (q) != (h); (q) = (q)->next)

static inline void
tl_queue_init(tl_queue_t *q)
{
  q->next = q;
  q->prev = q;
}

/* For a head: whether the list is empty; for a node: whether it is on no
 * list. */
static inline int
tl_queue_empty(const tl_queue_t *q)
{
  return q == q->next;
}

/* The first node of a non-empty list. */
static inline tl_queue_t *
tl_queue_head(const tl_queue_t *h)
{
  return h->next;
}

static inline void
tl_queue_insert_tail(tl_queue_t *h, tl_queue_t *q)
{
  q->next = h;
  q->prev = h->prev;
  q->prev->next = q;
  h->prev = q;
}

static inline void
tl_queue_insert_head(tl_queue_t *h, tl_queue_t *q)
{
  q->next = h->next;
  q->prev = h;
  q->next->prev = q;
  h->next = q;
}

/* Takes `q` off its list and leaves it pointing at itself; a no-op for a
 * node that is on no list. */
static inline void
tl_queue_remove(tl_queue_t *q)
{
  q->prev->next = q->next;
  q->next->prev = q->prev;
  tl_queue_init(q);
}

/* Moves every node of `h` to the empty list `n`, leaving `h` empty. */
static inline void
tl_queue_move(tl_queue_t *h, tl_queue_t *n)
{
  if (tl_queue_empty(h)) {
    tl_queue_init(n);
    return;
  }
  n->next = h->next;
  n->prev = h->prev;
  n->next->prev = n;
  n->prev->next = n;
  tl_queue_init(h);
}

#endif /* TL_QUEUE_H_ */
