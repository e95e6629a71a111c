/* The table of threadlock/host: a fixed-size file mapped MAP_SHARED by every
 * attached process, holding process slots, named-lock entries and request
 * nodes, and the protocol that changes it.
 *
 * Layout (version 1), every offset fixed by the constants in host.h:
 *   header | slots[TL_HOST_SLOTS] | names[TL_HOST_NAMES] | nodes[...]
 * Byte-range locks (not the file's contents) carry liveness: byte 0 is
 * read-locked by every attachment (write-locked only by a first attacher
 * while it re-initialises the file), byte TL_LIVE + i is write-locked by
 * the owner of slot i for as long as it lives. OFD locks belong to the open
 * file description, so the kernel drops them when the process dies, and
 * they know nothing of pids: a reused pid or another PID namespace cannot
 * fool them.
 *
 * Every change happens inside one internal critical section, a futex word
 * in the header that holds the owner's slot number (not a thread id, which
 * would mean nothing in another PID namespace). A process that dies inside
 * it leaves its slot number there; whoever finds that slot dead takes the
 * word over and runs tl__repair, which re-derives every list from the
 * nodes and drops what does not check out.
 *
 * Any process of the user can write the file, so every index read from it
 * is checked against its bound before use and every list walk is bounded:
 * a corrupt table gives TL_HOST_ECORRUPT, never a stray access.
 */
#include "host.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "platform.h"

#define TL_MAGIC 0x74736f686b636f6cULL /* "lockhost" */
/* Layout version 2 added the table's identity to the header (version 1
 * had none). Versions 1 and 2 keep magic, version, size and fence at the
 * same offsets, so a version can be read (and the fence kept) from any. */
#define TL_VERSION 2u
#define TL_ATTACH_WAIT_MS 5000 /* the longest wait for byte 0 */
#define TL_DIED_RING 64        /* died names remembered (tl_hdr_t) */
/* The fence file: the highest token any table of the directory may have
 * handed out, reserved in blocks (one durable write per block), so that a
 * rebuilt table goes on above it whatever the clock says. */
#define TL_FENCE_FILE "threadlock-host.fence"
#define TL_FENCE_MAGIC 0x65636e65666b636cULL /* "lckfence" */
#define TL_FENCE_BLOCK ((uint64_t)1 << 24)
#define TL_FILE "threadlock-host.table"
#define TL_LIVE 1u             /* liveness byte of slot i: TL_LIVE + i */
#define TL_WAITERS 0x80000000u /* in crit: someone sleeps on the word */
#define TL_CRIT_SLICE_MS 50    /* re-check the owner's liveness this often */

enum { SLOT_FREE = 0, SLOT_ATTACHED = 1 };
enum { NAME_EMPTY = 0, NAME_USED = 1, NAME_TOMB = 2 };

typedef struct {
  uint64_t magic;
  uint32_t version;
  uint32_t size;
  uint32_t nslots, nnames, nnodes, name_max;
  _Atomic uint32_t crit; /* owner slot + 1, | TL_WAITERS */
  uint32_t generation;   /* bumped by every re-initialisation */
  uint64_t fence;        /* the last token handed out */
  uint32_t node_hint;    /* where the next free-node search starts */
  uint32_t pad;
  uint64_t initialised_us;
  /* The table file as the initialiser's fstat saw it, and the boot: a
   * process that reaches the same file by a path on which the kernel
   * keys byte locks on another inode (an overlay mount and its upper
   * directory) cannot see the others' locks, and must not use it. */
  uint64_t ident_dev, ident_ino;
  uint8_t boot_id[16];
  /* Names whose holder died with nobody waiting: their entries are freed
   * at once (a dead process leaves nothing), and the next request of one
   * of the last TL_DIED_RING of them is still told ownerDied. Each entry
   * is a name's hash and its length + 1 (0: unused). */
  uint64_t died_hash[TL_DIED_RING];
  uint32_t died_len[TL_DIED_RING];
  uint32_t died_next;
  uint32_t pad2;
  /* Tokens up to this one are reserved in the fence file; `fence` passing
   * it reserves the next block first. */
  uint64_t fence_limit;
} tl_hdr_t;

typedef struct {
  uint32_t state;
  uint32_t pid;
  _Atomic uint32_t doorbell; /* bumped for every grant or steal of its nodes */
  uint32_t gen;
  uint64_t start_time;
  uint64_t client; /* the clientId of query() */
  /* Bumped (with the doorbell) when another process got ahead of one of
   * this slot's waiting requests: a steal. Its helper then watches it. */
  _Atomic uint32_t rewatch;
  uint32_t pad;
} tl_slot_t;

typedef struct {
  uint32_t state;
  uint32_t len;
  uint64_t hash;
  uint32_t head, tail; /* node index + 1; 0: none */
  uint32_t died;       /* a holder died holding it: told to the next grantee */
  uint32_t pad;
  /* Every slot with a request linked in the list since it was last empty
   * (a superset of the slots in it now): the processes a new waiter must
   * watch, read in O(1). Cleared with the entry when the list empties. */
  uint64_t seen[TL_HOST_SLOTS / 64];
  /* UTF-16 code units, as JavaScript compares names: lone surrogates
   * stay distinct (UTF-8 would make them all U+FFFD). */
  uint16_t name[TL_HOST_NAME_MAX];
} tl_name_t;

typedef struct {
  _Atomic uint32_t state;
  uint32_t slot;
  uint32_t name;
  uint32_t next; /* node index + 1 */
  uint32_t flags;
  _Atomic uint32_t word; /* a SYNC waiter sleeps on it */
  uint32_t owner_died;
  uint32_t pad;
  uint64_t token;
} tl_node_t;

typedef struct {
  tl_hdr_t hdr;
  tl_slot_t slots[TL_HOST_SLOTS];
  tl_name_t names[TL_HOST_NAMES];
  tl_node_t nodes[TL_HOST_NODES];
} tl_table_t;

/* A watcher thread of one other slot this attachment waits behind. Owned
 * by the attachment (`watch` or `retired`, under `lock`); `ended` is set
 * by the thread as it ends, however it ends. */
typedef struct tl_watch_s tl_watch_t;
struct tl_watch_s {
  tl_hp_thread_t *thread;
  tl_host_t *h;
  uint32_t slot;
  int cancelled; /* under the attachment's `lock` */
  _Atomic int ended;
  tl_watch_t *next; /* in `retired` */
};

struct tl_host_s {
  int fd;
  int fence_fd; /* the fence file, written under the table's crit */
  tl_table_t *t;
  size_t size;
  uint32_t generation; /* of the table this attachment joined */
  uint32_t slot;
  _Atomic int stopping;
  /* Which nodes are this attachment's and what poll last reported of
   * each (TL_HOST_FREE: not ours). Protected by the table's crit. */
  _Atomic uint8_t mine[TL_HOST_NODES]; /* atomic: requestSync's wait
                                          reads its own entry unlocked */
  /* How many entries of `mine` are set: read by the helper thread, which
   * watches other processes only while this attachment has requests. */
  _Atomic uint32_t owned;
  /* Requests visited by list walks under the section, for the tests
   * that check that a request costs O(1) in the requests queued.
   * Protected by the table's crit. */
  uint64_t walked;
  /* The slot's `rewatch` last acted on (by tl_host_rewatch, on the JS
   * thread or the attachment's worker, under the section). */
  _Atomic uint32_t rewatch_seen;
  /* Taken before the table's crit by every thread of the attachment (the
   * JS thread, the helper, the watchers), so that the slot number in crit
   * names one thread at a time and "crit holds my own slot number" can
   * only mean a dead earlier owner of the slot. */
  tl_hp_mutex_t *local;
  /* Protected by `lock` (a process-local mutex, taken after `local` when
   * both are): the watcher of each slot, and the cancelled watchers not
   * joined yet. A thread holding `lock` never waits for a watcher that
   * has not ended, except tl_host_stop_watchers (which holds no `local`). */
  tl_hp_mutex_t *lock;
  tl_watch_t *watch[TL_HOST_SLOTS];
  tl_watch_t *retired;
};

