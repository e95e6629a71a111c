/* wait and notify across processes on shared memory (shm.h): the waiter
 * list lives in the file, in the pages after the header page, and holds
 * no process-local pointer: a waiter is a node naming the word by its
 * offset in the data, its owner id (shm_owners.c) and a ticket that orders
 * the waiters (FIFO). Every node's state word is also the futex its waiter
 * sleeps on: a shared futex of a file mapping, keyed by the kernel on
 * (file, offset), so a notify in any process wakes exactly the waiters it
 * counts, each on its own word (a futex on the waited word itself could
 * not tell how many it woke).
 *
 * The state word: seq << 2 | FREE, BUSY, WAITING or NOTIFIED. seq grows
 * each time the node is freed, so a compare-exchange on a state read
 * earlier fails once the node was freed and reused (no ABA).
 *
 *   FREE -> BUSY        a waiter takes the node (compare-exchange)
 *   BUSY -> WAITING     it has written offset, owner and ticket (release)
 *   WAITING -> NOTIFIED a notify counts it (compare-exchange), then wakes
 *   WAITING -> FREE'    the waiter withdraws (not-equal, timeout, stop);
 *                       fails when a notify was first: then it was woken
 *   NOTIFIED -> FREE'   the waiter leaves
 *   WAITING -> FREE'    a poke frees a lock waiter's node (an owner died):
 *                       the waiter finds its node neither WAITING nor
 *                       NOTIFIED of its seq, and looks at its word again
 *   BUSY/WAITING/NOTIFIED -> FREE'  anyone, when the owner id is dead
 *                       (kill -9): the node is reclaimed
 *
 * No lock is held by anyone, so a process stopped (SIGSTOP) or killed at
 * any step delays nobody: its nodes stay until its owner id is dead, then
 * the next waiter that needs a node or notify that meets one frees it.
 *
 * The value check. The spec compares the value and enqueues atomically
 * under the waiter list's critical section. Here the waiter reads the
 * value once before taking a node (not equal: returns at once) and once
 * after publishing it (WAITING, then a full fence, then the read): a store
 * and notify that come before the publication find no node and count
 * nothing, and the second read sees the store (not-equal); a store before
 * the second read and a notify after the publication count the waiter and
 * wake it ("ok"), which linearises the wait at its first read, made while
 * the value was still the expected one.
 *
 * Costs: a notify reads every node's state (TL_SHM_NODES words) and sorts
 * what it found; it probes the liveness of another process's waiter (two
 * fcntl calls) only for the waiters it is about to count.
 *
 * Kinds. A node's kind is written while BUSY, with the rest. A promise
 * waiter's node (TL_SHM_KIND_ASYNC) has no thread asleep on it: the notify
 * that moves it to NOTIFIED rings the doorbell of its owner's process
 * (a word of the header page per process slot, bumped and woken as a
 * shared futex), whose helper thread calls the waiter's event loop, which
 * finds the node NOTIFIED (tl_shm_async_done) and frees it. A doorbell is
 * bumped after the state changed, and the helper reads the doorbell before
 * it sleeps and calls the loop after, so no notify is missed (binding_shm.c
 * and binding_host.c). A lock waiter's node (TL_SHM_KIND_LOCK) is also
 * poked when an owner dies (tl_shm_poke): woken, or its doorbell rung,
 * without a change of state; the waiter withdraws and looks at the lock
 * word again (lib/ShmLock.js). A poke counts nothing, and a node that a
 * notify counted meanwhile is still counted: the withdrawal fails and the
 * waiter takes the notify as its result.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host.h"
#include "platform.h"
#include "shm.h"

enum {
  TL_NODE_FREE = 0,
  TL_NODE_BUSY = 1,
  TL_NODE_WAITING = 2,
  TL_NODE_NOTIFIED = 3
};

/* Results, as the core's TL_RESULT_* (waiters.h). */
enum { TL_R_OK = 0, TL_R_NOT_EQUAL = 1, TL_R_TIMED_OUT = 2, TL_R_STOPPED = 3 };

typedef struct {
  _Atomic uint32_t state;  /* seq << 2 | TL_NODE_* ; the waiter's futex */
  _Atomic uint32_t owner;  /* the waiter's owner id; written while BUSY */
  _Atomic uint64_t offset; /* of the word in the data; written while BUSY */
  _Atomic uint64_t ticket; /* FIFO order; written while BUSY */
  _Atomic uint32_t kind;   /* TL_SHM_KIND_* bits; written while BUSY */
  _Atomic uint32_t need;   /* kind RESERVE: the permits it waits for */
} tl_shm_node_t;

_Static_assert(sizeof(tl_shm_node_t) == 32, "nodes are 32 bytes");
_Static_assert(TL_SHM_NODES_AT + TL_SHM_NODES * sizeof(tl_shm_node_t) <=
                   TL_SHM_HEADER,
               "the nodes fit before the data");

#define TL_TICKET_AT 512 /* the header page's ticket counter */
#define TL_POKES_AT 528  /* the header page's poke counter (32 bits) */
/* The nodes' high-water mark (32 bits): no node at or above it has been
 * taken since the file was made. Nodes are taken lowest first, so it is
 * about the most waiters the file has had at once; the scans for waiting
 * nodes stop there. It never goes down. */
#define TL_HWM_AT 536

static tl_shm_node_t *
tl__nodes(char *base)
{
  return (tl_shm_node_t *)(base + TL_SHM_NODES_AT);
}

/* Where the scans for waiting or notified nodes stop: a node is counted
 * in the mark before it leaves FREE (tl__take), so a scan that reads the
 * mark after a node became WAITING sees it. A mark beyond the nodes (a
 * file written by hand) is the number of nodes. */
static uint32_t
tl__hwm(char *base)
{
  uint32_t h = atomic_load((_Atomic uint32_t *)(base + TL_HWM_AT));
  return h < TL_SHM_NODES ? h : TL_SHM_NODES;
}

