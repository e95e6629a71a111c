/* Named locks: one record per name in use, each with its FIFO queue of
 * requests and its list of held locks, all under one mutex. Named locks
 * are taken far less often than the address-keyed gates, so one lock for
 * the table keeps the rules simple; records are freed as soon as a name has
 * neither requests nor holders.
 */
#include "names.h"

#include <string.h>

#include "alloc.h"
#include "platform.h"

#define TL_NAMES_BUCKETS 256

struct tl_record_s {
  tl_record_t *next_rec; /* hash chain; protected by tl__names_lock */
  tl_queue_t queue;      /* FIFO of requests; protected by the lock */
  tl_queue_t held;       /* held locks, oldest first; protected by the lock */
  size_t len;            /* immutable */
  uint16_t name[];       /* immutable */
};

static tl_mutex_t tl__names_lock;
static tl_once_t tl__names_once = TL_ONCE_INIT;
static tl_record_t *tl__names[TL_NAMES_BUCKETS]; /* protected by the lock */
static size_t tl__names_count;                   /* protected by the lock */

static void
tl__names_init(void)
{
  tl_mutex_init(&tl__names_lock);
}

static size_t
tl__names_hash(const uint16_t *name, size_t len)
{
  uint64_t h = UINT64_C(1469598103934665603);
  for (size_t i = 0; i < len; i++) {
    h ^= name[i];
    h *= UINT64_C(1099511628211);
  }
  return (size_t)(h % TL_NAMES_BUCKETS);
}

/* Finds or creates the record of `name`. Expects the lock; NULL only when
 * memory runs out. */
static tl_record_t *
tl__record(const uint16_t *name, size_t len, int create)
{
  size_t h = tl__names_hash(name, len);
  tl_record_t *rec;

  for (rec = tl__names[h]; rec != NULL; rec = rec->next_rec)
    if (rec->len == len && memcmp(rec->name, name, len * 2) == 0)
      return rec;
  if (!create)
    return NULL;
  rec = tl__calloc(1, sizeof(*rec) + len * sizeof(uint16_t));
  if (rec == NULL)
    return NULL;
  tl_queue_init(&rec->queue);
  tl_queue_init(&rec->held);
  rec->len = len;
  memcpy(rec->name, name, len * sizeof(uint16_t));
  rec->next_rec = tl__names[h];
  tl__names[h] = rec;
  tl__names_count++;
  return rec;
}

/* Frees `rec` once nothing refers to it. Expects the lock. */
static void
tl__record_gc(tl_record_t *rec)
{
  tl_record_t **p;

  if (!tl_queue_empty(&rec->queue) || !tl_queue_empty(&rec->held))
    return;
  for (p = &tl__names[tl__names_hash(rec->name, rec->len)]; *p != rec;
       p = &(*p)->next_rec)
    ;
  *p = rec->next_rec;
  tl__names_count--;
  tl__free(rec);
}

/* Web Locks "is grantable" for the head of the queue (or a request that
 * would be first): exclusive needs no holder, shared needs no exclusive
 * holder. Expects the lock. */
static int
tl__grantable(tl_record_t *rec, int exclusive)
{
  tl_queue_t *q;

  if (tl_queue_empty(&rec->held))
    return 1;
  if (exclusive)
    return 0;
  tl_queue_foreach (q, &rec->held) {
    if (tl_queue_data(q, tl_named_t, node)->exclusive)
      return 0;
  }
  return 1;
}

static void
tl__hold(tl_record_t *rec, tl_named_t *r)
{
  r->rec = rec;
  r->phase = TL_NAMED_HELD;
  tl_queue_insert_tail(&rec->held, &r->node);
}

/* Web Locks "process the lock request queue": grants from the head for as
 * long as the head is grantable. Expects the lock. */
static void
tl__process(tl_record_t *rec)
{
  while (!tl_queue_empty(&rec->queue)) {
    tl_named_t *r = tl_queue_data(tl_queue_head(&rec->queue), tl_named_t, node);

    if (!tl__grantable(rec, r->exclusive))
      return;
    tl_queue_remove(&r->node);
    tl__hold(rec, r);
    r->on_event(r, TL_NAMED_EVENT_GRANTED);
  }
}