/* Fault injection for the tests: THREADLOCK_HOST_FAULT=crit, the process
 * kills itself inside the critical section of its first queued request,
 * with the node linked but the tail not yet updated; =stop, it stops
 * itself there (SIGSTOP), once. */
static _Atomic int tl__fault = -1; /* read by the JS thread of any env */

static int
tl__fault_armed(void)
{
  int f = atomic_load_explicit(&tl__fault, memory_order_relaxed);
  if (f < 0) {
    const char *v = getenv("THREADLOCK_HOST_FAULT");
    f = v == NULL                ? 0
        : strcmp(v, "crit") == 0 ? 1
        : strcmp(v, "stop") == 0 ? 2
                                 : 0;
    atomic_store_explicit(&tl__fault, f, memory_order_relaxed);
  }
  return f;
}

static uint64_t
tl__hash(const uint16_t *s, size_t len)
{
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < len; i++)
    h = (h ^ s[i]) * 0x100000001b3ULL;
  return h;
}

/* Whether the owner of slot `s` is alive. The attachment's own slot is
 * invisible to its own probes (same open file description). */
static int
tl__alive(tl_host_t *h, uint32_t s)
{
  if (s == h->slot)
    return 1;
  return tl__hp_probe(h->fd, TL_LIVE + s) == TL_HP_OWNED;
}

/* ---- the critical section ---------------------------------------------- */

static void tl__repair(tl_host_t *h);

/* Whether the mapping can be touched: the file still has the size that
 * was mapped (a file shrunk under a mapping faults with SIGBUS on the
 * pages past its end, so the size is checked with fstat before every
 * entry, never caught with a signal handler), and the table is the one
 * this attachment joined (not rebuilt since). Returns 0 or
 * TL_HOST_ECORRUPT. Truncating the file between this check and the
 * accesses that follow it (microseconds) is the one window left. */
static int
tl__table_ok(tl_host_t *h)
{
  uint64_t dev, ino, size;

  if (tl__hp_identity(h->fd, &dev, &ino, &size) != 0 || size < h->size)
    return TL_HOST_ECORRUPT;
  if (h->t->hdr.generation != h->generation || h->t->hdr.magic != TL_MAGIC)
    return TL_HOST_ECORRUPT;
  return 0;
}

/* Takes the table's critical section. A contended wait sleeps in slices
 * and checks, each time, whether the owner's process is still there: a
 * dead owner's word is taken over and the table repaired. A live owner is
 * waited for at most `timeout_ms` (< 0: without a limit; 0: not at all),
 * since it may be stopped (SIGSTOP, a debugger) for as long as anyone
 * likes: an event loop must never wait for it. Returns 0, TL_HOST_EAGAIN
 * (timeout 0), TL_HOST_ETIMEDOUT, or TL_HOST_ECORRUPT when the file
 * shrank or was rebuilt under this attachment; only 0 holds the section. */
static int
tl__crit_lock(tl_host_t *h, int64_t timeout_ms)
{
  _Atomic uint32_t *w = &h->t->hdr.crit;
  uint32_t me = h->slot + 1;
  uint32_t take = me;
  uint64_t deadline = 0;
  int r;

  if (timeout_ms > 0)
    deadline = tl__hp_monotonic_ms() + (uint64_t)timeout_ms;
  if (timeout_ms < 0)
    tl__hp_mutex_lock(h->local);
  else if ((timeout_ms == 0
                ? tl__hp_mutex_trylock(h->local)
                : tl__hp_mutex_timedlock(h->local, timeout_ms)) != 0)
    return timeout_ms == 0 ? TL_HOST_EAGAIN : TL_HOST_ETIMEDOUT;
  for (;;) {
    if (tl__table_ok(h) != 0) {
      r = TL_HOST_ECORRUPT;
      break;
    }
    uint32_t v = 0;
    if (atomic_compare_exchange_strong(w, &v, take))
      return 0;
    uint32_t owner = v & ~TL_WAITERS;
    /* Our own slot number there means a dead earlier owner of our slot:
     * no thread of this attachment nests the section. */
    if (owner == me || owner == 0 || owner > TL_HOST_SLOTS ||
        !tl__alive(h, owner - 1)) {
      if (atomic_compare_exchange_strong(w, &v, me | (v & TL_WAITERS))) {
        tl__repair(h);
        return 0;
      }
      continue;
    }
    int64_t slice = TL_CRIT_SLICE_MS;
    if (timeout_ms == 0) {
      r = TL_HOST_EAGAIN;
      break;
    }
    if (timeout_ms > 0) {
      uint64_t now = tl__hp_monotonic_ms();
      if (now >= deadline) {
        r = TL_HOST_ETIMEDOUT;
        break;
      }
      if ((int64_t)(deadline - now) < slice)
        slice = (int64_t)(deadline - now);
    }
    if (!(v & TL_WAITERS)) {
      if (!atomic_compare_exchange_strong(w, &v, v | TL_WAITERS))
        continue;
      v |= TL_WAITERS;
    }
    tl__hp_wait((uint32_t *)w, v, slice);
    /* Having slept, take it with the waiters bit, so that the unlock
     * wakes whoever else sleeps. */
    take = me | TL_WAITERS;
  }
  /* Leaving without the section after having set the waiters bit is
   * harmless: the owner's unlock wakes one sleeper too many at worst. */
  tl__hp_mutex_unlock(h->local);
  return r;
}

static void
tl__crit_unlock(tl_host_t *h)
{
  uint32_t v = atomic_exchange(&h->t->hdr.crit, 0);
  if (v & TL_WAITERS)
    tl__hp_wake((uint32_t *)&h->t->hdr.crit, 1);
  tl__hp_mutex_unlock(h->local);
}

/* ---- checked access ---------------------------------------------------- */

/* A node index + 1 read from the file, checked. Returns NULL for 0 (no
 * node) and sets *bad for an index out of range. */
static tl_node_t *
tl__node_at(tl_host_t *h, uint32_t ref, int *bad)
{
  if (ref == 0)
    return NULL;
  if (ref > TL_HOST_NODES) {
    *bad = 1;
    return NULL;
  }
  return &h->t->nodes[ref - 1];
}

static uint32_t
tl__node_ref(tl_host_t *h, tl_node_t *n)
{
  return (uint32_t)(n - h->t->nodes) + 1;
}

/* ---- names and lists --------------------------------------------------- */

/* Marks slot `s` in `e`'s watch set. */
static void
tl__seen(tl_name_t *e, uint32_t s)
{
  if (s < TL_HOST_SLOTS)
    e->seen[s / 64] |= (uint64_t)1 << (s % 64);
}

/* Finds the entry of `name`, or creates it when `create`. Returns the
 * index, -1 when absent, or a negative error. */