/* Frees a node whose state is still `s` (the seq grows). */
static int
tl__free(tl_shm_node_t *n, uint32_t s)
{
  uint32_t next = ((s >> 2) + 1) << 2 | TL_NODE_FREE;
  return atomic_compare_exchange_strong(&n->state, &s, next);
}

static uint64_t
tl__load_word(const void *word, int width)
{
  if (width == 8)
    return (uint64_t)atomic_load((_Atomic int64_t *)word);
  return (uint64_t)(int64_t)atomic_load((_Atomic int32_t *)word);
}

/* Takes a free node, reclaiming those of dead owners on the way. */
static tl_shm_node_t *
tl__take(tl_shm_join_t *j, char *base, uint32_t *state)
{
  tl_shm_node_t *nodes = tl__nodes(base);

  for (int pass = 0; pass < 2; pass++) {
    for (uint32_t i = 0; i < TL_SHM_NODES; i++) {
      tl_shm_node_t *n = &nodes[i];
      uint32_t s = atomic_load(&n->state);
      if ((s & 3) == TL_NODE_FREE) {
        uint32_t busy = (s & ~3u) | TL_NODE_BUSY;
        if (atomic_compare_exchange_strong(&n->state, &s, busy)) {
          /* Counted in the mark before it is published (tl__hwm). */
          _Atomic uint32_t *hwm = (_Atomic uint32_t *)(base + TL_HWM_AT);
          uint32_t h = atomic_load(hwm);
          while (h < i + 1 && !atomic_compare_exchange_weak(hwm, &h, i + 1))
            ;
          *state = busy;
          return n;
        }
      } else if (pass == 1) {
        /* A node whose owner is dead is reclaimed. A BUSY node may still
         * name its previous owner for a few instructions of a live taker:
         * freeing it then only makes that taker's publication fail, and
         * it takes another node. */
        uint32_t owner = atomic_load(&n->owner);
        if (atomic_load(&n->state) == s && tl_shm_owner_alive(j, owner) == 0 &&
            tl__free(n, s))
          i--; /* take it on the next turn */
      }
    }
  }
  return NULL;
}

/* The word's value as a 64-bit pattern, for comparisons. */
static uint64_t
tl__want(int width, int64_t expected)
{
  if (width == 4)
    return (uint64_t)(int64_t)(int32_t)expected;
  return (uint64_t)expected;
}

/* Takes a node and publishes it WAITING for the word at `offset`, then
 * reads the word again (the second read of the value check). Returns
 * TL_SHM_PENDING with the node and its WAITING state, TL_R_NOT_EQUAL (the
 * node was withdrawn), TL_R_OK (notified already; the node is freed) or
 * TL_HOST_ENODES. */
static int tl__left(tl_shm_node_t *n, uint32_t waiting, int withdrawn_as,
                    const void *word);

/* The word a waiter of kind `kind` takes a hand-off of up (L8), or NULL. */
static const void *
tl__handoff_word(uint32_t kind, const void *word)
{
  return (kind & TL_SHM_KIND_HANDOFF) ? word : NULL;
}

static _Atomic uint32_t *
tl__pokes(char *base)
{
  return (_Atomic uint32_t *)(base + TL_POKES_AT);
}

uint32_t
tl_shm_pokes(tl_shm_join_t *j)
{
  if (tl_shm_header_ok(j) != 0)
    return 0;
  return atomic_load(tl__pokes(tl__shm_page(j)));
}

static int
tl__publish(tl_shm_join_t *j, char *base, const void *word, int width,
            uint64_t want, uint32_t owner, uint32_t kind, uint32_t pokes,
            uint64_t ticket, uint32_t need, tl_shm_node_t **out,
            uint32_t *out_waiting)
{
  uint64_t offset = (uint64_t)((const char *)word - base - TL_SHM_HEADER);
  tl_shm_node_t *n;
  uint32_t s, waiting;

  for (;;) {
    n = tl__take(j, base, &s);
    if (n == NULL)
      return TL_HOST_ENODES;
    atomic_store(&n->owner, owner);
    atomic_store(&n->offset, offset);
    atomic_store(&n->kind, kind);
    atomic_store(&n->need, need);
    /* A lock waiter keeps its request's ticket (its place) across its
     * sleeps (tl_shm_ticket); anyone else draws one. */
    atomic_store(
        &n->ticket,
        ticket != 0
            ? ticket
            : atomic_fetch_add((_Atomic uint64_t *)(base + TL_TICKET_AT), 1));
    waiting = (s & ~3u) | TL_NODE_WAITING;
    uint32_t busy = s;
    if (atomic_compare_exchange_strong(&n->state, &busy, waiting))
      break;
    /* Reclaimed meanwhile (it named a dead owner): take another. */
  }
  atomic_thread_fence(memory_order_seq_cst);
  if (kind & TL_SHM_KIND_RESERVE) {
    /* S5: the node is published before RESERVED is set, so a reservation
     * always has its node (tl_shm_sem_reserved). The compare-exchange is
     * the value check. */
    uint32_t v = (uint32_t)want;
    if ((v & TL_SHM_SEM_RESERVED) || (v & TL_SHM_SEM_MASK) >= need ||
        !atomic_compare_exchange_strong((_Atomic uint32_t *)word, &v,
                                        v | TL_SHM_SEM_WAITERS |
                                            TL_SHM_SEM_RESERVED))
      return tl__left(n, waiting, TL_R_NOT_EQUAL, NULL);
  } else if (tl__load_word(word, width) != want) {
    return tl__left(n, waiting, TL_R_NOT_EQUAL, tl__handoff_word(kind, word));
  }
  /* A lock waiter: a poke since it looked at the holder (its scan may
   * have come before the publication). */
  if ((kind & TL_SHM_KIND_LOCK) && atomic_load(tl__pokes(base)) != pokes)
    return tl__left(n, waiting, TL_SHM_POKED, tl__handoff_word(kind, word));
  *out = n;
  *out_waiting = waiting;
  return TL_SHM_PENDING;
}

