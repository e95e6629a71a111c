/* The private interface between the parts of the core. Nothing outside src/
 * includes it; the public interface is waiters.h.
 *
 * The core is a stack; each layer calls only the layers below it:
 *
 *   gates.c        the public gate API: acquire, release, retry, abandon,
 *                  owner death; dispatches to the gate kinds
 *   lock.c         the lock policy, one state machine for lock words and
 *                  RWLock writers (drawn at the top of the file)
 *   rwlock.c       readers: grants, per-thread read holds, recovery
 *   sem.c          the semaphore's policy (the lock policy for permits,
 *                  drawn at the top of the file)
 *   gate_queue.c   gate waiters in a bucket: enqueue, first, wake, grant
 *   table.c        the parking table: buckets, FIFO, park, notify, cancel;
 *                  it knows no gate, only the hooks a waiter carries
 *   owners.c       the registry of live threads: "is this id alive?"
 *
 * Lock order. A thread that holds a bucket lock may take the owner registry
 * lock (a gate asks whether an owner is alive) and an env's ready lock (a
 * settle callback queues a woken async waiter); the names lock may be held
 * while taking an env's ready lock. Never the other way round, and never
 * two bucket locks at once. No code calls into V8 while it holds a bucket
 * lock, and nothing spins while holding one: the settle callback only
 * queues, the termination probe of a sync wait runs with the bucket lock
 * released, and the lock policy's courtesy wait happens before the lock is
 * taken.
 */
#ifndef TL_INTERNAL_H_
#define TL_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include "platform.h"
#include "waiters.h"

#define TL_BUCKET_BITS 10
#define TL_BUCKET_COUNT (1u << TL_BUCKET_BITS)

typedef struct tl_read_hold_s tl_read_hold_t;

typedef struct tl_bucket_s {
  _Alignas(64) tl_mutex_t lock;
  tl_waiter_t *head;     /* protected by lock */
  tl_waiter_t *tail;     /* protected by lock */
  size_t count;          /* protected by lock */
  tl_read_hold_t *reads; /* rwlock.c's read holds; protected by lock */
} tl_bucket_t;

/* What a gate decides for its waiters while the table holds their bucket
 * lock (parking_lot's callbacks): the table calls these and knows nothing
 * else of gates. */
typedef struct tl_hooks_s {
  /* `w` was unlinked because it leaves without a grant (timeout, cancel,
   * a stopped thread); its state is still WAITING or WOKEN. */
  void (*left)(tl_bucket_t *b, tl_waiter_t *w);
  /* `w` was granted (NOTIFIED) but its thread will never use the grant. */
  void (*abandon)(tl_bucket_t *b, tl_waiter_t *w);
} tl_hooks_t;

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
void tl__enqueue_before(tl_bucket_t *b, tl_waiter_t *w, tl_waiter_t *at);
void tl__unlink(tl_bucket_t *b, tl_waiter_t *w);
void tl__finish(tl_waiter_t *w, tl_state_t state);
void tl__remove(tl_bucket_t *b, tl_waiter_t *w);

/* table.c: sync waiters. tl__block returns TL_RESULT_OK once the waiter
 * is no longer WAITING (woken or notified), or TIMED_OUT / INTERRUPTED
 * after it left the list. With `spin` it first spins briefly (tl__spin)
 * before it parks. */
void tl__init_sync(tl_sync_waiter_t *sw, uintptr_t addr, int gate, uint32_t id,
                   uint32_t amount);
int tl__block(tl_bucket_t *b, tl_sync_waiter_t *sw, uint64_t deadline,
              const tl_probe_t *probe, int spin);

/* gate_queue.c: gate waiters in a bucket. All expect b->lock. */
tl_waiter_t *tl__first_gate_waiter(tl_bucket_t *b, uintptr_t addr);
tl_waiter_t *tl__next_gate_waiter(tl_waiter_t *after);
int tl__queued(tl_bucket_t *b, uintptr_t addr, uint32_t id);
int tl__gate_enqueue(tl_bucket_t *b, tl_waiter_t *w, int32_t *v);
void tl__gate_grant(tl_bucket_t *b, tl_waiter_t *w, int owner_died);
void tl__gate_wake(tl_waiter_t *w);
void tl__gate_waiters_bit(tl_bucket_t *b, uintptr_t addr);

/* lock.c: the lock policy for lock words and RWLock writers. */
/* A release flag of the core only (JavaScript cannot pass it): the holder
 * never used its hold, which came with OWNER_DIED, so the next holder must
 * be told in its place (lock.c, I6). */
#define TL__LOCK_UNUSED_DIED 0x100
int tl__lock_try(tl_bucket_t *b, tl_waiter_t *w, int allow_self);
int tl__lock_resume(tl_bucket_t *b, tl_waiter_t *w);
int tl__lock_release(tl_bucket_t *b, _Atomic int32_t *word, int gate,
                     uint32_t id, uint32_t flags);
void tl__lock_left(tl_bucket_t *b, tl_waiter_t *w);
void tl__lock_owner_died(tl_bucket_t *b, uintptr_t addr, int gate);
void tl__courtesy_wait(const tl_waiter_t *w);
tl_waiter_t *tl__lock_target(tl_bucket_t *b, uintptr_t addr, int fifo,
                             uint32_t self);

/* rwlock.c: readers, and the grants of a read-write lock's queue. */
int tl__read_try(tl_bucket_t *b, tl_waiter_t *w, int allow_self);
int tl__read_release(tl_bucket_t *b, _Atomic int32_t *word, uint32_t id);
void tl__rw_pass(tl_bucket_t *b, uintptr_t addr, int owner_died);
int tl__read_count(tl_bucket_t *b, uintptr_t addr, uint32_t id, int delta);
void tl__reads_recover(tl_bucket_t *b, uint32_t id);
void tl__rw_left(tl_bucket_t *b, tl_waiter_t *w);

/* sem.c: the semaphore. */
int tl__sem_try(tl_bucket_t *b, tl_waiter_t *w);
int tl__sem_resume(tl_bucket_t *b, tl_waiter_t *w);
int tl__sem_release(tl_bucket_t *b, _Atomic int32_t *word, uint32_t amount);
void tl__sem_left(tl_bucket_t *b, tl_waiter_t *w);

/* owners.c: forgets a registered id (tl_thread_unregister recovers its
 * locks first). */
void tl__thread_forget(uint32_t id);

#endif /* TL_INTERNAL_H_ */
