/* The shared waiter list: wait / notify keyed by memory address, plus the
 * lock operations that must run under the same per-address lock.
 *
 * Plain C and libuv only (no node_api.h) so that test/c/ can drive it from
 * ordinary threads under the sanitizers.
 */
#ifndef TL_WAITERS_H_
#define TL_WAITERS_H_

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The constants that JavaScript shares with the core are each written once,
 * in these tables, and exported from there (binding.constants). Each entry
 * is XX(name, value): the C name is TL_<name>, the JavaScript name <name>.
 */

/* Outcomes of a wait or acquire (nonnegative). */
#define TL_RESULT_MAP(XX)                                                      \
  XX(RESULT_OK, 0)          /* woken by a notify */                            \
  XX(RESULT_NOT_EQUAL, 1)   /* the value did not match; nothing enqueued */    \
  XX(RESULT_TIMED_OUT, 2)   /* the deadline passed first */                    \
  XX(RESULT_INTERRUPTED, 3) /* the probe asked the waiter to give up */        \
  XX(RESULT_PENDING, 4)     /* an async waiter is now enqueued */              \
  XX(RESULT_ACQUIRED, 5)    /* the lock is now held by the caller */           \
  XX(RESULT_OWNER_DIED, 6)  /* as ACQUIRED, taken over from a dead owner */

/* Errors (negative), named after their <errno.h> counterparts. */
#define TL_ERRNO_MAP(XX)                                                       \
  XX(EDEADLK, -EDEADLK)     /* the caller owns the lock or is queued for it */ \
  XX(ENOTOWNER, -EPERM)     /* release by a thread that is not the owner */    \
  XX(EINVAL, -EINVAL)       /* a bad gate, id or amount */                     \
  XX(EOVERFLOW, -EOVERFLOW) /* a release beyond TL_SEM_MASK permits */         \
  XX(ENOMEM, -ENOMEM)       /* an allocation failed; nothing changed */

/* What a gate waiter waits to take. */
#define TL_GATE_MAP(XX)                                                        \
  XX(GATE_NONE, 0)  /* a plain wait, woken by tl_notify */                     \
  XX(GATE_LOCK, 1)  /* the lock, for lock_id */                                \
  XX(GATE_SEM, 2)   /* `amount` permits */                                     \
  XX(GATE_READ, 3)  /* a read lock */                                          \
  XX(GATE_WRITE, 4) /* the write lock, for lock_id */

/* Gate word layouts.
 *
 * Lock word: 0 is free; otherwise the low 29 bits hold the owner's id (a
 * thread id plus one, never 0), LOCK_OWNER_DIED says that the current owner
 * took the lock over from a thread that died holding it. LOCK_WAITERS and
 * LOCK_WOKEN belong to the lock policy, drawn at the top of lock.c:
 * LOCK_WAITERS says that requests are queued in the core for the word,
 * LOCK_WOKEN that the oldest of them was woken to compete and has not tried
 * yet. Any of the three bits makes the owner's compare-exchange release
 * fail, so that such a release goes through the core.
 *
 * Every gate word (lock, semaphore, read-write lock) uses bit 30 as its
 * waiters bit (GATE_WAITERS): while it is set only the core frees the word.
 * A semaphore word holds the permits available in the low 29 bits
 * (SEM_MASK); SEM_RESERVED says that the permits are kept for the request
 * at the head of the queue, which has starved, so nobody else may take
 * them; SEM_WOKEN (bit 31) that the head was woken to compete and has not
 * tried yet (the semaphore's policy, drawn at the top of sem.c). A
 * release with GATE_WAITERS or SEM_WOKEN set goes through the core, and
 * an acquire takes permits outside it only while SEM_RESERVED is clear.
 * A read-write lock word holds, with RW_WRITER set, the
 * writer's id in the low 28 bits (RW_MASK), otherwise the number of readers
 * there; RW_OWNER_DIED says that a thread died holding it (read or write)
 * and is cleared by the next writer's release; bit 31 is the lock policy's
 * woken bit for writers.
 *
 * As the `amount` of a TL_GATE_LOCK or TL_GATE_WRITE request or release,
 * LOCK_BARGE selects the default policy (all users of a word must agree);
 * without it every release with waiters hands the lock to the oldest
 * (strict FIFO). LOCK_HANDOFF on a release says that the holder's slice is
 * over. LOCK_KEEP on a release asks to keep the lock for the holder's own
 * next request: the core answers RESULT_ACQUIRED (kept) unless the policy
 * must hand the lock over now, which it then does (0).
 *
 * The holder's shortcut (lib/LockWord.js; the interleaving checker follows
 * the same constants): a release within the holder's slice, while the
 * waiter the next release would serve is known not to starve yet, frees
 * the word with one compare-exchange, and a release that would keep the
 * lock for the holder's own next request keeps it without the core, only
 * when the word masked with LOCK_SHORTCUT_MASK (a lock word) or
 * WRITE_SHORTCUT_MASK (a write lock) is SHORTCUT_IF: waiters queued, one of
 * them woken and on its way, no owner-died news (lock.c, I7). */