/* An RWLock reader's take-up (shm_rw.c, tl_shm_read_take_up, which lies
 * above this file: given by the binding). */
static _Atomic(tl_shm_take_up_fn) tl__reader_take_up;

void
tl_shm_set_reader_take_up(tl_shm_take_up_fn fn)
{
  atomic_store(&tl__reader_take_up, fn);
}

/* L8: a hand-off waiter whose node was notified takes the lock word up if
 * it was handed it (HANDED | WAITERS | its id, from the release: H1),
 * before its node is freed, so that nobody takes the hand-off from it on
 * its way (L7 lets anyone take a hand-off whose grantee has no node). A
 * reader (kind READER) takes it up as a read lock, and frees the word. */
static int
tl__take_up(const void *word, uint32_t owner, uint32_t kind)
{
  uint32_t id = owner & TL_SHM_LOCK_ID;
  uint32_t v = TL_SHM_LOCK_HANDED | TL_SHM_LOCK_WAITERS | id;
  tl_shm_take_up_fn reader = atomic_load(&tl__reader_take_up);

  if ((kind & TL_SHM_KIND_READER) && reader != NULL)
    return reader(word, owner);
  return atomic_compare_exchange_strong((_Atomic uint32_t *)word, &v,
                                        TL_SHM_LOCK_WAITERS | id);
}

/* The end of a waiter whose node is `waiting` (or was): withdrawn (the
 * result `withdrawn_as`), notified (TL_R_OK; the node is freed now),
 * handed the lock word at `word` and taken it up (TL_SHM_ACCEPTED; `word`
 * NULL: a waiter that does not take hand-offs up) or freed by a poke
 * (TL_SHM_POKED). */
static int
tl__left(tl_shm_node_t *n, uint32_t waiting, int withdrawn_as, const void *word)
{
  uint32_t notified = (waiting & ~3u) | TL_NODE_NOTIFIED;

  if (tl__free(n, waiting))
    return withdrawn_as;
  /* Only a notify or a poke moves a live owner's node out of WAITING;
   * after a poke, the node may be anyone's already. A NOTIFIED node stays
   * so until its waiter frees it (its owner is alive: nobody reclaims
   * it). */
  if (word != NULL && atomic_load(&n->state) == notified &&
      tl__take_up(word, atomic_load(&n->owner), atomic_load(&n->kind))) {
    tl__free(n, notified);
    return TL_SHM_ACCEPTED;
  }
  if (tl__free(n, notified))
    return TL_R_OK;
  return TL_SHM_POKED;
}

/* The end of a reserving Semaphore request's sleep on its node `n`
 * (lib/ShmSemaphore.js, S6 and S7). `give_up` 0, its node notified (or
 * found so): it takes its permits if the word has them (need subtracted
 * and RESERVED cleared by one compare-exchange, then the node freed:
 * TL_SHM_ACCEPTED); while the word keeps RESERVED without enough permits
 * it sleeps again on the same node, whose state moves from NOTIFIED to
 * WAITING with the next seq, and reads the word once more after a fence
 * (a release after that read sees RESERVED and notifies the node:
 * TL_SHM_REARMED, `*waiting` the new state); a word that lost RESERVED
 * (cleared as an orphan: the request was taken for dead) frees the node
 * (TL_R_OK: compete again). `give_up` a result (timeout, stop, abort):
 * RESERVED is cleared while the node is still there (`word` NULL: not;
 * the others clear it as an orphan), then the node is freed, and the
 * result returned; the caller wakes the word's waiters (the permits kept
 * for the request are free now). Only the request frees or re-arms its
 * node (a RESERVE node is never poked; a dead owner's is reclaimed). */
static int
tl__reserve_end(tl_shm_node_t *n, uint32_t *waiting, const void *word,
                int give_up)
{
  _Atomic uint32_t *w = (_Atomic uint32_t *)word;
  uint32_t need = atomic_load(&n->need);
  uint32_t s = *waiting;

  if (give_up != 0) {
    if (w != NULL) {
      uint32_t v = atomic_load(w);
      while ((v & TL_SHM_SEM_RESERVED) &&
             !atomic_compare_exchange_weak(w, &v, v & ~TL_SHM_SEM_RESERVED))
        ;
    }
    if (!tl__free(n, s))
      tl__free(n, (s & ~3u) | TL_NODE_NOTIFIED);
    return give_up;
  }
  for (;;) {
    uint32_t notified = (s & ~3u) | TL_NODE_NOTIFIED;
    uint32_t v = atomic_load(w);
    if ((v & TL_SHM_SEM_MASK) >= need) {
      if (!atomic_compare_exchange_weak(w, &v,
                                        (v - need) & ~TL_SHM_SEM_RESERVED))
        continue;
      if (!tl__free(n, s))
        tl__free(n, notified);
      return TL_SHM_ACCEPTED;
    }
    if (!(v & TL_SHM_SEM_RESERVED)) {
      if (!tl__free(n, s))
        tl__free(n, notified);
      return TL_R_OK;
    }
    uint32_t st = atomic_load(&n->state);
    if (st == s) {
      *waiting = s;
      return TL_SHM_REARMED;
    }
    uint32_t again = (((s >> 2) + 1) << 2) | TL_NODE_WAITING;
    if (st != notified ||
        !atomic_compare_exchange_strong(&n->state, &st, again))
      return TL_R_OK; /* not its node any more (cannot happen while it lives) */
    s = again;
    atomic_thread_fence(memory_order_seq_cst);
  }
}

/* A reserving request that gives up (`as`: its timeout, its thread's
 * stop) with its node `waiting`: RESERVED cleared, the node freed, and
 * the word's waiters woken to take the permits kept for it. */
static int
tl__reserve_give_up(tl_shm_join_t *j, char *base, tl_shm_node_t *n,
                    uint32_t waiting, const void *word, int as)
{
  int r = tl__reserve_end(n, &waiting, word, as);
  if (atomic_load((_Atomic uint32_t *)word) & TL_SHM_SEM_WAITERS)
    (void)tl_shm_notify(j, base, word, -1);
  return r;
}

