/* Shared memory of threadlock/host: a file in a host directory mapped
 * MAP_SHARED, whose data region becomes a SharedArrayBuffer
 * (binding_shm.c). This is the core's interface; it includes no Node-API
 * header.
 *
 * The file: a header page (TL_SHM_HEADER bytes: magic, layout version,
 * the data size), then the data, zero-filled when the file is created.
 * Every open maps the file anew (one mapping per SharedArrayBuffer made),
 * and every mapping is in a process-wide registry of address ranges, so
 * that the glue can tell whether an address lies in shared memory, whatever
 * JavaScript object (or worker thread) reaches it.
 */
#ifndef TL_SHM_H_
#define TL_SHM_H_

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "host.h"

/* The header before the data (the data stays page-aligned): the header
 * page, then the waiter nodes (shm_wait.c), then the read holds of the
 * RWLocks (shm_rw.c). */
#define TL_SHM_HEADER 65536
#define TL_SHM_NODES_AT 4096
#define TL_SHM_HOLDS 512
#define TL_SHM_HOLDS_AT (TL_SHM_HEADER - TL_SHM_HOLDS * 16)
#define TL_SHM_NODES ((TL_SHM_HOLDS_AT - TL_SHM_NODES_AT) / 32)
/* The layout version written in the header. Version 2: waiter nodes carry
 * a kind (promise waiters ring their process's doorbell; lock waiters are
 * poked when an owner dies), and the header page holds the doorbells.
 * Version 3: the last 8 KiB of the header hold the read holds. Version 4:
 * the header page holds the nodes' high-water mark (shm_wait.c), where the
 * scans stop: a process of version 3 would not keep it. Version 5: the
 * header page counts the read-hold records in use (TL_SHM_READERS_AT),
 * which a writer reads instead of the records when it is 0: a process of
 * version 4 would not keep it. Version 6: owner ids have 28 bits (the
 * generation 14), and bit 28 of a lock or RWLock word is HANDED (a
 * release's hand-off to a waiter): a process of version 5 would read
 * another owner. */
#define TL_SHM_VERSION 6
/* Errors of tl_shm_open besides those of error.h. */
enum {
  TL_SHM_ESIZE = -20,  /* the file exists with another data size */
  TL_SHM_ENOTSUP = -21 /* this runtime cannot share the mapping (glue) */
};

typedef struct tl_shm_s tl_shm_t;

/* Owner ids (shm_owners.c): process slots of the header page, their
 * liveness bytes (OFD write locks) and claim bytes. */
#define TL_SHM_SLOTS 96
#define TL_SHM_THREADS 128
#define TL_SHM_LIVE 128  /* byte TL_SHM_LIVE + slot: held while alive */
#define TL_SHM_CLAIM 256 /* byte TL_SHM_CLAIM + slot: held while claimed */
#define TL_SHM_GUARD 384 /* byte TL_SHM_GUARD + slot: read-held by watchers */

/* An owner id (shm_owners.c): bits 21..27 the process slot, 7..20 the
 * slot's generation (never 0), 0..6 the thread index; 28 bits, never 0. */
#define TL_SHM_GEN_MASK 0x3fffu
#define TL_SHM_ID_MAKE(slot, gen, t)                                           \
  ((uint32_t)(slot) << 21 | (uint32_t)(gen) << 7 | (uint32_t)(t))
#define TL_SHM_ID_SLOT(id) (((id) >> 21) & 0x7fu)
#define TL_SHM_ID_GEN(id) (((id) >> 7) & TL_SHM_GEN_MASK)
#define TL_SHM_ID_THREAD(id) ((id)&0x7fu)

/* One process's join of one file: its slot. Made by the first mapping of
 * the file in the process, shared by the others (by device and inode),
 * left when the last mapping and thread record let go. */
typedef struct tl_shm_join_s tl_shm_join_t;
tl_shm_join_t *tl__shm_join(int fd, tl_host_error_t *e);
void tl__shm_leave(tl_shm_join_t *j);

/* The join of the mapping that holds `addr` (NULL: none). The caller keeps
 * the mapping alive (a typed array over it in its call). */
tl_shm_join_t *tl_shm_find(const void *addr);