static int
tl__name_find(tl_host_t *h, const uint16_t *name, size_t len, int create)
{
  uint64_t hash = tl__hash(name, len);
  int free_at = -1;

  for (uint32_t i = 0; i < TL_HOST_NAMES; i++) {
    uint32_t at = (uint32_t)((hash + i) % TL_HOST_NAMES);
    tl_name_t *e = &h->t->names[at];
    if (e->state == NAME_EMPTY) {
      if (free_at < 0)
        free_at = (int)at;
      break;
    }
    if (e->state == NAME_TOMB) {
      if (free_at < 0)
        free_at = (int)at;
      continue;
    }
    if (e->state != NAME_USED || e->len > TL_HOST_NAME_MAX)
      return TL_HOST_ECORRUPT;
    if (e->hash == hash && e->len == len &&
        memcmp(e->name, name, len * sizeof(uint16_t)) == 0)
      return (int)at;
  }
  if (!create)
    return -1;
  if (free_at < 0)
    return TL_HOST_ENAMES;
  tl_name_t *e = &h->t->names[free_at];
  memset(e, 0, sizeof(*e));
  memcpy(e->name, name, len * sizeof(uint16_t));
  e->len = (uint32_t)len;
  e->hash = hash;
  e->state = NAME_USED;
  /* A name whose last holder died with nobody waiting: its next grantee
   * is told. */
  for (uint32_t i = 0; i < TL_DIED_RING; i++) {
    if (h->t->hdr.died_len[i] == len + 1 && h->t->hdr.died_hash[i] == hash) {
      h->t->hdr.died_len[i] = 0;
      e->died = 1;
      break;
    }
  }
  return free_at;
}

/* A name whose list is empty is no longer needed. Linear probing needs a
 * tombstone there, unless the entry after it is empty: then it and the
 * tombstones before it can be empty too, which keeps the probe chains of
 * later lookups short. */
static void
tl__name_trim(tl_host_t *h, uint32_t at)
{
  tl_name_t *e = &h->t->names[at];
  if (e->head != 0)
    return;
  if (e->died) {
    /* Remembered outside the entry, which is freed now. */
    uint32_t i = h->t->hdr.died_next % TL_DIED_RING;
    h->t->hdr.died_hash[i] = e->hash;
    h->t->hdr.died_len[i] = e->len + 1;
    h->t->hdr.died_next = i + 1;
    e->died = 0;
  }
  e->state = NAME_TOMB;
  if (h->t->names[(at + 1) % TL_HOST_NAMES].state != NAME_EMPTY)
    return;
  for (uint32_t i = 0; i < TL_HOST_NAMES; i++) {
    tl_name_t *c = &h->t->names[(at + TL_HOST_NAMES - i) % TL_HOST_NAMES];
    if (c->state != NAME_TOMB)
      break;
    c->state = NAME_EMPTY;
  }
}

/* Unlinks `n` from its name's list. */
static int
tl__unlink(tl_host_t *h, tl_node_t *n)
{
  int bad = 0;
  uint32_t ref = tl__node_ref(h, n);
  if (n->name >= TL_HOST_NAMES)
    return TL_HOST_ECORRUPT;
  tl_name_t *e = &h->t->names[n->name];
  tl_node_t *prev = NULL;
  uint32_t cur = e->head;
  for (uint32_t steps = 0; cur != 0; steps++) {
    h->walked++;
    tl_node_t *c = tl__node_at(h, cur, &bad);
    if (bad || steps > TL_HOST_NODES)
      return TL_HOST_ECORRUPT;
    if (cur == ref) {
      if (prev == NULL)
        e->head = n->next;
      else
        prev->next = n->next;
      if (e->tail == ref)
        e->tail = prev == NULL ? 0 : tl__node_ref(h, prev);
      n->next = 0;
      return 0;
    }
    prev = c;
    cur = c->next;
  }
  return 0; /* not linked */
}

/* Rings the doorbell of slot `s`. Every sleeper is woken, not one: a
 * helper thread that sleeps on several words (futex_waitv) and was woken
 * through another stays queued on this one until it runs again, and a
 * wake of one could go to that stale entry instead of the helper now in
 * charge of the slot (the next one of the process, or of the process that
 * reused the slot). Normally there is exactly one sleeper. */
static void
tl__doorbell_ring(tl_host_t *h, uint32_t s)
{
  _Atomic uint32_t *d = &h->t->slots[s].doorbell;
  atomic_fetch_add(d, 1);
  tl__hp_wake((uint32_t *)d, 1 << 30);
}

/* Tells the owner of `n` that its node changed. A blocking (SYNC) waiter
 * sleeps on its node's word; an event loop learns of grants and steals
 * through its slot's doorbell, which a steal rings for SYNC holders too
 * (their lock's signal aborts from the event loop). */
static void
tl__ring(tl_host_t *h, tl_node_t *n, int steal)
{
  if (n->flags & TL_HOST_SYNC) {
    atomic_fetch_add(&n->word, 1);
    tl__hp_wake((uint32_t *)&n->word, 1);
    if (!steal)
      return;
  }
  if (n->slot < TL_HOST_SLOTS)
    tl__doorbell_ring(h, n->slot);
}

/* Reserves tokens up to `limit` in the fence file, durably. */
static int
tl__fence_write(int fd, uint64_t limit)
{
  uint64_t rec[2] = { TL_FENCE_MAGIC, limit };
  return tl__hp_write_sync(fd, rec, sizeof(rec), 0);
}

/* The next token: strictly greater than every earlier one of this table,
 * and (through the fence file) of every earlier table of the directory.
 * Runs in crit. A failed write of the fence file (a full disk) does not
 * stop the grant; only a later rebuild could then go below it. */
static uint64_t
tl__next_token(tl_host_t *h)
{
  tl_hdr_t *hd = &h->t->hdr;
  if (hd->fence + 1 > hd->fence_limit) {
    hd->fence_limit = hd->fence + 1 + TL_FENCE_BLOCK;
    tl__fence_write(h->fence_fd, hd->fence_limit);
  }
  return ++hd->fence;
}

/* Grants `n`. `ring` is false when the grant happens inside its own
 * request, whose caller learns of it from the return value. */
static void
tl__grant(tl_host_t *h, tl_name_t *e, tl_node_t *n, int ring)
{
  n->token = tl__next_token(h);
  n->owner_died = e->died;
  e->died = 0;
  atomic_store(&n->state, TL_HOST_HELD);
  if (ring)
    tl__ring(h, n, 0);
}

/* Web Locks "process the lock request queue": grants the waiting requests
 * at the front of the list that do not conflict with what is held, in
 * order, stopping at the first that must wait. */
static int
tl__process(tl_host_t *h, uint32_t at)
{
  tl_name_t *e = &h->t->names[at];
  int held_any = 0, held_excl = 0, bad = 0;
  uint32_t cur = e->head;

  for (uint32_t steps = 0; cur != 0; steps++) {
    h->walked++;
    tl_node_t *n = tl__node_at(h, cur, &bad);
    if (bad || steps > TL_HOST_NODES)
      return TL_HOST_ECORRUPT;
    int excl = (n->flags & TL_HOST_EXCLUSIVE) != 0;
    uint32_t st = atomic_load(&n->state);
    if (st == TL_HOST_WAITING) {
      if (excl ? held_any : held_excl)
        break;
      tl__grant(h, e, n, 1);
      st = TL_HOST_HELD;
    }
    if (st == TL_HOST_HELD) {
      held_any = 1;
      held_excl |= excl;
    }
    cur = n->next;
  }
  tl__name_trim(h, at);
  return 0;
}

static tl_node_t *
tl__node_alloc(tl_host_t *h)
{
  uint32_t hint = h->t->hdr.node_hint % TL_HOST_NODES;
  for (uint32_t i = 0; i < TL_HOST_NODES; i++) {
    uint32_t at = (hint + i) % TL_HOST_NODES;
    tl_node_t *n = &h->t->nodes[at];
    if (atomic_load(&n->state) == TL_HOST_FREE) {
      h->t->hdr.node_hint = at + 1;
      return n;
    }
  }
  return NULL;
}

static void
tl__node_free(tl_host_t *h, tl_node_t *n)
{
  uint32_t i = tl__node_ref(h, n) - 1;
  if (n->slot == h->slot && h->mine[i] != TL_HOST_FREE) {
    h->mine[i] = TL_HOST_FREE;
    atomic_fetch_sub(&h->owned, 1);
  }
  n->next = 0;
  atomic_store(&n->state, TL_HOST_FREE);
}