static int
tl__wait(tl_shm_join_t *j, char *base, const void *word, int width,
         int64_t expected, double timeout_ms, uint32_t owner,
         const tl_host_stop_t *stop, uint32_t kind, uint32_t pokes,
         uint64_t ticket, uint32_t need)
{
  tl_shm_node_t *n = NULL;
  uint64_t want = tl__want(width, expected);
  uint64_t deadline = UINT64_MAX;
  uint32_t waiting = 0;

  if (tl_shm_header_ok(j) != 0)
    return TL_HOST_ECORRUPT;
  if (tl__load_word(word, width) != want)
    return TL_R_NOT_EQUAL;
  if (timeout_ms == 0)
    return TL_R_TIMED_OUT;
  /* The clock is read in whole milliseconds (truncated): one more keeps
   * the deadline from being early by the fraction already gone. */
  if (timeout_ms < 1e15)
    deadline = tl__hp_monotonic_ms() + (uint64_t)timeout_ms + 1 +
               (timeout_ms > (double)(uint64_t)timeout_ms ? 1 : 0);
  int r = tl__publish(j, base, word, width, want, owner, kind, pokes, ticket,
                      need, &n, &waiting);
  if (r != TL_SHM_PENDING)
    return r;
  for (;;) {
    int64_t left = -1;
    uint64_t now = tl__hp_monotonic_ms();
    if (deadline != UINT64_MAX) {
      if (now >= deadline)
        break;
      left = (int64_t)(deadline - now);
    }
    if (stop != NULL && (left < 0 || left > stop->slice_ms))
      left = stop->slice_ms;
    tl__hp_wait((uint32_t *)&n->state, waiting, left);
    /* The file may have shrunk meanwhile: the node is not touched again
     * (its process's slot dies with the process, or frees it later). */
    if (tl_shm_header_ok(j) != 0)
      return TL_HOST_ECORRUPT;
    if (atomic_load(&n->state) != waiting) {
      if (!(kind & TL_SHM_KIND_RESERVE))
        break;
      r = tl__reserve_end(n, &waiting, word, 0);
      if (r != TL_SHM_REARMED)
        return r;
      continue;
    }
    if (stop != NULL && stop->fn(stop->data)) {
      if (kind & TL_SHM_KIND_RESERVE)
        return tl__reserve_give_up(j, base, n, waiting, word, TL_R_STOPPED);
      return tl__left(n, waiting, TL_R_STOPPED, NULL);
    }
  }
  if (kind & TL_SHM_KIND_RESERVE)
    return tl__reserve_give_up(j, base, n, waiting, word, TL_R_TIMED_OUT);
  return tl__left(n, waiting, TL_R_TIMED_OUT, tl__handoff_word(kind, word));
}

int
tl_shm_wait(tl_shm_join_t *j, char *base, const void *word, int width,
            int64_t expected, double timeout_ms, uint32_t owner,
            const tl_host_stop_t *stop)
{
  return tl__wait(j, base, word, width, expected, timeout_ms, owner, stop, 0, 0,
                  0, 0);
}

int
tl_shm_wait_lock(tl_shm_join_t *j, char *base, const void *word,
                 int64_t expected, double timeout_ms, uint32_t owner,
                 uint32_t pokes, uint64_t ticket, int reader,
                 const tl_host_stop_t *stop)
{
  uint32_t kind = TL_SHM_KIND_LOCK;

  if (ticket != 0)
    kind |= TL_SHM_KIND_HANDOFF | (reader ? TL_SHM_KIND_READER : 0);
  return tl__wait(j, base, word, 4, expected, timeout_ms, owner, stop, kind,
                  pokes, ticket, 0);
}

int
tl_shm_wait_reserve(tl_shm_join_t *j, char *base, const void *word,
                    int64_t expected, uint32_t need, double timeout_ms,
                    uint32_t owner, const tl_host_stop_t *stop)
{
  return tl__wait(j, base, word, 4, expected, timeout_ms, owner, stop,
                  TL_SHM_KIND_RESERVE, 0, 0, need);
}

int
tl_shm_wait_async(tl_shm_join_t *j, char *base, const void *word, int width,
                  int64_t expected, uint32_t owner, int kind, uint32_t pokes,
                  uint64_t ticket, uint32_t *index, uint32_t *waiting)
{
  uint64_t want = tl__want(width, expected);
  tl_shm_node_t *n = NULL;
  uint32_t need = 0;

  if (tl_shm_header_ok(j) != 0)
    return TL_HOST_ECORRUPT;
  if (tl__load_word(word, width) != want)
    return TL_R_NOT_EQUAL;
  if (kind & TL_SHM_KIND_RESERVE) {
    need = (uint32_t)ticket;
    ticket = 0;
  }
  int r = tl__publish(j, base, word, width, want, owner,
                      TL_SHM_KIND_ASYNC | (uint32_t)kind, pokes, ticket, need,
                      &n, waiting);
  if (r == TL_SHM_PENDING)
    *index = (uint32_t)(n - tl__nodes(base));
  return r;
}

/* The node `index` through the join's own mapping of the header, which
 * lives as long as the join (the data's mapping may be gone). */
static tl_shm_node_t *
tl__node_of(tl_shm_join_t *j, uint32_t index)
{
  return &tl__nodes(tl__shm_page(j))[index];
}

int
tl_shm_async_done(tl_shm_join_t *j, uint32_t index, uint32_t *waiting,
                  const void *word, int kind)
{
  if (index >= TL_SHM_NODES)
    return 0;
  if (tl_shm_header_ok(j) != 0)
    return TL_HOST_ECORRUPT;
  tl_shm_node_t *n = tl__node_of(j, index);
  if (atomic_load(&n->state) == *waiting)
    return 0;
  if (kind & TL_SHM_KIND_RESERVE) {
    int e = tl__reserve_end(n, waiting, word, 0);
    return e == TL_SHM_REARMED ? 0 : e == TL_SHM_ACCEPTED ? 3 : 1;
  }
  int r = tl__left(n, *waiting, TL_R_TIMED_OUT, word);
  return r == TL_R_OK ? 1 : r == TL_SHM_ACCEPTED ? 3 : 2;
}