#define TL_WORD_MAP(XX)                                                        \
  XX(LOCK_WAITERS, 0x40000000)                                                 \
  XX(LOCK_OWNER_DIED, 0x20000000)                                              \
  XX(LOCK_ID_MASK, 0x1fffffff)                                                 \
  XX(LOCK_WOKEN, INT32_MIN)                                                    \
  XX(GATE_WAITERS, 0x40000000)                                                 \
  XX(SEM_MASK, 0x1fffffff)                                                     \
  XX(SEM_RESERVED, 0x20000000)                                                 \
  XX(SEM_WOKEN, INT32_MIN)                                                     \
  XX(RW_WRITER, 0x20000000)                                                    \
  XX(RW_OWNER_DIED, 0x10000000)                                                \
  XX(RW_MASK, 0x0fffffff)                                                      \
  XX(LOCK_BARGE, 1)                                                            \
  XX(LOCK_HANDOFF, 2)                                                          \
  XX(LOCK_KEEP, 4)                                                             \
  XX(LOCK_SHORTCUT_MASK, INT32_MIN | 0x40000000 | 0x20000000)                  \
  XX(WRITE_SHORTCUT_MASK, INT32_MIN | 0x40000000 | 0x10000000)                 \
  XX(SHORTCUT_IF, INT32_MIN | 0x40000000)

/* The lock policy's settings, each written once here, exported to
 * JavaScript (binding.constants, POLICY_*) and quoted by the README.
 * POLICY_SLICE_GRANTS and POLICY_SLICE_NS bound a holder's slice: the
 * grants a thread may take in a row while others wait (its own queued
 * requests and its re-acquisitions alike), whichever ends first; long
 * enough that a hot loop runs at uncontended speed for a while, short
 * enough that the others take turns many times a millisecond.
 * POLICY_STARVING_NS: a waiter that has waited this long is handed the
 * lock at the next release, whoever releases and how; it bounds every
 * wait to the current holder's critical section plus this.
 * POLICY_COURTESY_NS: how long a woken waiter watches a free word, with no
 * lock held, before it competes: an owner on an event loop leaves gaps of
 * a few hundred nanoseconds between two of its grants, and taking the word
 * in such a gap would cut its slice short for nothing.
 * POLICY_PRESENT_NS: how long an event-loop request that came and found
 * the word taken (present, lock.c) watches for the hand-off that the next
 * release owes it before its thread goes back to its loop: a hand-off
 * that lands in the watch costs no wake-up, one after it costs one wake of
 * that loop (tens of microseconds), during which the lock is held by a
 * thread that does not run. Shorter than such a wake, so a watch in vain
 * costs less than the wake it tries to spare. */
#define TL_POLICY_MAP(XX)                                                      \
  XX(POLICY_SLICE_GRANTS, 2048)                                                \
  XX(POLICY_SLICE_NS, 300000)                                                  \
  XX(POLICY_STARVING_NS, 1000000)                                              \
  XX(POLICY_COURTESY_NS, 2000)                                                 \
  XX(POLICY_PRESENT_NS, 20000)

#define TL__ENUM_ENTRY(name, value) TL_##name = (value),
enum { TL_RESULT_MAP(TL__ENUM_ENTRY) };
enum { TL_ERRNO_MAP(TL__ENUM_ENTRY) };
enum { TL_GATE_MAP(TL__ENUM_ENTRY) };
enum { TL_WORD_MAP(TL__ENUM_ENTRY) };
enum { TL_POLICY_MAP(TL__ENUM_ENTRY) };

/* A waiter's state, changed only under its bucket lock. WAITING: queued,
 * asleep. WOKEN: still queued in its place, but woken to compete for a
 * gate (see lock.c); its thread is on its way to try. NOTIFIED: done, by a
 * notify or a grant. TIMED_OUT, CANCELLED: left without either. */
typedef enum tl_state {
  TL_WAITING = 0,
  TL_NOTIFIED = 1,
  TL_TIMED_OUT = 2,
  TL_CANCELLED = 3,
  TL_WOKEN = 4
} tl_state_t;

typedef struct tl_waiter_s tl_waiter_t;