/* Gives the calling thread an owner id in the file (28 bits, never 0,
 * unique across the host's processes); 0, or TL_HOST_ENODES (the process
 * had TL_SHM_THREADS threads ask) or TL_HOST_ECORRUPT. Takes a reference
 * on the join, which tl_shm_thread_remove drops (the thread's end). */
int tl_shm_thread_add(tl_shm_join_t *j, uint32_t *id);
/* `poke` (tl_shm_poke) runs once the id is dead, before the join's
 * reference goes. */
void tl_shm_thread_remove(tl_shm_join_t *j, uint32_t id,
                          void (*poke)(tl_shm_join_t *j));

/* Where the header page records the data size (shm_linux.c). */
#define TL_SHM_SIZE_AT 16
/* Where it counts the read-hold records in use (32 bits, shm_rw.c, R4), a
 * word that the JavaScript of RWLocks reads and writes through a view of
 * the header (tl_shm_page_ref), as it does the records themselves. */
#define TL_SHM_READERS_AT 544

/* 0 while the file still has its whole length (its size by lseek: the header
 * and the data size the header records), else TL_HOST_ECORRUPT: checked before
 * the library touches the header or the data, so that a file shrunk under this
 * process is an error, not SIGBUS. */
int tl_shm_header_ok(tl_shm_join_t *j);

/* The mapping that holds `addr`: its join and the start of its header
 * (`*base`); NULL when none. The caller keeps the mapping alive. */
tl_shm_join_t *tl_shm_find_map(const void *addr, char **base);

/* The kinds of a waiter node (bits). */
enum {
  TL_SHM_KIND_ASYNC = 1,    /* a promise waiter: its process's doorbell rings */
  TL_SHM_KIND_LOCK = 2,     /* a lock's waiter: poked when an owner dies */
  TL_SHM_KIND_HANDOFF = 4,  /* an AsyncLock's waiter, which a release may
                               hand the word to (tl_shm_lock_release) */
  TL_SHM_KIND_PRESENT = 8,  /* a promise one that came to try and sleeps
                               again: its loop ran just now */
  TL_SHM_KIND_RESERVE = 16, /* a Semaphore's request that holds the word's
                              RESERVED bit (tl_shm_wait_reserve) */
  TL_SHM_KIND_READER = 32   /* with HANDOFF: an RWLock's reader, which takes
                              a hand-off up as a read lock (shm_rw.c, R5) */
};
/* How a waiter of kind READER takes a hand-off of the word at `word` up
 * (L8 of lib/ShmLock.js): 1 when it did, 0 when the word was not handed to
 * `owner` (or could not be taken up: see tl_shm_read_take_up). Given by
 * the binding (shm_rw.c lies above shm_wait.c). */
typedef int (*tl_shm_take_up_fn)(const void *word, uint32_t owner);
void tl_shm_set_reader_take_up(tl_shm_take_up_fn fn);
/* Results besides the core's TL_RESULT_OK, _NOT_EQUAL, _TIMED_OUT,
 * _INTERRUPTED. */
enum {
  TL_SHM_PENDING = 4, /* tl_shm_wait_async: the node waits (RESULT_PENDING) */
  TL_SHM_POKED = 7,   /* a lock waiter was woken to look at the word again */
  TL_SHM_ROUTE =
      8, /* binding.c's waitAsync: shared memory, ask lib/shmWait.js */
  TL_SHM_ACCEPTED = 9, /* a hand-off waiter took the word it was handed up
                         (L8: before its node was freed), or a Semaphore's
                         reserving request took its permits */
  TL_SHM_REARMED = 10  /* internal: a reserving request woken without its
                          permits sleeps again on the same node */
};
/* The doorbells: one 32-bit word per process slot in the header page. */
#define TL_SHM_BELL_AT 640

/* Blocks the calling thread (owner id `owner`) while the `width`-byte
 * word at `word` (in the mapping at `base`) holds `expected`, until a
 * tl_shm_notify of any process counts it, `timeout_ms` passes (never
 * early; >= 1e15: none) or `stop` says so. Returns the core's
 * TL_RESULT_OK, _NOT_EQUAL, _TIMED_OUT, _INTERRUPTED, or TL_HOST_ENODES
 * (every waiter node of the file in use) or TL_HOST_ECORRUPT. */
int tl_shm_wait(tl_shm_join_t *j, char *base, const void *word, int width,
                int64_t expected, double timeout_ms, uint32_t owner,
                const tl_host_stop_t *stop);