int
tl_shm_async_cancel(tl_shm_join_t *j, uint32_t index, uint32_t waiting,
                    const void *word, int kind)
{
  if (index >= TL_SHM_NODES)
    return TL_R_TIMED_OUT;
  if (tl_shm_header_ok(j) != 0)
    return TL_HOST_ECORRUPT;
  if (kind & TL_SHM_KIND_RESERVE)
    return tl__reserve_end(tl__node_of(j, index), &waiting, word,
                           TL_R_TIMED_OUT);
  return tl__left(tl__node_of(j, index), waiting, TL_R_TIMED_OUT, word);
}

/* Rings the doorbell of the process in whose slot `owner` lives. */
static void
tl__ring_slot(char *base, uint32_t slot)
{
  if (slot >= TL_SHM_SLOTS)
    return;
  _Atomic uint32_t *bell = (_Atomic uint32_t *)(base + TL_SHM_BELL_AT) + slot;
  atomic_fetch_add(bell, 1);
  /* Every sleeper: as the host's doorbells (doorbell.c), a helper asleep
   * on several words may be queued here from an earlier sleep. */
  tl__hp_wake((uint32_t *)bell, 1 << 30);
}

uint32_t *
tl_shm_bell(tl_shm_join_t *j)
{
  return (uint32_t *)(tl__shm_page(j) + TL_SHM_BELL_AT) + tl_shm_join_slot(j);
}

int
tl_shm_bell_check(tl_shm_join_t *j, uint32_t *seen)
{
  if (tl_shm_header_ok(j) != 0)
    return -1;
  uint32_t v = atomic_load((_Atomic uint32_t *)tl_shm_bell(j));
  if (v == *seen)
    return 0;
  *seen = v;
  return 1;
}

/* A test hook (THREADLOCK_SHM_TEST_POKE_DELAY_MS): a pause in a poke's
 * scan after each node it handled (freed or found notified, and its
 * waiter woken or rung), the window in which a promise waiter that heard
 * of it is back, published again further on, before the scan ends (P1). */
static _Atomic int tl__poke_delay = -1;
/* Another (THREADLOCK_SHM_TEST_POKE_RING_DELAY_MS): a pause between a
 * promise waiter's free and its ring, where a poker killed leaves that
 * waiter unrung (P2, P3). */
static _Atomic int tl__poke_ring_delay = -1;

/* P1. Every promise waiter whose node a poke freed (or found notified)
 * hears a ring of its process's doorbell after that free: each node's
 * ring follows its free at once. A ring made once per process and scan
 * was lost for a waiter that heard it, took its result, published again
 * on a node further on, and was freed there by the same scan: its record
 * kept a free node and nothing was left to ring it (a CountDownLatch test
 * hung so).
 * P2. A poke rings its own process's doorbell at its end. A poking
 * process killed between a free and its ring leaves that waiter's record
 * with a free node; the waiter's process watches every process of the
 * file that was there when it last slept (it has a lock waiter), so its
 * own watcher pokes at that death, and its own ring has its loop look at
 * every record.
 * P3. A process killed (or stopped for good) inside its arrival poke,
 * between a free and its ring, is not watched yet by the waiters it
 * reaches first, so no death of a watched process rings them (P2 does not
 * apply). Each process's helper thread has the loops with promise waiters
 * look at every record at least every TL_SHM_BELL_SLICE_MS, rung or not
 * (binding_shm.c, tl__shm_bell_check), so such a waiter hears of its free
 * within a slice; a blocking waiter looks at its node at least every
 * 10 ms slice. (Looking for a move of the poke counter instead is not
 * enough: a look between the counter's bump and the free sees nothing,
 * and nothing moves after the poker's death; test/c/shm_poke.c found it.)
 * test/c/shm_poke.c checks P1 to P3 with every interleaving. */
void
tl_shm_poke(tl_shm_join_t *j)
{
  char *base = tl__shm_page(j);
  tl_shm_node_t *nodes = tl__nodes(base);

  if (tl_shm_header_ok(j) != 0)
    return;
  /* First the counter (a waiter not yet published sees it), then the
   * nodes. */
  atomic_fetch_add(tl__pokes(base), 1);
  atomic_thread_fence(memory_order_seq_cst);
  uint32_t end = tl__hwm(base);
  for (uint32_t i = 0; i < end; i++) {
    tl_shm_node_t *n = &nodes[i];
    uint32_t s = atomic_load(&n->state);
    if ((s & 3) != TL_NODE_WAITING && (s & 3) != TL_NODE_NOTIFIED)
      continue;
    uint32_t kind = atomic_load(&n->kind);
    uint32_t slot = TL_SHM_ID_SLOT(atomic_load(&n->owner));
    if (!(kind & (TL_SHM_KIND_LOCK | TL_SHM_KIND_RESERVE)))
      continue;
    /* A reserving Semaphore request keeps its node (its reservation
     * stands on it): it is notified instead, and looks at its permits
     * (a release whose process died before its notify is made up for). */
    if ((kind & TL_SHM_KIND_RESERVE) && (s & 3) == TL_NODE_WAITING) {
      uint32_t notified = (s & ~3u) | TL_NODE_NOTIFIED;
      if (atomic_load(&n->kind) != kind ||
          !atomic_compare_exchange_strong(&n->state, &s, notified))
        continue;
      s = notified;
    }
    /* A WAITING node is freed (kind and owner belong to this publication
     * if the free succeeds). A NOTIFIED one keeps its state and gets its
     * wake again: the notify that counted it may have died between the
     * state change and the wake or ring (both are idempotent: a woken
     * waiter finds its node NOTIFIED, a rung loop takes what is). */
    if ((s & 3) == TL_NODE_WAITING && !tl__free(n, s))
      continue; /* a lock waiter's node is freed */
    if ((s & 3) == TL_NODE_NOTIFIED) {
      /* A dead waiter's node (the death this poke reports, often) is
       * reclaimed instead: nobody hears that wake. */
      uint32_t owner = atomic_load(&n->owner);
      if (atomic_load(&n->state) != s)
        continue;
      if (tl_shm_owner_alive(j, owner) == 0) {
        tl__free(n, s);
        continue;
      }
    }
    if (!(kind & TL_SHM_KIND_ASYNC)) {
      tl__hp_wake((uint32_t *)&n->state, 1);
    } else {
      tl__hp_test_pause("THREADLOCK_SHM_TEST_POKE_RING_DELAY_MS",
                        &tl__poke_ring_delay);
      tl__ring_slot(base, slot);
    }
    tl__hp_test_pause("THREADLOCK_SHM_TEST_POKE_DELAY_MS", &tl__poke_delay);
  }
  tl__ring_slot(base, tl_shm_join_slot(j));
}

