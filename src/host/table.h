/* The table of threadlock/host: a fixed-size file mapped MAP_SHARED by every
 * attached process, holding process slots, named-lock entries and request
 * nodes, and the protocol that changes it. This header is the core's own
 * (not its interface, host.h): the layout, the attachment, and the
 * functions its files share. The files, bottom up, each calling only
 * those below it: layout.c (checked access, identity, tokens), doorbell.c,
 * lists.c (names, lists, grants), repair.c (recovery), crit.c (the
 * critical section), watch.c (liveness watchers), then request.c (the
 * request protocol) and attach.c (attach, detach).
 *
 * Layout (version 2), every offset fixed by the constants in host.h:
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
#ifndef TL_HOST_TABLE_H_
#define TL_HOST_TABLE_H_

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
/* Version 3 keeps version 2's layout and changes the protocol (barging,
 * below): a process of version 2 would never mark its waiters old and
 * could be barged past for ever, so the two do not share a table. */
#define TL_VERSION 3u
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
#define TL_PRUNE_IDLE_MS 100   /* watchers outlive the last wait this long */
#define TL_CRIT_SLICE_MS 50    /* re-check the owner's liveness this often */
/* Barging (a new request taking a free name ahead of its waiters), as
 * AsyncLock's default policy: after this long a waiter is old, and no
 * request barges ahead of an old waiter. */
#define TL_BARGE_MS 1
/* Node flags beside TL_HOST_EXCLUSIVE and TL_HOST_SYNC (host.h). */
#define TL_NODE_OLD 0x100u   /* waited TL_BARGE_MS: served next */
#define TL_NODE_RUNG 0x200u  /* a release left the name free and rang it */
#define TL_NODE_OFFER 0x400u /* rung, and its claim has not run yet */

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
  /* Bumped whenever `seen` gains a slot (or is cleared, or the lists are
   * rebuilt): a waiter whose node records the current epoch watches every
   * slot of `seen` (barging, request.c). */
  uint32_t epoch;
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
  /* TL_HOST_EXCLUSIVE, TL_HOST_SYNC, TL_NODE_*: changed in crit; atomic
   * because the poll reads TL_NODE_OFFER without it. */
  _Atomic uint32_t flags;
  _Atomic uint32_t word; /* a SYNC waiter sleeps on it */
  uint32_t owner_died;
  uint32_t epoch; /* a waiter's: its name's epoch when it was linked */
  /* The grant's fencing token; while the node waits, the monotonic µs at
   * which it was linked (tl__old). */
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
  _Atomic uint32_t waiting;            /* entries of `mine` that are WAITING */
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
  /* Watchers started and not joined yet (changed under `lock`, read
   * without it by tl__prune's quick test). */
  _Atomic uint32_t watchers;
  /* When the attachment last had a request waiting, as tl__prune saw it
   * (monotonic ms): its watchers end TL_PRUNE_IDLE_MS after. */
  _Atomic uint64_t busy_ms;
};

/* Functions shared by the files of the core, by file, bottom up (each
 * calls only those of the files above it in this list, and its own). */

/* layout.c */
extern _Atomic int tl__fault;
int tl__fault_armed(void);
uint64_t tl__hash(const uint16_t *s, size_t len);
int tl__alive(tl_host_t *h, uint32_t s);
int tl__table_ok(tl_host_t *h);
tl_node_t *tl__node_at(tl_host_t *h, uint32_t ref, int *bad);
uint32_t tl__node_ref(tl_host_t *h, tl_node_t *n);
/* Sets mine[i], keeping `waiting` (the entries that are WAITING). */
void tl__mine_set(tl_host_t *h, uint32_t i, uint32_t state);
uint64_t tl__next_token(tl_host_t *h);
int tl__init(tl_host_t *h, size_t size, uint64_t dev, uint64_t ino,
             const uint8_t boot[16]);
int tl__check_header(tl_table_t *t, size_t size);
int tl__other_path(tl_table_t *t, uint64_t dev, uint64_t ino,
                   const uint8_t boot[16]);

/* doorbell.c */
void tl__doorbell_ring(tl_host_t *h, uint32_t s);
void tl__ring(tl_host_t *h, tl_node_t *n, int steal);

/* lists.c */
void tl__seen(tl_name_t *e, uint32_t s);
int tl__old(const tl_node_t *n, uint64_t now_us);
int tl__name_find(tl_host_t *h, const uint16_t *name, size_t len, int create);
void tl__name_trim(tl_host_t *h, uint32_t at);
int tl__list_unlink(tl_host_t *h, tl_node_t *n);
void tl__grant(tl_host_t *h, tl_name_t *e, tl_node_t *n, int ring);
int tl__list_process(tl_host_t *h, uint32_t at, int barge);
tl_node_t *tl__node_alloc(tl_host_t *h);
void tl__node_free(tl_host_t *h, tl_node_t *n);

/* repair.c */
void tl__recover(tl_host_t *h, uint32_t s);
void tl__sweep(tl_host_t *h);
void tl__repair(tl_host_t *h);

/* crit.c */
int tl__crit_lock(tl_host_t *h, int64_t timeout_ms);
void tl__crit_unlock(tl_host_t *h);

/* watch.c */
void tl__ahead(tl_host_t *h, uint8_t ahead[TL_HOST_SLOTS]);
int tl__watch(tl_host_t *h, const uint8_t ahead[TL_HOST_SLOTS]);
void tl__prune(tl_host_t *h);
void tl__ahead_of(tl_host_t *h, tl_name_t *e, uint8_t ahead[TL_HOST_SLOTS]);

#endif