/* As tl_shm_wait for a lock's waiter (kind TL_SHM_KIND_LOCK): a poke (an
 * owner died: tl_shm_poke) frees the node and the wait returns
 * TL_SHM_POKED, so that the caller looks at the lock word again. With a
 * `ticket` (tl_shm_ticket; 0: none) it is a waiter that a release may
 * hand the word (kind HANDOFF too: an AsyncLock's, or an RWLock's writer,
 * or with `reader` an RWLock's reader, kind READER too), which it takes
 * up before its node is freed, and the wait returns TL_SHM_ACCEPTED. */
int tl_shm_wait_lock(tl_shm_join_t *j, char *base, const void *word,
                     int64_t expected, double timeout_ms, uint32_t owner,
                     uint32_t pokes, uint64_t ticket, int reader,
                     const tl_host_stop_t *stop);
/* The file's poke counter, which a lock waiter reads before it looks at
 * the holder's liveness and passes as `pokes`: a poke since then returns
 * TL_SHM_POKED at once. */
uint32_t tl_shm_pokes(tl_shm_join_t *j);

/* A promise waiter: publishes a node of kind TL_SHM_KIND_ASYNC | `kind`
 * while the word holds `expected`. Returns TL_SHM_PENDING with the node's
 * index and its WAITING state in `*index` and `*waiting`, or
 * TL_RESULT_NOT_EQUAL (nothing left behind), or TL_RESULT_OK (notified
 * before it returned), TL_SHM_POKED (a lock waiter, `kind` LOCK, whose
 * `pokes` is not the counter's now: tl_shm_wait_lock), TL_HOST_ENODES,
 * TL_HOST_ECORRUPT. Every notify
 * that counts the node rings the doorbell of its owner's process. With
 * `kind` RESERVE, `ticket` is the request's need of permits and the node
 * reserves the Semaphore word (tl_shm_wait_reserve's publication: its
 * compare-exchange to WAITERS | RESERVED is the value check). */
int tl_shm_wait_async(tl_shm_join_t *j, char *base, const void *word, int width,
                      int64_t expected, uint32_t owner, int kind,
                      uint32_t pokes, uint64_t ticket, uint32_t *index,
                      uint32_t *waiting);
/* The node of a promise waiter: 1 when it was notified, 2 when a poke
 * freed it, 3 when it was handed the lock word at `word` (kind HANDOFF;
 * NULL: not taken up) and took it up, or (kind RESERVE) took its permits
 * (the node is free in each case), 0 while it waits (a reserving request
 * woken without its permits sleeps again: `*waiting` is its node's new
 * state), TL_HOST_ECORRUPT. `kind` is the waiter's. */
int tl_shm_async_done(tl_shm_join_t *j, uint32_t index, uint32_t *waiting,
                      const void *word, int kind);
/* Withdraws a promise waiter's node: TL_RESULT_TIMED_OUT when withdrawn,
 * TL_RESULT_OK when a notify counted it first, TL_SHM_ACCEPTED when a
 * hand-off of the lock word at `word` counted it first and it took it up
 * (NULL: not taken up), TL_SHM_POKED when a poke freed it first (free in
 * every case), or TL_HOST_ECORRUPT (the node is left to its owner's
 * death). A reserving request (kind RESERVE) clears RESERVED on `word`
 * first (NULL: left for the others to clear as an orphan; the caller
 * pokes the file) and returns TL_RESULT_TIMED_OUT; the caller wakes the
 * word's waiters. `kind` is the waiter's (as given to tl_shm_wait_async). */
int tl_shm_async_cancel(tl_shm_join_t *j, uint32_t index, uint32_t waiting,
                        const void *word, int kind);

/* This process's doorbell word in the file (the join's mapping), which
 * every notify of one of its promise waiters and every poke of one of its
 * lock waiters bumps and wakes (a shared futex). */
uint32_t *tl_shm_bell(tl_shm_join_t *j);
/* 1 when the doorbell moved from `*seen` (updated), 0 when not, -1 when
 * the file can no longer be read (it shrank). */
int tl_shm_bell_check(tl_shm_join_t *j, uint32_t *seen);
/* P3 (shm_wait.c): the helper thread has the promise waiters of its
 * process look at their records at least this often, rung or not. */