typedef struct {
  tl_shm_node_t *node;
  uint32_t state;
  uint32_t kind;
  uint32_t owner;
  uint64_t ticket;
} tl_cand_t;

static int
tl__by_ticket(const void *a, const void *b)
{
  uint64_t x = ((const tl_cand_t *)a)->ticket;
  uint64_t y = ((const tl_cand_t *)b)->ticket;
  return x < y ? -1 : x > y;
}

/* A test hook (THREADLOCK_SHM_TEST_RING_DELAY_MS): a pause between a
 * notify's state change and its wake or ring, the window in which the
 * notifying process may die (tl_shm_poke gives the wake again). */
static _Atomic int tl__ring_delay = -1;
/* And one between a hand-off's write of the word and its notify
 * (THREADLOCK_SHM_TEST_HANDOFF_DELAY_MS): the window in which the grantee
 * may leave first (H2). */
static _Atomic int tl__handoff_delay = -1;

/* The WAITING nodes of the word at `offset` (only those of owner id `only`
 * when it is not 0) into `cand` (TL_SHM_NODES entries), oldest first;
 * returns how many. */
static size_t
tl__candidates(char *base, uint64_t offset, uint32_t only, tl_cand_t *cand)
{
  tl_shm_node_t *nodes = tl__nodes(base);
  size_t found = 0;

  uint32_t end = tl__hwm(base);
  for (uint32_t i = 0; i < end; i++) {
    tl_shm_node_t *n = &nodes[i];
    uint32_t s = atomic_load(&n->state);
    if ((s & 3) != TL_NODE_WAITING || atomic_load(&n->offset) != offset)
      continue;
    uint64_t ticket = atomic_load(&n->ticket);
    uint32_t kind = atomic_load(&n->kind);
    uint32_t owner = atomic_load(&n->owner);
    /* Offset, ticket, kind and owner belong to this publication of the
     * node. */
    if (atomic_load(&n->state) != s || (only != 0 && owner != only))
      continue;
    cand[found].node = n;
    cand[found].state = s;
    cand[found].kind = kind;
    cand[found].owner = owner;
    cand[found].ticket = ticket;
    found++;
  }
  qsort(cand, found, sizeof(*cand), tl__by_ticket);
  return found;
}

/* Moves the candidate's node from WAITING to NOTIFIED and wakes its
 * waiter; 0 when the node left WAITING first. */
static int
tl__tell(tl_shm_join_t *j, char *base, const tl_cand_t *c)
{
  uint32_t s = c->state;
  uint32_t notified = (s & ~3u) | TL_NODE_NOTIFIED;

  if (!atomic_compare_exchange_strong(&c->node->state, &s, notified))
    return 0;
  tl__hp_test_pause("THREADLOCK_SHM_TEST_RING_DELAY_MS", &tl__ring_delay);
  /* A promise waiter hears it through its process's doorbell, rung after
   * the state changed; the owner read before the change is the
   * publication's (it changes only after a free). */
  if (c->kind & TL_SHM_KIND_ASYNC)
    tl__ring_slot(base, TL_SHM_ID_SLOT(c->owner));
  else
    tl__hp_wake((uint32_t *)&c->node->state, 1);
  /* A lock waiter woken is the one that takes the word next (or was handed
   * it): if its process dies before it does, the wake is lost unless its
   * death pokes the file. The waiters that published after it watch it,
   * but one that looked at the word's waiters before this node was
   * published and published after it does not: this process watches it
   * (a thread per process slot, started once). */
  if (c->kind & TL_SHM_KIND_LOCK)
    (void)tl__shm_watch_id(j, c->owner, tl_shm_poke);
  return 1;
}

/* Notifies up to `count` (< 0: all) of the candidates, oldest first;
 * dead waiters' nodes are reclaimed, not counted. */
static int64_t
tl__notify_some(tl_shm_join_t *j, char *base, const tl_cand_t *cand,
                size_t found, int64_t count)
{
  int64_t woken = 0;

  for (size_t k = 0; k < found && (count < 0 || woken < count); k++) {
    if (tl_shm_owner_alive(j, cand[k].owner) == 0) {
      tl__free(cand[k].node, cand[k].state);
      continue;
    }
    woken += tl__tell(j, base, &cand[k]);
  }
  return woken;
}

/* Without memory for the sorted candidates: notifies the oldest waiter
 * of the word at `offset` found by one scan (again if it left meanwhile);
 * 1 when it woke one. */
static int64_t
tl__notify_oldest(tl_shm_join_t *j, char *base, uint64_t offset)
{
  tl_shm_node_t *nodes = tl__nodes(base);

  for (int tries = 0; tries < 8; tries++) {
    tl_cand_t best = { 0 };
    int have = 0;
    uint32_t end = tl__hwm(base);
    for (uint32_t i = 0; i < end; i++) {
      tl_shm_node_t *n = &nodes[i];
      uint32_t s = atomic_load(&n->state);
      if ((s & 3) != TL_NODE_WAITING || atomic_load(&n->offset) != offset)
        continue;
      tl_cand_t c = { n, s, atomic_load(&n->kind), atomic_load(&n->owner),
                      atomic_load(&n->ticket) };
      if (atomic_load(&n->state) == s && (!have || c.ticket < best.ticket)) {
        best = c;
        have = 1;
      }
    }
    if (!have)
      return 0;
    if (tl__notify_some(j, base, &best, 1, 1) == 1)
      return 1;
  }
  return 0;
}