/* ---- recovery ---------------------------------------------------------- */

/* Frees what a dead slot had: its held locks pass to their oldest waiters
 * with ownerDied, its waiting requests leave their queues. Runs in crit. */
static void
tl__recover(tl_host_t *h, uint32_t s)
{
  uint8_t touched[TL_HOST_NAMES];

  memset(touched, 0, sizeof(touched));
  for (uint32_t i = 0; i < TL_HOST_NODES; i++) {
    tl_node_t *n = &h->t->nodes[i];
    uint32_t st = atomic_load(&n->state);
    if (st == TL_HOST_FREE || n->slot != s)
      continue;
    if ((st == TL_HOST_WAITING || st == TL_HOST_HELD) &&
        n->name < TL_HOST_NAMES) {
      tl__unlink(h, n);
      if (st == TL_HOST_HELD)
        h->t->names[n->name].died = 1;
      touched[n->name] = 1;
    }
    n->next = 0;
    atomic_store(&n->state, TL_HOST_FREE);
  }
  h->t->slots[s].state = SLOT_FREE;
  for (uint32_t i = 0; i < TL_HOST_NAMES; i++)
    if (touched[i] && h->t->names[i].state == NAME_USED)
      tl__process(h, i);
}

/* Recovers every attached slot whose process is gone. Runs in crit. */
static void
tl__sweep(tl_host_t *h)
{
  for (uint32_t s = 0; s < TL_HOST_SLOTS; s++)
    if (h->t->slots[s].state != SLOT_FREE && !tl__alive(h, s))
      tl__recover(h, s);
}

/* After taking the section over from a dead owner: rebuilds every list
 * from the nodes, which name their entry and keep their state. The dead
 * owner may have left a list half-changed; nodes keep their relative order
 * by index (FIFO may bend for the requests of that one moment), held nodes
 * first. Runs in crit. */
static void
tl__repair(tl_host_t *h)
{
  tl_table_t *t = h->t;

  for (uint32_t i = 0; i < TL_HOST_NAMES; i++) {
    t->names[i].head = t->names[i].tail = 0;
    memset(t->names[i].seen, 0, sizeof(t->names[i].seen));
    if (t->names[i].state != NAME_USED && t->names[i].state != NAME_TOMB)
      t->names[i].state = NAME_EMPTY;
  }
  for (int pass = 0; pass < 2; pass++) {
    uint32_t want = pass == 0 ? TL_HOST_HELD : TL_HOST_WAITING;
    for (uint32_t i = 0; i < TL_HOST_NODES; i++) {
      tl_node_t *n = &t->nodes[i];
      uint32_t st = atomic_load(&n->state);
      if (st != TL_HOST_FREE && st != TL_HOST_WAITING && st != TL_HOST_HELD &&
          st != TL_HOST_STOLEN) {
        atomic_store(&n->state, TL_HOST_FREE);
        continue;
      }
      if (st != want)
        continue;
      if (n->name >= TL_HOST_NAMES || n->slot >= TL_HOST_SLOTS ||
          t->names[n->name].state != NAME_USED) {
        atomic_store(&n->state, TL_HOST_FREE);
        continue;
      }
      tl_name_t *e = &t->names[n->name];
      n->next = 0;
      tl__seen(e, n->slot);
      if (e->tail == 0)
        e->head = i + 1;
      else
        t->nodes[e->tail - 1].next = i + 1;
      e->tail = i + 1;
    }
  }
  tl__sweep(h);
  for (uint32_t i = 0; i < TL_HOST_NAMES; i++)
    if (t->names[i].state == NAME_USED)
      tl__process(h, i);
}

/* ---- watchers ---------------------------------------------------------- */

/* A watcher blocks on a slot's liveness byte: the kernel grants its read
 * lock when the owner's write lock goes, that is, when the owner detaches
 * or dies. No timer and no polling: the death is noticed at once. A
 * watcher no longer needed is cancelled in that wait. */
static void *
tl__watcher(void *data)
{
  tl_watch_t *w = data;
  tl_host_t *h = w->h;
  uint32_t s = w->slot;

  int r = tl__hp_lock_wait_cancellable(h->fd, TL_LIVE + s, 0, &w->ended);
  if (r == 0) {
    tl__hp_unlock(h->fd, TL_LIVE + s);
    if (!atomic_load(&h->stopping) && tl__crit_lock(h, -1) == 0) {
      /* A new process may have claimed the slot in between: it is then
       * alive and has recovered the old owner's state itself. */
      if (h->t->slots[s].state != SLOT_FREE && !tl__alive(h, s))
        tl__recover(h, s);
      tl__crit_unlock(h);
    }
  }
  atomic_store(&w->ended, 1);
  return NULL;
}

/* Joins and frees the watchers that ended. `lock` held. */
static void
tl__reap(tl_host_t *h)
{
  for (tl_watch_t **p = &h->retired; *p != NULL;) {
    tl_watch_t *w = *p;
    if (!atomic_load(&w->ended)) {
      p = &w->next;
      continue;
    }
    *p = w->next;
    tl__hp_thread_join(w->thread);
    free(w);
  }
  for (uint32_t s = 0; s < TL_HOST_SLOTS; s++) {
    tl_watch_t *w = h->watch[s];
    if (w != NULL && atomic_load(&w->ended)) {
      tl__hp_thread_join(w->thread);
      free(w);
      h->watch[s] = NULL;
    }
  }
}

/* Cancels the watcher of slot `s` (it ends at once if it still waits)
 * and retires it, to be joined once it ended. `lock` held. */
static void
tl__retire(tl_host_t *h, uint32_t s)
{
  tl_watch_t *w = h->watch[s];
  if (w == NULL)
    return;
  if (!w->cancelled) {
    w->cancelled = 1;
    tl__hp_thread_cancel(w->thread);
  }
  h->watch[s] = NULL;
  w->next = h->retired;
  h->retired = w;
}

/* Marks the slots with requests ahead of this attachment's waiting ones
 * (holders and earlier waiters): the processes whose death it must notice.
 * Grants are in order, so the set only shrinks, except when a steal puts a
 * process ahead, which rings `rewatch`. Runs in crit. */
static void
tl__ahead(tl_host_t *h, uint8_t ahead[TL_HOST_SLOTS])
{
  memset(ahead, 0, TL_HOST_SLOTS);
  for (uint32_t i = 0; i < TL_HOST_NODES; i++) {
    tl_node_t *n = &h->t->nodes[i];
    if (n->slot != h->slot || atomic_load(&n->state) != TL_HOST_WAITING ||
        n->name >= TL_HOST_NAMES)
      continue;
    int bad = 0;
    uint32_t cur = h->t->names[n->name].head;
    for (uint32_t steps = 0; cur != 0 && cur != i + 1; steps++) {
      h->walked++;
      tl_node_t *c = tl__node_at(h, cur, &bad);
      if (bad || steps > TL_HOST_NODES)
        break;
      if (c->slot < TL_HOST_SLOTS && c->slot != h->slot)
        ahead[c->slot] = 1;
      cur = c->next;
    }
  }
}

/* Starts a watcher for every slot marked in `ahead` that has none.
 * Returns 0, or TL_HOST_ETHREAD when one could not start (the ones that
 * did stay: they are needed by the requests already waiting, or are
 * cancelled by the next tl__prune). */