#define TL_SHM_BELL_SLICE_MS 1000

/* Wakes every lock waiter of the file, in every process, to look at its
 * word again (an owner died): frees their nodes and wakes blocking ones on
 * their node, promise ones through their process's doorbell. Counts
 * nothing. */
void tl_shm_poke(tl_shm_join_t *j);

/* Makes sure that this process watches every other process that has the
 * file open (a live slot: its liveness byte held), each by a thread of
 * this join that calls `poke` (tl_shm_poke) when that process dies; a
 * watcher already running for a slot's generation is kept, and a slot
 * found dead is not probed again until it is claimed again. A sleeper
 * asks before it sleeps (shmWatch): any such process may release its word
 * and die inside its release, not only the holder and the word's waiters
 * (a barger that took the word meanwhile, a Semaphore's releaser); a
 * process that opens the file later announces itself with a poke
 * (tl_shm_announce), so that the sleepers look again and watch it too.
 * 0, or TL_HOST_ENODES (a thread could not be started), TL_HOST_ECORRUPT. */
int tl_shm_watch_all(tl_shm_join_t *j, void (*poke)(tl_shm_join_t *j));
/* 1 the first time it is called for the join (this process's arrival in
 * the file, which the opener announces by a poke: tl_shm_watch_all),
 * else 0. */
int tl_shm_announce(tl_shm_join_t *j);
/* The watcher of the process of owner id `id` (its slot and generation,
 * shm_owners.c), which calls `poke` (tl_shm_poke) when that process dies,
 * also when it died before the watcher started; 0 or TL_HOST_ENODES. */
int tl__shm_watch_id(tl_shm_join_t *j, uint32_t id,
                     void (*poke)(tl_shm_join_t *j));
/* The join's mapping of the header (TL_SHM_HEADER bytes), for the nodes
 * and the doorbells. */
char *tl__shm_page(tl_shm_join_t *j);
/* One more reference on the join (tl__shm_leave drops it). */
void tl__shm_join_ref(tl_shm_join_t *j);

/* Wakes up to `count` (< 0: all) waiters of the word in every process,
 * oldest first; returns how many it woke, or TL_HOST_ECORRUPT. */
int64_t tl_shm_notify(tl_shm_join_t *j, char *base, const void *word,
                      int64_t count);

/* Wakes the waiters of the word whose owner id is `owner` (an RWLock's
 * writer waiting for its readers to leave: shm_rw.c), counting nothing;
 * 0 or TL_HOST_ECORRUPT. */
int tl_shm_notify_owner(tl_shm_join_t *j, char *base, const void *word,
                        uint32_t owner);

/* An AsyncLock word across processes (lib/ShmLock.js): the holder's owner
 * id, HANDED (the id is a waiter's that a release handed the lock to and
 * that has not taken it up yet), WAITERS (somebody may sleep on it), DIED
 * (taken over from a dead holder). An RWLock word (below) has the same
 * four fields where a writer is the holder, and DRAINING besides. */
#define TL_SHM_LOCK_ID 0x0fffffffu
#define TL_SHM_LOCK_HANDED (1u << 28)
#define TL_SHM_LOCK_WAITERS (1u << 29)
#define TL_SHM_LOCK_DIED (1u << 30)
/* A lock waiter that has waited this long (from its request's ticket) is
 * handed the lock by the next release (the in-process policy's 1 ms). */
#define TL_SHM_STARVING_US 1000
/* A lock request's ticket, drawn once at its first sleep and kept across
 * its sleeps (tl_shm_wait_lock, tl_shm_wait_async): the monotonic µs of
 * the draw above 12 bits of the file's counter, so that tickets order the
 * requests by arrival and tell each one's age. 0 on a corrupt file. */
uint64_t tl_shm_ticket(tl_shm_join_t *j);
/* Releases the lock word at `word` that the caller holds as `held` (its
 * id, WAITERS set): hands it to the oldest waiter that may take it up
 * (`fifo`: any lock waiter; else a blocking one whose request has waited
 * TL_SHM_STARVING_US), by writing HANDED | WAITERS | its id into the word
 * and then notifying its node, or frees the word and notifies one waiter.
 * Returns 1 (handed), 0 (freed), 2 (the word is not `held` any more:
 * read it again), or TL_HOST_ECORRUPT. */