/* Notifies up to `count` (< 0: all) waiters of the word, oldest first,
 * only those of owner id `only` when it is not 0. */
static int64_t
tl__notify(tl_shm_join_t *j, char *base, const void *word, int64_t count,
           uint32_t only)
{
  uint64_t offset = (uint64_t)((const char *)word - base - TL_SHM_HEADER);
  tl_cand_t *cand;

  if (count == 0)
    return 0;
  if (tl_shm_header_ok(j) != 0)
    return TL_HOST_ECORRUPT;
  cand = malloc(sizeof(*cand) * TL_SHM_NODES);
  if (cand == NULL && count == 1 && only == 0)
    return tl__notify_oldest(j, base, offset);
  if (cand == NULL)
    return TL_HOST_ENODES;
  size_t found = tl__candidates(base, offset, only, cand);
  int64_t woken = tl__notify_some(j, base, cand, found, count);
  free(cand);
  return woken;
}

uint64_t
tl_shm_ticket(tl_shm_join_t *j)
{
  if (tl_shm_header_ok(j) != 0)
    return 0;
  uint64_t n =
      atomic_fetch_add((_Atomic uint64_t *)(tl__shm_page(j) + TL_TICKET_AT), 1);
  return tl__hp_monotonic_us() << 12 | (n & 0xfff);
}

/* The release of a lock word across processes (lib/ShmLock.js, which
 * holds the word's protocol and its invariants L1-L6; the steps here are
 * H1-H3 there), and of an RWLock's write lock (`mode` TL_SHM_RELEASE_RW,
 * lib/ShmRWLock.js: H1 and H2 for its writers and readers, which are all
 * HANDOFF nodes there; a reader handed the word lets the others in, see
 * tl_shm_read_take_up; H3 frees the word and wakes every sleeper):
 *   H1. the oldest waiter that may take the lock up is handed it: the
 *       word goes from `held` to HANDED | WAITERS | its id (so nobody
 *       barges: the word has an owner), and only then its node from
 *       WAITING to NOTIFIED, and it is woken; its process is watched, so
 *       that its death pokes the others, who take the word over (without
 *       DIED: it never ran);
 *   H2. if its node left WAITING first (its timeout, abort or end, or a
 *       poke), the word goes back from the handed value to `held` and the
 *       next candidate is tried; if the word was no longer the handed
 *       value, the waiter found it first and took it up or gave it back
 *       (freeing it and waking another): the release is done either way;
 *   H3. with nobody to hand it to, the word goes from `held` to WAITERS
 *       (to 0 when the scan found no node), the oldest waiter is woken to
 *       compete (found by a scan after the free), and WAITERS is set again
 *       if that scan found others: a waiter woken may not come for long (a
 *       busy event loop), and the next holder's release must see the
 *       others (I2: a waiter asleep on its node has WAITERS on the word).
 * Only the holder changes a held word (others only add WAITERS, which
 * `held` has), so each compare-exchange from `held` fails only when the
 * caller's `held` was stale. */
int
tl_shm_lock_release(tl_shm_join_t *j, char *base, const void *word,
                    uint32_t held, int mode)
{
  int fifo = mode == TL_SHM_RELEASE_FIFO, rw = mode == TL_SHM_RELEASE_RW;
  _Atomic uint32_t *w = (_Atomic uint32_t *)word;
  uint64_t offset = (uint64_t)((const char *)word - base - TL_SHM_HEADER);
  tl_cand_t *cand;
  size_t found = 0;
  uint32_t v;

  if (tl_shm_header_ok(j) != 0)
    return TL_HOST_ECORRUPT;
  if (atomic_load(w) != held)
    return 2;
  /* Without memory for the candidates, no hand-off: the word is freed and
   * the oldest waiter woken (tl__notify finds it by one scan then). */
  cand = malloc(sizeof(*cand) * TL_SHM_NODES);
  if (cand != NULL)
    found = tl__candidates(base, offset, 0, cand);
  uint64_t now = tl__hp_monotonic_us();
  /* The oldest promise waiter passed over (asleep since it queued): woken
   * to come once another is handed the lock (H1). */
  const tl_cand_t *call = NULL;
  for (size_t k = 0; k < found; k++) {
    const tl_cand_t *c = &cand[k];
    if (!(c->kind & TL_SHM_KIND_HANDOFF))
      continue;
    if (!fifo) {
      /* Outside the FIFO mode a waiter is handed it once its request has
       * waited TL_SHM_STARVING_US (the candidates are oldest first), and
       * only one that can take it up at once: a blocking waiter (a parked
       * thread), or a promise waiter that is present (it came to try,
       * found the word taken and sleeps again: its loop ran just now), as
       * the in-process policy's I7. A promise waiter asleep since it
       * queued keeps its place, and is woken to come. */
      if (now - (c->ticket >> 12) < TL_SHM_STARVING_US)
        break;
      if ((c->kind & TL_SHM_KIND_ASYNC) && !(c->kind & TL_SHM_KIND_PRESENT)) {
        if (call == NULL)
          call = c;
        continue;
      }
    }
    int alive = tl_shm_owner_alive(j, c->owner);
    if (alive == 0)
      tl__free(c->node, c->state);
    if (alive != 1)
      continue;
    uint32_t handed =
        TL_SHM_LOCK_HANDED | TL_SHM_LOCK_WAITERS | (c->owner & TL_SHM_LOCK_ID);
    v = held;
    if (!atomic_compare_exchange_strong(w, &v, handed)) {
      free(cand);
      return 2;
    }
    tl__hp_test_pause("THREADLOCK_SHM_TEST_HANDOFF_DELAY_MS",
                      &tl__handoff_delay);
    if (tl__tell(j, base, c)) {
      if (call != NULL)
        (void)tl__tell(j, base, call);
      free(cand);
      return 1;
    }
    v = handed;
    if (!atomic_compare_exchange_strong(w, &v, held)) {
      free(cand);
      return 1;
    }
  }
  /* An RWLock's writer frees the word and wakes every sleeper: readers
   * all go in, writers compete (lib/ShmRWLock.js). A node published after
   * the free fails its value check (the word is no longer `held` with
   * WAITERS); every one published before it is found by the notify's scan,
   * made after the free. */
  if (rw) {
    free(cand);
    v = held;
    if (!atomic_compare_exchange_strong(w, &v, 0))
      return 2;
    int64_t r = tl__notify(j, base, word, -1, 0);
    return r < 0 ? (int)r : 0;
  }
  /* H3: freed, with WAITERS kept while the scan found nodes (I2: the one
   * woken may be a promise waiter whose loop is busy, and the next release
   * must still look at the others, through this function). */
  v = held;
  if (!atomic_compare_exchange_strong(w, &v,
                                      found > 0 ? TL_SHM_LOCK_WAITERS : 0)) {
    free(cand);
    return 2;
  }
  /* The wake comes from a scan made after the free (the one above came
   * before it, and a node published since, while the word was still held,
   * passed its value check: only a scan after the free is sure to see it),
   * and WAITERS goes back onto the word if that scan found nodes besides
   * the one it woke (published after the first scan). Without memory for
   * it, the oldest is woken by one scan and WAITERS set. */
  size_t again = 0;
  int64_t woken = 0;
  if (cand != NULL) {
    again = tl__candidates(base, offset, 0, cand);
    woken = tl__notify_some(j, base, cand, again, 1);
  } else {
    woken = tl__notify_oldest(j, base, offset);
    again = 2;
  }
  free(cand);
  if ((int64_t)again > woken) {
    v = atomic_load(w);
    while (!(v & TL_SHM_LOCK_WAITERS) &&
           !atomic_compare_exchange_weak(w, &v, v | TL_SHM_LOCK_WAITERS))
      ;
  }
  return 0;
}