static int
tl__watch(tl_host_t *h, const uint8_t ahead[TL_HOST_SLOTS])
{
  int r = 0;

  tl__hp_mutex_lock(h->lock);
  tl__reap(h);
  for (uint32_t s = 0; s < TL_HOST_SLOTS && r == 0; s++) {
    if (s == h->slot || !ahead[s] || atomic_load(&h->stopping))
      continue;
    if (h->watch[s] != NULL && !h->watch[s]->cancelled)
      continue;
    tl__retire(h, s);
    tl_watch_t *w = calloc(1, sizeof(*w));
    if (w == NULL) {
      r = TL_HOST_ETHREAD;
      break;
    }
    w->h = h;
    w->slot = s;
    w->thread = tl__hp_thread_start(tl__watcher, w, "tl-host-watch");
    if (w->thread == NULL) {
      free(w);
      r = TL_HOST_ETHREAD;
      break;
    }
    h->watch[s] = w;
  }
  tl__hp_mutex_unlock(h->lock);
  return r;
}

/* Whether this attachment has a request waiting (mine[] records it). */
static int
tl__waiting_any(tl_host_t *h)
{
  for (uint32_t i = 0; i < TL_HOST_NODES; i++)
    if (atomic_load_explicit(&h->mine[i], memory_order_relaxed) ==
        TL_HOST_WAITING)
      return 1;
  return 0;
}

/* An attachment with no waiting request needs no watcher: the ones it
 * has are cancelled (those still waiting for a liveness byte end at once)
 * and joined once ended. Called without the section, after the calls
 * that end waits (a poll, a release, a blocking wait). */
static void
tl__prune(tl_host_t *h)
{
  if (tl__waiting_any(h))
    return;
  tl__hp_mutex_lock(h->lock);
  for (uint32_t s = 0; s < TL_HOST_SLOTS; s++)
    tl__retire(h, s);
  tl__reap(h);
  tl__hp_mutex_unlock(h->lock);
}

/* The slots that may have requests in `e`'s list, all ahead of a request
 * about to be put at its tail (the list's watch set). Runs in crit. */
static void
tl__ahead_of(tl_host_t *h, tl_name_t *e, uint8_t ahead[TL_HOST_SLOTS])
{
  for (uint32_t s = 0; s < TL_HOST_SLOTS; s++)
    ahead[s] =
        s != h->slot && e->head != 0 && (e->seen[s / 64] >> (s % 64) & 1) != 0;
}

/* ---- attach and detach ------------------------------------------------- */

/* Re-initialises the table (first attacher, byte 0 write-locked: nobody
 * else uses it). Tokens go on above the old table's fence when its header
 * is still readable, and above the fence file's record in any case: the
 * wall clock is read only when neither exists (a new directory). Returns
 * 0, or -1 when the fence file cannot be written. */
static int
tl__init(tl_host_t *h, size_t size, uint64_t dev, uint64_t ino,
         const uint8_t boot[16])
{
  tl_table_t *t = h->t;
  uint64_t fence = 0, rec[2] = { 0, 0 };
  uint32_t generation = 0;
  uint64_t now = tl__hp_realtime_us();

  if (t->hdr.magic == TL_MAGIC &&
      (t->hdr.version == 1 || t->hdr.version == TL_VERSION)) {
    fence = t->hdr.fence;
    generation = t->hdr.generation;
  }
  if (tl__hp_read(h->fence_fd, rec, sizeof(rec), 0) == (long)sizeof(rec) &&
      rec[0] == TL_FENCE_MAGIC && rec[1] > fence)
    fence = rec[1];
  if (fence == 0)
    fence = now;
  if (tl__fence_write(h->fence_fd, fence + TL_FENCE_BLOCK) != 0)
    return -1;
  memset(t, 0, size);
  t->hdr.version = TL_VERSION;
  t->hdr.size = (uint32_t)size;
  t->hdr.nslots = TL_HOST_SLOTS;
  t->hdr.nnames = TL_HOST_NAMES;
  t->hdr.nnodes = TL_HOST_NODES;
  t->hdr.name_max = TL_HOST_NAME_MAX;
  t->hdr.fence = fence;
  t->hdr.fence_limit = fence + TL_FENCE_BLOCK;
  t->hdr.initialised_us = now;
  t->hdr.generation = generation + 1;
  t->hdr.ident_dev = dev;
  t->hdr.ident_ino = ino;
  memcpy(t->hdr.boot_id, boot, 16);
  atomic_thread_fence(memory_order_release);
  t->hdr.magic = TL_MAGIC;
  return 0;
}

static int
tl__check_header(tl_table_t *t, size_t size)
{
  return t->hdr.magic == TL_MAGIC && t->hdr.version == TL_VERSION &&
         t->hdr.size == size && t->hdr.nslots == TL_HOST_SLOTS &&
         t->hdr.nnames == TL_HOST_NAMES && t->hdr.nnodes == TL_HOST_NODES &&
         t->hdr.name_max == TL_HOST_NAME_MAX;
}

/* Whether a valid table of this boot was made through another identity
 * of the file and has slots attached: processes this one cannot see (their
 * byte locks are on another inode) may be using it. A first attacher must
 * not rebuild it under them. Slots of processes that died stay attached
 * until one of their path attaches again (and rebuilds it) or a reboot. */
static int
tl__other_path(tl_table_t *t, uint64_t dev, uint64_t ino,
               const uint8_t boot[16])
{
  if (t->hdr.magic != TL_MAGIC || t->hdr.version != TL_VERSION ||
      memcmp(t->hdr.boot_id, boot, 16) != 0 ||
      (t->hdr.ident_dev == dev && t->hdr.ident_ino == ino))
    return 0;
  for (uint32_t s = 0; s < TL_HOST_SLOTS; s++)
    if (t->slots[s].state != SLOT_FREE)
      return 1;
  return 0;
}