int tl_shm_lock_release(tl_shm_join_t *j, char *base, const void *word,
                        uint32_t held, int mode);
/* tl_shm_lock_release's modes: an AsyncLock's default policy, its FIFO
 * mode (every waiter is handed the lock), an RWLock's write lock (the
 * oldest writer or reader that has waited TL_SHM_STARVING_US and can take
 * the word up at once is handed it; otherwise every sleeper is woken). */
enum {
  TL_SHM_RELEASE_LOCK = 0,
  TL_SHM_RELEASE_FIFO = 1,
  TL_SHM_RELEASE_RW = 2
};
/* 1 when the thread `owner` has a node of the word that waits or was
 * notified (a hand-off to it is on its way to it), else 0, or
 * TL_HOST_ECORRUPT: a hand-off whose grantee has none is free for anyone
 * (lib/ShmLock.js, L7). */
int tl_shm_has_node(tl_shm_join_t *j, char *base, const void *word,
                    uint32_t owner);

/* A Semaphore word across processes (lib/ShmSemaphore.js): the free
 * permits, WAITERS (somebody may sleep on it), RESERVED (a request that has
 * waited TL_SHM_STARVING_US gathers the permits: nobody else takes any). */
#define TL_SHM_SEM_MASK 0x1fffffffu
#define TL_SHM_SEM_WAITERS (1u << 29)
#define TL_SHM_SEM_RESERVED (1u << 30)
/* A Semaphore request of `need` permits that reserves the word (steps
 * S5-S7 in lib/ShmSemaphore.js): publishes its node (kind RESERVE), then
 * sets WAITERS | RESERVED on the word by one compare-exchange from
 * `expected` (which has neither enough permits nor RESERVED), and sleeps
 * until it takes its permits (TL_SHM_ACCEPTED: `need` subtracted and
 * RESERVED cleared in one compare-exchange, before its node is freed),
 * its timeout or `stop` (RESERVED cleared while its node is still there,
 * then every waiter of the word woken: TL_RESULT_TIMED_OUT or
 * _INTERRUPTED); TL_RESULT_NOT_EQUAL when the word was not `expected`;
 * TL_RESULT_OK when the word lost RESERVED meanwhile (compete again). A
 * wake that finds too few permits sleeps again on the same node, so that
 * the reservation always has a node. */
int tl_shm_wait_reserve(tl_shm_join_t *j, char *base, const void *word,
                        int64_t expected, uint32_t need, double timeout_ms,
                        uint32_t owner, const tl_host_stop_t *stop);
/* 1 when a live reserving request (kind RESERVE, waiting or notified) has
 * a node on the word, else 0, or TL_HOST_ECORRUPT: RESERVED without one is
 * an orphan (its request died), which anyone may clear. */
int tl_shm_sem_reserved(tl_shm_join_t *j, char *base, const void *word);

/* Read holds of an RWLock word (shm_rw.c). The word: the writer's owner
 * id (TL_SHM_RW_ID), HANDED, WAITERS and DIED as an AsyncLock word's, and
 * DRAINING (lib/ShmRWLock.js). */
#define TL_SHM_RW_ID TL_SHM_LOCK_ID
#define TL_SHM_RW_HANDED TL_SHM_LOCK_HANDED
#define TL_SHM_RW_DIED (1u << 30)
#define TL_SHM_RW_DRAINING (1u << 31)
/* Results of tl_shm_read_enter besides 0 (held) and 1 (held, taken over
 * from a dead writer). */
enum {
  TL_SHM_RW_BLOCKED = 2, /* a live writer: nothing left behind */
  TL_SHM_RW_DEADLK = 3,  /* the caller is the writer, or holds a read
                            lock behind a waiting writer */
  TL_SHM_RW_NOTOWNER = 4 /* tl_shm_read_leave: the caller holds none */
};
/* One more read hold of the calling thread (owner id `owner`) on the word
 * at `word`, if no live writer is in the word: 0, 1 (DIED is set: a holder
 * died since a writer last released, e.g. the dead writer whose id this
 * call cleared), TL_SHM_RW_BLOCKED,
 * TL_SHM_RW_DEADLK, TL_HOST_ENODES (every hold of the file in use),
 * TL_HOST_ECORRUPT. */