/* 1 when a node of the word at `word` waits or was notified whose owner
 * is `owner` (0: any) and whose kind has a bit of `kind` (0: any), of a
 * live owner when `live` (one whose liveness cannot be read counts as
 * alive); else 0, or TL_HOST_ECORRUPT. */
static int
tl__word_has(tl_shm_join_t *j, char *base, const void *word, uint32_t owner,
             uint32_t kind, int live)
{
  tl_shm_node_t *nodes = tl__nodes(base);
  uint64_t offset = (uint64_t)((const char *)word - base - TL_SHM_HEADER);

  if (tl_shm_header_ok(j) != 0)
    return TL_HOST_ECORRUPT;
  uint32_t end = tl__hwm(base);
  for (uint32_t i = 0; i < end; i++) {
    tl_shm_node_t *n = &nodes[i];
    uint32_t s = atomic_load(&n->state);
    if ((s & 3) != TL_NODE_WAITING && (s & 3) != TL_NODE_NOTIFIED)
      continue;
    uint32_t o = atomic_load(&n->owner);
    if (atomic_load(&n->offset) != offset ||
        (owner != 0 && (o & TL_SHM_LOCK_ID) != (owner & TL_SHM_LOCK_ID)) ||
        (kind != 0 && !(atomic_load(&n->kind) & kind)))
      continue;
    /* Offset, owner and kind belong to this publication. */
    if (atomic_load(&n->state) == s && (!live || tl_shm_owner_alive(j, o) != 0))
      return 1;
  }
  return 0;
}

int
tl_shm_has_node(tl_shm_join_t *j, char *base, const void *word, uint32_t owner)
{
  if ((owner & TL_SHM_LOCK_ID) == 0)
    return tl_shm_header_ok(j) != 0 ? TL_HOST_ECORRUPT : 0; /* no such id */
  return tl__word_has(j, base, word, owner, 0, 0);
}

int
tl_shm_sem_reserved(tl_shm_join_t *j, char *base, const void *word)
{
  return tl__word_has(j, base, word, 0, TL_SHM_KIND_RESERVE, 1);
}

int64_t
tl_shm_notify(tl_shm_join_t *j, char *base, const void *word, int64_t count)
{
  return tl__notify(j, base, word, count, 0);
}

int
tl_shm_notify_owner(tl_shm_join_t *j, char *base, const void *word,
                    uint32_t owner)
{
  int64_t r = tl__notify(j, base, word, -1, owner);
  return r < 0 ? (int)r : 0;
}

int64_t
tl_shm_waiters(tl_shm_join_t *j, char *base, const void *word)
{
  tl_shm_node_t *nodes = tl__nodes(base);
  uint64_t offset = (uint64_t)((const char *)word - base - TL_SHM_HEADER);
  int64_t found = 0;

  if (tl_shm_header_ok(j) != 0)
    return TL_HOST_ECORRUPT;
  uint32_t end = tl__hwm(base);
  for (uint32_t i = 0; i < end; i++) {
    tl_shm_node_t *n = &nodes[i];
    uint32_t s = atomic_load(&n->state);
    if ((s & 3) == TL_NODE_WAITING && atomic_load(&n->offset) == offset &&
        tl_shm_owner_alive(j, atomic_load(&n->owner)) == 1 &&
        atomic_load(&n->state) == s)
      found++;
  }
  return found;
}

int64_t
tl_shm_nodes_used(char *base)
{
  tl_shm_node_t *nodes = tl__nodes(base);
  int64_t used = 0;

  for (uint32_t i = 0; i < TL_SHM_NODES; i++)
    used += (atomic_load(&nodes[i].state) & 3) != TL_NODE_FREE;
  return used;
}