tl_host_t *
tl_host_attach(const char *dir, tl_host_error_t *e)
{
  size_t size = (sizeof(tl_table_t) + 4095) & ~(size_t)4095;
  uint64_t dev = 0, ino = 0, have = 0;
  uint8_t boot[16];
  tl_hdr_t hdr;
  tl_host_t *h = calloc(1, sizeof(*h));
  int first, dirfd;
  uint32_t holder = 0;

  if (h == NULL) {
    tl__host_fail(e, TL_HOST_ESYS, ENOMEM, "out of memory");
    return NULL;
  }
  h->fd = -1;
  h->fence_fd = -1;
  h->lock = tl__hp_mutex_new();
  h->local = tl__hp_mutex_new();
  if (h->lock == NULL || h->local == NULL) {
    tl__host_fail(e, TL_HOST_ESYS, ENOMEM, "out of memory");
    goto fail;
  }
  dirfd = tl__hp_open_dir(dir, 1, e);
  if (dirfd < 0)
    goto fail;
  h->fd = tl__hp_open_file(dirfd, dir, TL_FILE, e);
  if (h->fd >= 0) {
    h->fence_fd = tl__hp_open_file(dirfd, dir, TL_FENCE_FILE, e);
    if (h->fence_fd < 0) {
      tl__hp_close(h->fd);
      h->fd = -1;
    }
  }
  tl__hp_close(dirfd);
  if (h->fd < 0)
    goto fail;
  tl__hp_boot_id(boot);
  /* First attacher: nobody else holds byte 0, so the file is ours to
   * re-initialise (LMDB's and SQLite's approach). Otherwise a read lock,
   * waited for only as long as an initialisation can take: a lock that
   * stays is someone else's, which must not hang this call for ever. */
  first = tl__hp_trylock(h->fd, 0, 1) == 0;
  if (!first &&
      tl__hp_lock_within(h->fd, 0, 0, TL_ATTACH_WAIT_MS, &holder) != 0) {
    if (holder != 0)
      tl__host_fail(e, TL_HOST_EATTACH, 0,
                    "byte 0 of the table file in '%s' has been locked by "
                    "process %u for %d s (only threadlock/host may lock it)",
                    dir, (unsigned)holder, TL_ATTACH_WAIT_MS / 1000);
    else
      tl__host_fail(e, TL_HOST_EATTACH, 0,
                    "byte 0 of the table file in '%s' has been locked for "
                    "%d s (a process attaching now is stopped, or another "
                    "program locks it)",
                    dir, TL_ATTACH_WAIT_MS / 1000);
    goto fail;
  }
  if (tl__hp_identity(h->fd, &dev, &ino, &have) != 0) {
    tl__host_fail(e, TL_HOST_ESYS, errno, "cannot check the table file: %s",
                  strerror(errno));
    goto fail;
  }
  if (first) {
    if (tl__hp_allocate(h->fd, size) != 0) {
      tl__host_fail(e, TL_HOST_ESYS, errno,
                    "cannot size the table file in '%s': %s", dir,
                    strerror(errno));
      goto fail;
    }
  } else {
    /* Read (not mapped: it may be short) to tell another version from a
     * corrupt file. */
    memset(&hdr, 0, sizeof(hdr));
    long n = tl__hp_read(h->fd, &hdr, sizeof(hdr), 0);
    if (n >= 16 && hdr.magic == TL_MAGIC && hdr.version != TL_VERSION) {
      tl__host_fail(e, TL_HOST_EVERSION, 0,
                    "the table file in '%s' has layout version %u, and this "
                    "threadlock uses version %u: it is in use by processes "
                    "of another threadlock version, which cannot share locks "
                    "with this one; it is rebuilt when none of them uses it",
                    dir, (unsigned)hdr.version, (unsigned)TL_VERSION);
      goto fail;
    }
    if (have < size || (size_t)n < sizeof(hdr) || hdr.magic != TL_MAGIC) {
      tl__host_fail(e, TL_HOST_ECORRUPT, 0,
                    "the table file in '%s' is corrupt (%s); it is rebuilt "
                    "when no process uses it",
                    dir, have < size ? "too small" : "bad header");
      goto fail;
    }
  }
  h->t = tl__hp_map(h->fd, size);
  if (h->t == NULL) {
    tl__host_fail(e, TL_HOST_ESYS, errno,
                  "cannot map the table file in '%s': %s", dir,
                  strerror(errno));
    goto fail;
  }
  h->size = size;
  if (first) {
    if (tl__other_path(h->t, dev, ino, boot))
      goto other_path;
    if (tl__init(h, size, dev, ino, boot) != 0) {
      tl__host_fail(e, TL_HOST_ESYS, errno,
                    "cannot write the fence file in '%s': %s", dir,
                    strerror(errno));
      goto fail;
    }
    /* Downgrade to shared: later attachers see us. */
    tl__hp_trylock(h->fd, 0, 0);
  } else if (!tl__check_header(h->t, size)) {
    tl__host_fail(e, TL_HOST_ECORRUPT, 0,
                  "the table file in '%s' is corrupt (bad header); it is "
                  "rebuilt when no process uses it",
                  dir);
    goto fail;
  } else if (h->t->hdr.ident_dev != dev || h->t->hdr.ident_ino != ino) {
    goto other_path;
  }
  h->generation = h->t->hdr.generation;
  /* Claim a slot: a free one first, else one whose process is gone. */
  h->slot = TL_HOST_SLOTS;
  for (int pass = 0; pass < 2 && h->slot == TL_HOST_SLOTS; pass++) {
    for (uint32_t s = 0; s < TL_HOST_SLOTS; s++) {
      if (pass == 0 && h->t->slots[s].state != SLOT_FREE)
        continue;
      if (tl__hp_trylock(h->fd, TL_LIVE + s, 1) == 0) {
        h->slot = s;
        break;
      }
    }
  }
  if (h->slot == TL_HOST_SLOTS) {
    tl__host_fail(e, TL_HOST_EATTACH, 0,
                  "every process slot of the table in '%s' is in use (%d)", dir,
                  TL_HOST_SLOTS);
    goto fail;
  }
  if (tl__crit_lock(h, -1) != 0) {
    tl__host_fail(e, TL_HOST_ECORRUPT, 0,
                  "the table file in '%s' shrank or was rebuilt while "
                  "attaching",
                  dir);
    goto fail;
  }
  tl_slot_t *me = &h->t->slots[h->slot];
  if (me->state != SLOT_FREE)
    tl__recover(h, h->slot);
  tl__sweep(h);
  const char *fake = getenv("THREADLOCK_HOST_TEST_PID");
  me->pid = fake != NULL ? (uint32_t)strtoul(fake, NULL, 10) : tl__hp_pid();
  me->start_time = tl__hp_start_time();
  me->gen++;
  me->client = tl__next_token(h);
  me->state = SLOT_ATTACHED;
  tl__crit_unlock(h);
  return h;

other_path:
  tl__host_fail(e, TL_HOST_EATTACH, 0,
                "the table file in '%s' is in use through another path to "
                "the same file (device %llu inode %llu here, device %llu "
                "inode %llu there), such as an overlay mount and its upper "
                "directory, whose processes this one cannot see; every "
                "process must use the same path",
                dir, (unsigned long long)dev, (unsigned long long)ino,
                (unsigned long long)h->t->hdr.ident_dev,
                (unsigned long long)h->t->hdr.ident_ino);
fail:
  if (h->t != NULL)
    tl__hp_unmap(h->t, size);
  if (h->fd >= 0)
    tl__hp_close(h->fd);
  if (h->fence_fd >= 0)
    tl__hp_close(h->fence_fd);
  if (h->lock != NULL)
    tl__hp_mutex_free(h->lock);
  if (h->local != NULL)
    tl__hp_mutex_free(h->local);
  free(h);
  return NULL;
}

void
tl_host_detach(tl_host_t *h)
{
  atomic_store(&h->stopping, 1);
  /* A table that shrank or was rebuilt is not touched: the byte locks go
   * with the descriptor, and the others recover what was ours. */
  if (tl__crit_lock(h, -1) != 0)
    goto gone;
  /* Everything of ours leaves the table, as a death would, except that
   * nobody is told the owner died. */
  for (uint32_t i = 0; i < TL_HOST_NODES; i++) {
    tl_node_t *n = &h->t->nodes[i];
    if (n->slot != h->slot || atomic_load(&n->state) == TL_HOST_FREE)
      continue;
    uint32_t st = atomic_load(&n->state);
    if ((st == TL_HOST_WAITING || st == TL_HOST_HELD) &&
        n->name < TL_HOST_NAMES) {
      uint32_t at = n->name;
      tl__unlink(h, n);
      tl__node_free(h, n);
      tl__process(h, at);
    } else {
      tl__node_free(h, n);
    }
  }
  h->t->slots[h->slot].state = SLOT_FREE;
  tl__crit_unlock(h);
gone:
  tl__hp_unlock(h->fd, TL_LIVE + h->slot);
  tl_host_stop_watchers(h);
  tl__hp_unmap(h->t, h->size);
  tl__hp_close(h->fd);
  tl__hp_close(h->fence_fd);
  tl__hp_mutex_free(h->lock);
  tl__hp_mutex_free(h->local);
  free(h);
}

/* ---- requests ---------------------------------------------------------- */

/* Whether a new request of `excl` at the tail of `e` is grantable now:
 * nothing waits, and nothing held conflicts. In O(1): a list holds its
 * held requests first and its waiting ones after them (grants go in
 * order, stopping at the first request that must wait, and a steal puts
 * its grant first), so the tail says whether any waits, and the head
 * whether what is held is exclusive (an exclusive holder is alone). Sets
 * *dead when the head or the tail in the way belongs to a dead slot (a
 * dead waiter in the middle is recovered by the watchers behind it). */