int
tl_named_request(tl_named_t *r, const uint16_t *name, size_t len, int exclusive,
                 int if_available, int steal, uint32_t client,
                 tl_named_cb on_event)
{
  tl_record_t *rec;
  int phase;

  tl_queue_init(&r->node);
  r->rec = NULL;
  r->client = client;
  r->exclusive = (uint8_t)(exclusive != 0);
  r->on_event = on_event;
  tl_once(&tl__names_once, tl__names_init);
  tl_mutex_lock(&tl__names_lock);
  rec = tl__record(name, len, 1);
  if (rec == NULL) {
    tl_mutex_unlock(&tl__names_lock);
    return TL_NAMED_ENOMEM;
  }
  if (steal) {
    /* Steal: every holder loses its lock at once; the request goes first. */
    while (!tl_queue_empty(&rec->held)) {
      tl_named_t *h =
          tl_queue_data(tl_queue_head(&rec->held), tl_named_t, node);
      tl_queue_remove(&h->node);
      h->rec = NULL;
      h->phase = TL_NAMED_STOLEN;
      h->on_event(h, TL_NAMED_EVENT_STOLEN);
    }
    tl__hold(rec, r);
  } else if (tl_queue_empty(&rec->queue) && tl__grantable(rec, exclusive)) {
    tl__hold(rec, r);
  } else if (if_available) {
    r->phase = TL_NAMED_UNAVAILABLE;
    tl__record_gc(rec);
  } else {
    r->rec = rec;
    r->phase = TL_NAMED_QUEUED;
    tl_queue_insert_tail(&rec->queue, &r->node);
  }
  phase = r->phase;
  tl_mutex_unlock(&tl__names_lock);
  return phase;
}

int
tl_named_release(tl_named_t *r)
{
  tl_record_t *rec;
  int phase;

  tl_once(&tl__names_once, tl__names_init);
  tl_mutex_lock(&tl__names_lock);
  phase = r->phase;
  rec = r->rec;
  /* The node is on its record's queue or held list, or on none. */
  tl_queue_remove(&r->node);
  if (phase == TL_NAMED_HELD)
    r->phase = TL_NAMED_RELEASED;
  else if (phase == TL_NAMED_QUEUED)
    r->phase = TL_NAMED_CANCELLED;
  r->rec = NULL;
  if (rec != NULL) {
    tl__process(rec);
    tl__record_gc(rec);
  }
  tl_mutex_unlock(&tl__names_lock);
  return phase;
}

int
tl_named_cancel(tl_named_t *r)
{
  tl_record_t *rec;
  int removed = 0;

  tl_once(&tl__names_once, tl__names_init);
  tl_mutex_lock(&tl__names_lock);
  rec = r->rec;
  if (r->phase == TL_NAMED_QUEUED) {
    tl_queue_remove(&r->node);
    r->phase = TL_NAMED_CANCELLED;
    r->rec = NULL;
    tl__process(rec);
    tl__record_gc(rec);
    removed = 1;
  }
  tl_mutex_unlock(&tl__names_lock);
  return removed;
}

void
tl_named_query(tl_named_visit_cb visit, void *data)
{
  tl_once(&tl__names_once, tl__names_init);
  tl_mutex_lock(&tl__names_lock);
  for (int held = 1; held >= 0; held--) {
    for (size_t i = 0; i < TL_NAMES_BUCKETS; i++) {
      for (tl_record_t *rec = tl__names[i]; rec != NULL; rec = rec->next_rec) {
        tl_queue_t *q;
        tl_queue_foreach (q, held ? &rec->held : &rec->queue) {
          tl_named_t *r = tl_queue_data(q, tl_named_t, node);
          visit(data, rec->name, rec->len, r->exclusive, r->client, held);
        }
      }
    }
  }
  tl_mutex_unlock(&tl__names_lock);
}

size_t
tl_named_count(void)
{
  size_t n;

  tl_once(&tl__names_once, tl__names_init);
  tl_mutex_lock(&tl__names_lock);
  n = tl__names_count;
  tl_mutex_unlock(&tl__names_lock);
  return n;
}