/* Called by the notifying thread, with the bucket lock held, right after an
 * async waiter left the list as NOTIFIED. From then on the waiter belongs to
 * whoever the callback hands it to; the core never touches it again. */
typedef void (*tl_settle_cb)(tl_waiter_t *w);

/* Asked between bounded slices of a sync wait, without any lock held.
 * Returns nonzero when the waiting thread must stop waiting. */
typedef struct tl_probe_s {
  int (*fn)(void *data);
  void *data;
  uint64_t slice_ns;
} tl_probe_t;

struct tl_waiter_s {
  tl_waiter_t *next;  /* protected by the bucket lock */
  tl_waiter_t *prev;  /* protected by the bucket lock */
  uintptr_t addr;     /* set before enqueue; immutable while linked */
  uint32_t lock_id;   /* gate waiters: the requesting thread's id */
  uint32_t amount;    /* semaphores: permits; locks: TL_LOCK_BARGE */
  uint8_t gate;       /* TL_GATE_*; immutable while linked */
  _Atomic int state;  /* tl_state_t; written only under the bucket lock */
  uint8_t owner_died; /* lock waiters: set under the lock with NOTIFIED */
  uint8_t granted;    /* gate waiters: NOTIFIED with the gate handed over */
  uint64_t since;     /* gate waiters: when the request first queued */
  const struct tl_hooks_s *hooks; /* gate waiters: set by the gate before
                                     enqueue; immutable while linked */
  uint8_t parked;      /* sync waiters: protected by the bucket lock */
  uint8_t is_async;    /* immutable */
  tl_settle_cb settle; /* async waiters: immutable */
  /* Lock and write waiters (lock.c). `on_loop`: the request's thread takes
   * up a grant only when its event loop runs (a promise request), which
   * may be hundreds of milliseconds away; 0 for a parked thread, which
   * takes it up in microseconds. Set at init (async: 1, sync: 0); the
   * interleaving checker sets it to model both kinds; immutable while
   * linked. `present`: an on_loop request whose thread came to try
   * (tl_gate_retry_async), found the word taken and sleeps again: the next
   * hand-off may serve it. Cleared when it is woken again. Protected by
   * the bucket lock. */
  uint8_t on_loop;
  uint8_t present;
  /* Async gate waiters: its own thread is inside tl_gate_retry_async and
   * watches the state (the present watch, lock.c), so a grant or a wake
   * that comes meanwhile is taken up there when the watch ends; the
   * settle callback, which runs as for any grant or wake, leaves it to
   * the watch. Protected by the bucket lock. */
  uint8_t watching;
};

/* Prepares an async waiter owned by the caller (any thread). */
void tl_waiter_init_async(tl_waiter_t *w, tl_settle_cb settle);

/* Blocks the calling thread while the `width`-byte (4 or 8) integer at
 * `addr` equals `expected`, until a notify, the timeout (milliseconds,
 * +Infinity for none) or the probe ends it. */
int tl_wait(void *addr, int width, int64_t expected, double timeout_ms,
            const tl_probe_t *probe);

/* Enqueues `w` if the integer at `addr` equals `expected` (PENDING) or
 * returns NOT_EQUAL; with `zero_timeout` a match returns TIMED_OUT instead
 * of enqueuing. A pending waiter ends through notify (settle callback) or
 * through tl_cancel by its owner. */
int tl_wait_async(tl_waiter_t *w, void *addr, int width, int64_t expected,
                  int zero_timeout);

/* Removes `w` from the list, setting `why` (TIMED_OUT or CANCELLED), if it
 * is still there. Returns TL_CANCEL_WAITING if it was asleep,
 * TL_CANCEL_WOKEN if it was a gate request woken to compete (an async one
 * is then on its way to its settle callback's queue already), and 0 if a
 * notify or grant came first. */
enum { TL_CANCEL_WAITING = 1, TL_CANCEL_WOKEN = 2 };
int tl_cancel(tl_waiter_t *w, tl_state_t why);

/* Wakes up to `count` plain waiters on `addr` in FIFO order (`count` < 0
 * wakes all) and returns how many it woke. */
int64_t tl_notify(void *addr, int64_t count);

/* How many waiters (of either kind) are enqueued on `addr`; and in all. */
size_t tl_waiter_count(void *addr);
size_t tl_waiter_total(void);

/* Lock operations on an Int32 lock word; `id` is the caller's id (nonzero,
 * at most TL_LOCK_ID_MASK). The uncontended paths (compare-exchange 0 -> id
 * and id -> 0) may run outside the core; everything else runs here under
 * the word's bucket lock. */
int tl_lock_acquire(int32_t *word, uint32_t id, double timeout_ms,
                    const tl_probe_t *probe);