int tl_shm_read_enter(tl_shm_join_t *j, char *base, void *word, uint32_t owner);
/* One read hold fewer: 0, TL_SHM_RW_NOTOWNER, TL_HOST_ECORRUPT. */
int tl_shm_read_leave(tl_shm_join_t *j, char *base, void *word, uint32_t owner);
/* A reader that a writer's release handed the word (tl_shm_lock_release's
 * RWLock mode: HANDED | WAITERS | its id), whose node was notified, takes
 * it up (the take-up of its kind, READER: tl_shm_set_reader_take_up):
 * counts its read hold, then frees the word and wakes every sleeper (the
 * other readers go in with it; writers compete, and wait for its hold).
 * 1 when it did; 0 when the word was not handed to it, or no read-hold
 * record is free (then the word goes on as from a release, and the reader
 * tries again, as any woken one: ENODES from there). */
int tl_shm_read_take_up(const void *word, uint32_t owner);
/* The live read holds of the word (`*mine`: the caller's), after freeing
 * those of dead owners (setting DIED on the word when there were any);
 * with `watch`, this process watches the live holders' processes. Returns
 * the count, or TL_HOST_ECORRUPT, or TL_HOST_ENODES (no watcher thread). */
int64_t tl_shm_read_holds(tl_shm_join_t *j, char *base, void *word,
                          uint32_t owner, int watch, int64_t *mine);
/* Read holds in use, whatever their owner (for the tests). */
int64_t tl_shm_holds_used(char *base);
/* R2 for a reader whose last hold lib/ShmRWLock.js gave back itself: a
 * writer that waits for the readers (DRAINING) reads the records again.
 * 0, or TL_HOST_ECORRUPT. (`owner` is unused: the signature of the two
 * above.) */
int tl_shm_wake_writer(tl_shm_join_t *j, char *base, void *word,
                       uint32_t owner);

/* The waiters of the word whose owner is alive (for the tests and
 * waiterCount), or TL_HOST_ECORRUPT. */
int64_t tl_shm_waiters(tl_shm_join_t *j, char *base, const void *word);

/* Nodes not free, whatever their owner (for the tests). The caller has
 * checked the header (tl_shm_header_ok). */
int64_t tl_shm_nodes_used(char *base);

/* Whether owner `id` of the file is alive: 1, 0, or TL_HOST_ECORRUPT. */
int tl_shm_owner_alive(tl_shm_join_t *j, uint32_t id);
uint32_t tl_shm_join_slot(tl_shm_join_t *j);

/* Opens (creating it when missing, zero-filled, mode 0600) the file `file`
 * in the absolute directory `dir` (created with mode 0700 when missing),
 * after the host's trust checks of the directory and the file, with a data
 * region of `size` bytes (a multiple of 8, at least 8), and maps it shared.
 * Returns NULL with `e` set; TL_SHM_ESIZE says the file holds another
 * size, `*found` then holds it. */
tl_shm_t *tl_shm_open(const char *dir, const char *file, uint64_t size,
                      uint64_t *found, tl_host_error_t *e);

/* The data region (size bytes) of a mapping. */
void *tl_shm_data(tl_shm_t *m);
/* The mapping that holds `addr`, with one more reference (NULL: none), for
 * a view of its header (tl_shm_base) that JavaScript keeps; the view's
 * finalizer gives the reference back with tl_shm_close, and the mapping is
 * unmapped when its last reference goes. */
tl_shm_t *tl_shm_page_ref(const void *addr);
char *tl_shm_base(tl_shm_t *m);
uint64_t tl_shm_size(tl_shm_t *m);
/* The mapping's join (owner ids, watchers, nodes). */
tl_shm_join_t *tl_shm_join_of(tl_shm_t *m);

/* Gives back a reference of a mapping (tl_shm_open's, or tl_shm_page_ref's):
 * the last one unmaps it, closes its file and takes it out of the registry.
 * Runs on any thread (the finalizer of a SharedArrayBuffer over it). */
void tl_shm_close(tl_shm_t *m);

/* Whether any byte of [addr, addr + len) lies in a mapping of this
 * process. Costs one atomic load while the process has no mapping. Runs on
 * any thread. */
int tl_shm_contains(const void *addr, size_t len);

/* The number of live mappings of this process (for the tests). */
int tl_shm_count(void);

#endif