static int
tl__grantable(tl_host_t *h, tl_name_t *e, int excl, int *dead)
{
  int bad = 0;
  tl_node_t *head = tl__node_at(h, e->head, &bad);
  tl_node_t *tail = tl__node_at(h, e->tail, &bad);

  if (bad || (head == NULL) != (tail == NULL))
    return TL_HOST_ECORRUPT;
  if (head == NULL)
    return 1;
  if (head->slot >= TL_HOST_SLOTS || tail->slot >= TL_HOST_SLOTS)
    return TL_HOST_ECORRUPT;
  if (atomic_load(&tail->state) != TL_HOST_WAITING && !excl &&
      !(head->flags & TL_HOST_EXCLUSIVE))
    return 1;
  if (!tl__alive(h, head->slot) || !tl__alive(h, tail->slot))
    *dead = 1;
  return 0;
}

int
tl_host_request(tl_host_t *h, const uint16_t *name, size_t len, int flags,
                int64_t crit_ms, uint32_t *node, uint64_t *token,
                int *owner_died)
{
  int excl = (flags & TL_HOST_EXCLUSIVE) != 0;
  int r, at, dead = 0;
  uint8_t ahead[TL_HOST_SLOTS];

  if (len > TL_HOST_NAME_MAX)
    return TL_HOST_ENAMES;
  if ((r = tl__crit_lock(h, crit_ms)) != 0)
    return r;
  at = tl__name_find(h, name, len, 1);
  if (at < 0) {
    r = at;
    goto out;
  }
  tl_name_t *e = &h->t->names[at];
  tl_node_t *n = tl__node_alloc(h);
  if (n == NULL) {
    tl__name_trim(h, (uint32_t)at);
    r = TL_HOST_ENODES;
    goto out;
  }
  memset(n, 0, sizeof(*n));
  n->slot = h->slot;
  n->name = (uint32_t)at;
  n->flags = (uint32_t)(flags & (TL_HOST_EXCLUSIVE | TL_HOST_SYNC));
  if (flags & TL_HOST_STEAL) {
    /* Web Locks "request a lock", steal: every held lock of the name is
     * released (its owner is told), and the request goes first. */
    int bad = 0;
    uint32_t cur = e->head;
    for (uint32_t steps = 0; cur != 0; steps++) {
      h->walked++;
      tl_node_t *c = tl__node_at(h, cur, &bad);
      if (bad || steps > TL_HOST_NODES) {
        r = TL_HOST_ECORRUPT;
        goto out;
      }
      cur = c->next;
      if (atomic_load(&c->state) == TL_HOST_HELD) {
        tl__unlink(h, c);
        if (c->slot < TL_HOST_SLOTS && tl__alive(h, c->slot)) {
          atomic_store(&c->state, TL_HOST_STOLEN);
          tl__ring(h, c, 1);
        } else {
          atomic_store(&c->state, TL_HOST_FREE);
        }
      } else if (c->slot < TL_HOST_SLOTS && c->slot != h->slot) {
        /* A waiter now waits behind a new holder: its attachment's helper
         * makes sure that holder is watched (tl_host_doorbell_wait). */
        atomic_fetch_add(&h->t->slots[c->slot].rewatch, 1);
        tl__doorbell_ring(h, c->slot);
      }
    }
    e->died = 0;
    if (e->head == 0)
      memset(e->seen, 0, sizeof(e->seen));
    tl__seen(e, n->slot);
    n->next = e->head;
    e->head = tl__node_ref(h, n);
    if (e->tail == 0)
      e->tail = e->head;
    atomic_store(&n->state, TL_HOST_WAITING);
    tl__grant(h, e, n, 0);
  } else {
    r = tl__grantable(h, e, excl, &dead);
    if (r < 0)
      goto undo;
    if (!r && dead) {
      /* Whoever is in the way died: recover it before deciding. The
       * recovery may have freed the name's entry (nobody else wanted
       * it): look it up again. */
      tl__sweep(h);
      dead = 0;
      at = tl__name_find(h, name, len, 1);
      if (at < 0) {
        r = at;
        goto out;
      }
      e = &h->t->names[at];
      n->name = (uint32_t)at;
      r = tl__grantable(h, e, excl, &dead);
      if (r < 0)
        goto undo;
    }
    if (!r && (flags & TL_HOST_IF_AVAILABLE)) {
      r = TL_HOST_UNAVAILABLE;
      goto undo;
    }
    if (!r) {
      /* The processes ahead are watched (their death noticed) from now
       * on; the watchers start before the request is linked, so that one
       * that cannot start leaves nothing behind but an error. */
      tl__ahead_of(h, e, ahead);
      if (tl__watch(h, ahead) != 0) {
        r = TL_HOST_ETHREAD;
        goto undo;
      }
    }
    atomic_store(&n->state, TL_HOST_WAITING);
    n->next = 0;
    uint32_t ref = tl__node_ref(h, n);
    if (e->tail == 0)
      memset(e->seen, 0, sizeof(e->seen));
    tl__seen(e, n->slot);
    if (e->tail == 0) {
      e->head = ref;
    } else {
      int bad = 0;
      tl_node_t *last = tl__node_at(h, e->tail, &bad);
      if (bad) {
        r = TL_HOST_ECORRUPT;
        goto undo;
      }
      last->next = ref;
    }
    if (!r && tl__fault_armed() == 1)
      raise(SIGKILL); /* the tail still points at the old last node */
    if (!r && tl__fault_armed() == 2) {
      /* Stopped inside the section (once), as a debugger or SIGSTOP may. */
      atomic_store_explicit(&tl__fault, 0, memory_order_relaxed);
      raise(SIGSTOP);
    }
    e->tail = ref;
    if (r)
      tl__grant(h, e, n, 0);
  }
  h->mine[tl__node_ref(h, n) - 1] = (uint8_t)atomic_load(&n->state);
  atomic_fetch_add(&h->owned, 1);
  *node = tl__node_ref(h, n) - 1;
  *token = n->token;
  *owner_died = (int)n->owner_died;
  r = (int)atomic_load(&n->state);
  tl__crit_unlock(h);
  return r;

undo:
  atomic_store(&n->state, TL_HOST_FREE);
  tl__name_trim(h, (uint32_t)at);
out:
  tl__crit_unlock(h);
  return r;
}

static tl_node_t *
tl__mine(tl_host_t *h, uint32_t node)
{
  if (node >= TL_HOST_NODES || h->mine[node] == TL_HOST_FREE)
    return NULL;
  tl_node_t *n = &h->t->nodes[node];
  return n->slot == h->slot ? n : NULL;
}

int
tl_host_release(tl_host_t *h, uint32_t node, int64_t crit_ms)
{
  int r;

  if ((r = tl__crit_lock(h, crit_ms)) != 0)
    return r;
  tl_node_t *n = tl__mine(h, node);
  if (n == NULL) {
    tl__crit_unlock(h);
    return TL_HOST_ENOTMINE;
  }
  r = (int)atomic_load(&n->state);
  if ((r == TL_HOST_WAITING || r == TL_HOST_HELD) && n->name < TL_HOST_NAMES) {
    uint32_t at = n->name;
    tl__unlink(h, n);
    tl__node_free(h, n);
    tl__process(h, at);
  } else {
    tl__node_free(h, n);
  }
  tl__crit_unlock(h);
  tl__prune(h);
  return r;
}