int tl_lock_acquire_async(tl_waiter_t *w, int32_t *word, uint32_t id);
int tl_lock_release(int32_t *word, uint32_t id);

/* The same for every gate kind: `gate` is a TL_GATE_* other than NONE,
 * `amount` the permits of a semaphore request (0 otherwise). Release
 * returns 0, TL_ENOTOWNER or TL_EOVERFLOW. Queued requests are granted or
 * woken in the order they queued; the policies (lock.c, sem.c) say when a
 * running thread may take the gate before them. */
int tl_gate_acquire(int32_t *word, int gate, uint32_t id, uint32_t amount,
                    double timeout_ms, const tl_probe_t *probe);
int tl_gate_acquire_async(tl_waiter_t *w, int32_t *word, int gate, uint32_t id,
                          uint32_t amount);
int tl_gate_release(int32_t *word, int gate, uint32_t id, uint32_t amount);

/* tl_gate_release for a lock or write gate that also tells, in *left_ns,
 * how long until the oldest request still queued on the word has waited
 * TL_POLICY_STARVING_NS (0 if it has; -1 if none is queued). The oldest
 * request only gets younger as requests leave, so until then no release
 * that finds a woken request on its way must hand the lock over, and the
 * holder may free the word with a compare-exchange (lib/LockWord.js). */
int tl_lock_release_ex(int32_t *word, int gate, uint32_t id, uint32_t flags,
                       int64_t *left_ns);

/* tl_gate_acquire_async for a request that already waited `waited_ns` in
 * its thread's queue: it takes its place in the core's queue by its first
 * arrival (before waiters that came later, never before a woken one). */
int tl_gate_acquire_async_at(tl_waiter_t *w, int32_t *word, int gate,
                             uint32_t id, uint32_t amount, uint64_t waited_ns);

/* tl_gate_release for a semaphore that also tells, in *left_ns, how long
 * until the oldest request still queued on the word has waited
 * TL_POLICY_STARVING_NS (0 if it has; TL_POLICY_STARVING_NS if none is
 * queued, since a later request starves later). Until then a release that
 * finds SEM_WOKEN set and SEM_RESERVED clear may add its permits with a
 * compare-exchange (sem.c, the woken shortcut; lib/Semaphore.js). */
int tl_sem_release_ex(int32_t *word, uint32_t amount, int64_t *left_ns);

/* For an async gate waiter that its settle callback reported while it was
 * still WOKEN: competes for the word now (see lock.c, sem.c). Returns ACQUIRED
 * or OWNER_DIED (it took the lock, or a release handed it over meanwhile), or
 * PENDING: it sleeps again in its place in the queue. Runs on the thread
 * that owns `w`, after the lock policy's courtesy wait (a semaphore request
 * has none). */
int tl_gate_retry_async(tl_waiter_t *w);

/* tl_gate_retry_async in its three steps, for test/c/interleave.c, which
 * runs other threads' steps between them: the try under the bucket lock
 * (returns 1 with *r PENDING when the request became present and its
 * thread may watch; 0 with the final *r otherwise), the watch with no lock
 * held (tl__present_watch), and the end of the watch under the lock, which
 * takes up what came meanwhile (returns the final result). */
int tl__retry_begin(tl_waiter_t *w, int *r);
void tl__present_watch(const tl_waiter_t *w);
int tl__retry_end(tl_waiter_t *w);

/* For a gate waiter whose thread goes away (or whose request could not be
 * booked) after a notify reached it: releases a grant (permits, a read or
 * write lock, the lock), or withdraws a woken request and passes the wake
 * on. No-op for a request that is still asleep or already gone. */
void tl_gate_abandon(tl_waiter_t *w);

/* Whether thread `id` has a request queued (asleep or woken) for the gate
 * word at `word`: a blocking request of that thread could never be
 * granted then (EDEADLK). */
int tl_gate_queued(int32_t *word, uint32_t id);

/* The registry of live lock owners (owners.c). Registering returns 0 or
 * TL_ENOMEM. Unregistering (gates.c) forgets the id and recovers what it
 * still holds: each lock and write lock passes to its first waiter marked
 * as taken from a dead owner, and read locks counted for it by
 * tl_read_held are given back. */
int tl_thread_register(uint32_t id);
void tl_thread_unregister(uint32_t id);
int tl_thread_alive(uint32_t id);

/* Sets how many pause iterations a sync waiter spins before it sleeps. */
void tl_set_spin(unsigned iterations);

#ifndef NDEBUG
/* Asserts the table's invariants; for tests. */
void tl_check_table(void);
#endif

#endif /* TL_WAITERS_H_ */
