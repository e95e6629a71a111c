/* The private interface between the parts of the core: the parking table
 * (table.c), the gate policies (gates.c) and the owner registry (owners.c).
 * Nothing outside src/ includes it; the public interface is waiters.h.
 *
 * Lock order. A thread that holds a bucket lock may take the owner registry
 * lock (a gate asks whether an owner is alive) and an env's ready lock (a
 * settle callback queues a woken async waiter); the names lock may be held
 * while taking an env's ready lock. Never the other way round, and never
 * two bucket locks at once. No code calls into V8 while it holds a bucket
 * lock: the settle callback only queues, and the termination probe of a
 * sync wait runs with the bucket lock released.
 */
#ifndef TL_INTERNAL_H_
#define TL_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include "platform.h"
#include "waiters.h"

#define TL_BUCKET_BITS 10
#define TL_BUCKET_COUNT (1u << TL_BUCKET_BITS)

typedef struct tl_bucket_s {
  _Alignas(64) tl_mutex_t lock;
  tl_waiter_t *head; /* protected by lock */
  tl_waiter_t *tail; /* protected by lock */
  size_t count;      /* protected by lock */
} tl_bucket_t;

/* A sync waiter lives on the stack of the thread that waits. */
typedef struct tl_sync_waiter_s {
  tl_waiter_t base;
  tl_cond_t cond; /* signalled under the bucket lock when parked */
} tl_sync_waiter_t;

/* table.c: the bucket of an address, and bucket `i` of the table (for
 * passes over every bucket). Both initialize the table on first use. */
tl_bucket_t *tl__bucket(uintptr_t addr);
tl_bucket_t *tl__bucket_at(size_t i);

/* table.c: the bucket FIFO. All of these expect b->lock. */
void tl__enqueue(tl_bucket_t *b, tl_waiter_t *w);
void tl__enqueue_front(tl_bucket_t *b, tl_waiter_t *w);
void tl__unlink(tl_bucket_t *b, tl_waiter_t *w);
tl_waiter_t *tl__next_gate_waiter(tl_waiter_t *from, uintptr_t addr);
void tl__finish(tl_waiter_t *w, tl_state_t state);
void tl__remove(tl_bucket_t *b, tl_waiter_t *w);

/* table.c: sync waiters. */
void tl__init_sync(tl_sync_waiter_t *sw, uintptr_t addr, int gate, uint32_t id,
                   uint32_t amount);
int tl__block(tl_bucket_t *b, tl_sync_waiter_t *sw, uint64_t deadline,
              const tl_probe_t *probe, int done_result);

/* gates.c: the policy hooks the table and the registry call, each with
 * b->lock held; and what lock.c shares with the other gates. */
int tl__queued(tl_bucket_t *b, tl_waiter_t *w);
int tl__gate_enqueue(tl_bucket_t *b, tl_waiter_t *w, int32_t *v);

/* lock.c: the barging policy of locks and of writers, each with b->lock
 * held. */
int tl__lock_try_enqueue(tl_bucket_t *b, tl_waiter_t *w, int allow_self);
void tl__lock_abandon_wake(tl_bucket_t *b, tl_waiter_t *w);
int tl__barge_yield(tl_bucket_t *b, tl_waiter_t *w);
int tl__barge_release_locked(tl_bucket_t *b, _Atomic int32_t *word, int32_t v,
                             int gate, uint32_t amount);
void tl__grant(tl_bucket_t *b, tl_waiter_t *w, int owner_died);
void tl__rw_pass(tl_bucket_t *b, uintptr_t addr, int owner_died);
void tl__gate_after_leave(tl_bucket_t *b, tl_waiter_t *w);
void tl__abandon(tl_bucket_t *b, tl_waiter_t *w);

#endif /* TL_INTERNAL_H_ */
