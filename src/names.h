/* Named locks shared by every thread of the process, with the semantics of
 * the Web Locks API: per name, a FIFO queue of requests and a set of held
 * locks, modes 'exclusive' and 'shared', ifAvailable and steal.
 *
 * Plain C and libuv only. Requests and held locks are nodes owned by the
 * caller; the module links them into its table under one process-wide
 * mutex and reports grants and steals through a callback.
 */
#ifndef TL_NAMES_H_
#define TL_NAMES_H_

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "queue.h"

/* The phases of a request, shared with JavaScript (binding.constants) in
 * the form of waiters.h: XX(name, value) is TL_<name> in C. */
#define TL_NAMED_MAP(XX)                                                       \
  XX(NAMED_QUEUED, 1)      /* waiting in its name's queue */                   \
  XX(NAMED_HELD, 2)        /* granted and not yet released */                  \
  XX(NAMED_RELEASED, 3)    /* released by its holder */                        \
  XX(NAMED_STOLEN, 4)      /* taken away by a steal request */                 \
  XX(NAMED_CANCELLED, 5)   /* withdrawn before a grant */                      \
  XX(NAMED_UNAVAILABLE, 6) /* ifAvailable and not grantable: not linked */

#define TL__NAMED_ENUM_ENTRY(name, value) TL_##name = (value),
enum { TL_NAMED_MAP(TL__NAMED_ENUM_ENTRY) };

enum { TL_NAMED_EVENT_GRANTED = 1, TL_NAMED_EVENT_STOLEN = 2 };

/* tl_named_request ran out of memory (the value of TL_ENOMEM). */
#define TL_NAMED_ENOMEM (-ENOMEM)

typedef struct tl_named_s tl_named_t;
typedef struct tl_record_s tl_record_t;

/* Called with the table's lock held, on whatever thread caused the event:
 * a grant of a queued request, or the steal of a held lock. The callback
 * must not call back into this module. */
typedef void (*tl_named_cb)(tl_named_t *r, int event);

struct tl_named_s {
  tl_queue_t node;      /* queue or held list; protected by the table lock */
  tl_record_t *rec;     /* protected by the table lock */
  int phase;            /* TL_NAMED_*; protected by the table lock */
  uint32_t client;      /* the requesting thread's id; immutable */
  uint8_t exclusive;    /* immutable */
  tl_named_cb on_event; /* immutable */
};

/* Starts a request for `name` (UTF-16 code units). Returns the new phase:
 * HELD when granted at once, QUEUED, or UNAVAILABLE (if_available only);
 * or TL_NAMED_ENOMEM, with nothing changed, when memory ran out.
 * With `steal`, every lock held under the name is marked STOLEN (reported
 * through its callback) and the request is granted at once. */
int tl_named_request(tl_named_t *r, const uint16_t *name, size_t len,
                     int exclusive, int if_available, int steal,
                     uint32_t client, tl_named_cb on_event);

/* Releases a held lock, or withdraws a queued request; then grants what the
 * queue allows. Returns the phase the node had (HELD, QUEUED, STOLEN...);
 * afterwards the module no longer refers to it. */
int tl_named_release(tl_named_t *r);

/* Withdraws a request that is still queued; returns 1 if it was, 0 if it
 * was granted (or ended) first. */
int tl_named_cancel(tl_named_t *r);

/* Visits every held lock and then every queued request, oldest first per
 * name, under the table lock. */
typedef void (*tl_named_visit_cb)(void *data, const uint16_t *name, size_t len,
                                  int exclusive, uint32_t client, int held);
void tl_named_query(tl_named_visit_cb visit, void *data);

/* Names with any request or held lock; for tests. */
size_t tl_named_count(void);

#endif /* TL_NAMES_H_ */