int
tl_host_wait(tl_host_t *h, uint32_t node, int64_t timeout_ms,
             const tl_host_stop_t *stop, uint64_t *token, int *owner_died)
{
  uint64_t deadline = timeout_ms < 0 ? 0 : tl__hp_monotonic_ms() + timeout_ms;
  int interrupted = 0;
  tl_node_t *n;
  int r;

  if (node >= TL_HOST_NODES || h->mine[node] == TL_HOST_FREE)
    return TL_HOST_ENOTMINE;
  n = &h->t->nodes[node];
  for (;;) {
    if (tl__table_ok(h) != 0)
      return TL_HOST_ECORRUPT;
    uint32_t w = atomic_load(&n->word);
    if (atomic_load(&n->state) != TL_HOST_WAITING)
      break;
    int64_t left = -1;
    if (timeout_ms >= 0) {
      uint64_t now = tl__hp_monotonic_ms();
      if (now >= deadline)
        break;
      left = (int64_t)(deadline - now);
    }
    /* A thread that may be terminated (a worker) sleeps in slices and asks
     * between them, as threadlock's other blocking waits do. */
    if (stop != NULL && (left < 0 || left > stop->slice_ms))
      left = stop->slice_ms;
    if (tl__hp_wait((uint32_t *)&n->word, w, left) == TL_HP_TIMED_OUT &&
        stop != NULL && stop->fn(stop->data)) {
      interrupted = 1;
      break;
    }
  }
  /* Granted (or stolen): the grant wrote the token before the state, and
   * nobody but this thread changes the node of a live owner now, so no
   * lock is needed to read it. `mine` is this attachment's JS thread's. */
  r = (int)atomic_load(&n->state);
  if (r == TL_HOST_HELD || r == TL_HOST_STOLEN) {
    h->mine[node] = (uint8_t)r;
    *token = n->token;
    *owner_died = (int)n->owner_died;
    tl__prune(h);
    return r;
  }
  /* The withdrawal does not wait for the section either: when another
   * process holds it, the caller is told (TL_HOST_EAGAIN) and withdraws
   * the request later, from a thread that may wait. */
  if ((r = tl__crit_lock(h, 0)) != 0)
    return r == TL_HOST_EAGAIN ? TL_HOST_EAGAIN : r;
  r = (int)atomic_load(&n->state);
  if (r == TL_HOST_WAITING) {
    /* Timed out or interrupted: the request leaves its queue, which may
     * let the ones behind it through. */
    uint32_t at = n->name;
    tl__unlink(h, n);
    tl__node_free(h, n);
    if (at < TL_HOST_NAMES)
      tl__process(h, at);
    r = interrupted ? TL_HOST_EINTR : TL_HOST_ETIMEDOUT;
  } else {
    h->mine[node] = (uint8_t)r;
    *token = n->token;
    *owner_died = (int)n->owner_died;
  }
  tl__crit_unlock(h);
  tl__prune(h);
  return r;
}

int
tl_host_poll(tl_host_t *h, tl_host_poll_cb visit, void *data, int64_t crit_ms)
{
  int r;

  if ((r = tl__crit_lock(h, crit_ms)) != 0)
    return r;
  for (uint32_t i = 0; i < TL_HOST_NODES; i++) {
    if (h->mine[i] == TL_HOST_FREE)
      continue;
    tl_node_t *n = &h->t->nodes[i];
    uint32_t st = atomic_load(&n->state);
    if (n->slot != h->slot || st == TL_HOST_FREE) {
      /* Taken away by a repair: the request is lost as if stolen. */
      h->mine[i] = TL_HOST_FREE;
      atomic_fetch_sub(&h->owned, 1);
      visit(data, i, TL_HOST_STOLEN, 0, 0);
      continue;
    }
    if (st == h->mine[i])
      continue;
    h->mine[i] = (uint8_t)st;
    visit(data, i, (int)st, n->token, (int)n->owner_died);
  }
  tl__crit_unlock(h);
  tl__prune(h);
  return 0;
}

int
tl_host_query(tl_host_t *h, tl_host_query_cb visit, void *data, int64_t crit_ms)
{
  int bad = 0, r;

  if ((r = tl__crit_lock(h, crit_ms)) != 0)
    return r;
  tl__sweep(h);
  for (uint32_t i = 0; i < TL_HOST_NAMES; i++) {
    tl_name_t *e = &h->t->names[i];
    if (e->state != NAME_USED)
      continue;
    if (e->len > TL_HOST_NAME_MAX) {
      bad = 1;
      break;
    }
    uint32_t cur = e->head;
    for (uint32_t steps = 0; cur != 0 && !bad; steps++) {
      tl_node_t *n = tl__node_at(h, cur, &bad);
      if (bad || steps > TL_HOST_NODES || n->slot >= TL_HOST_SLOTS) {
        bad = 1;
        break;
      }
      tl_slot_t *s = &h->t->slots[n->slot];
      visit(data, e->name, e->len, (n->flags & TL_HOST_EXCLUSIVE) != 0,
            atomic_load(&n->state) == TL_HOST_HELD, s->client, s->pid);
      cur = n->next;
    }
  }
  tl__crit_unlock(h);
  return bad ? TL_HOST_ECORRUPT : 0;
}

uint32_t *
tl_host_doorbell(tl_host_t *h)
{
  return (uint32_t *)&h->t->slots[h->slot].doorbell;
}

int
tl_host_doorbell_check(tl_host_t *h, uint32_t *seen)
{
  tl_slot_t *me = &h->t->slots[h->slot];

  if (atomic_load(&h->stopping))
    return 0;
  /* The helper reads the slot only after checking that it can. */
  if (tl__table_ok(h) != 0)
    return -1;
  uint32_t v = atomic_load(&me->doorbell);
  if (v == *seen)
    return 0;
  *seen = v;
  return 1;
}

int
tl_host_rewatch(tl_host_t *h, int64_t crit_ms)
{
  tl_slot_t *me = &h->t->slots[h->slot];
  uint8_t ahead[TL_HOST_SLOTS];
  int r;

  if (atomic_load(&h->stopping) || atomic_load(&h->owned) == 0 ||
      tl__table_ok(h) != 0)
    return 0;
  uint32_t rw = atomic_load(&me->rewatch);
  if (rw == h->rewatch_seen)
    return 0;
  if ((r = tl__crit_lock(h, crit_ms)) != 0)
    return r;
  h->rewatch_seen = rw;
  tl__ahead(h, ahead);
  tl__crit_unlock(h);
  tl__watch(h, ahead);
  return 0;
}

int
tl_host_doorbell_wait(tl_host_t *h, uint32_t *seen)
{
  uint32_t *d = tl_host_doorbell(h);

  for (;;) {
    if (atomic_load(&h->stopping))
      return -1;
    int c = tl_host_doorbell_check(h, seen);
    if (c != 0)
      return c > 0 ? 0 : -2;
    tl__hp_wait(d, *seen, -1);
  }
}

void
tl_host_doorbell_stop(tl_host_t *h)
{
  atomic_store(&h->stopping, 1);
  tl__doorbell_ring(h, h->slot);
}

/* Cancels and joins the watcher threads; none starts after it. */
void
tl_host_stop_watchers(tl_host_t *h)
{
  atomic_store(&h->stopping, 1);
  tl__hp_mutex_lock(h->lock);
  for (uint32_t s = 0; s < TL_HOST_SLOTS; s++)
    tl__retire(h, s);
  while (h->retired != NULL) {
    tl_watch_t *w = h->retired;
    h->retired = w->next;
    tl__hp_thread_join(w->thread);
    free(w);
  }
  tl__hp_mutex_unlock(h->lock);
}

int
tl_host_stats(tl_host_t *h, uint32_t *slot, uint32_t *nodes, uint32_t *slots,
              uint32_t *names, uint64_t *walked)
{
  *slot = h->slot;
  *nodes = *slots = *names = 0;
  if (tl__crit_lock(h, -1) != 0)
    return TL_HOST_ECORRUPT;
  for (uint32_t i = 0; i < TL_HOST_NODES; i++)
    *nodes += atomic_load(&h->t->nodes[i].state) != TL_HOST_FREE;
  for (uint32_t i = 0; i < TL_HOST_SLOTS; i++)
    *slots += h->t->slots[i].state != SLOT_FREE;
  for (uint32_t i = 0; i < TL_HOST_NAMES; i++)
    *names += h->t->names[i].state == NAME_USED;
  *walked = h->walked;
  tl__crit_unlock(h);
  return 0;
}
