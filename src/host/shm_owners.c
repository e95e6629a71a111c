/* Owner ids of shared memory (shm.h): ids unique across the processes of
 * the host that use one shared-memory file, and their liveness by the
 * kernel's OFD byte-range locks, as the host table's process slots.
 *
 * A thread's id in a lock word is its threadId + 1 within a process, which
 * is equal in every process. In a shared-memory file each process that
 * asks for an id first joins the file: it claims a process slot of the
 * header page, whose liveness is an OFD write lock on byte
 * TL_SHM_LIVE + slot, held by one open file description of the process
 * (the join's own), which the kernel drops when the process dies, whatever
 * its pid or PID namespace. Each thread that asks gets a thread index in
 * its process's slot (a bit of the slot's thread set, set while the thread
 * lives and cleared by its env's cleanup hook, so a worker that ends dies
 * as an owner). The id:
 *
 *   bits 21..27  slot (< TL_SHM_SLOTS)
 *   bits  7..20  the slot's generation when the process claimed it (never 0)
 *   bits  0..6   the thread index (< TL_SHM_THREADS)
 *
 * 28 bits (shm.h, TL_SHM_ID_MAKE), the owner field of a lock word
 * (TL_SHM_LOCK_ID), never 0.
 *
 * An id is alive while (1) its slot's generation is still its generation,
 * (2) its thread's bit is set and (3) the slot's liveness byte is locked.
 * The claim of a slot: take the slot's claim byte (TL_SHM_CLAIM + slot,
 * an OFD write lock), then its liveness byte, bump its generation, clear
 * its thread set, write pid and start time, release the claim byte. A
 * check reads the generation, probes the liveness byte, then the claim
 * byte, then reads the generation again, and says "alive" only when both
 * reads give the id's generation, the liveness byte was held and the claim
 * byte was not. Why no claim can fool it: if the liveness byte was held
 * by a new claimer when probed, that claimer held the claim byte from
 * before until after its bump of the generation; the claim byte probed
 * after that was then either held (dead) or released after the bump, and
 * the second read, later still, sees the new generation (dead). A claimer
 * that dies mid-claim drops both locks and has issued no id.
 *
 * The generation has 14 bits: an id whose slot was claimed 16,383 times
 * since is taken for alive again if the thread index is in use. The checks
 * of a process's own slot use the generation and the thread set only (its
 * own OFD lock does not conflict with itself, so a probe would say
 * "free"). A thread index is never given twice in one generation (a new
 * worker must not own what a dead one held): a process that has had
 * TL_SHM_THREADS threads ask for an id in one file gets ENODES until it
 * closes every mapping of it and opens it again.
 *
 * Everything here reads and writes the header page through the join's own
 * mapping of that page, after a check that the file still holds it (lseek; no
 * SIGBUS from the library).
 *
 * Watchers. A lock waiter must learn that the holder died (kill -9), and
 * that a waiter woken to take the lock died before it did, or it would
 * sleep for ever. No polling: a watcher thread of the join blocks in
 * F_OFD_SETLKW for a read lock on the liveness byte of one process slot,
 * which the kernel grants when that process dies (or leaves the file);
 * the watcher lets it go at once and pokes every lock waiter of the file
 * (tl_shm_poke, given by shm_wait.c, which lies above this file), which
 * looks at its word again. A waiter asks for the
 * watchers of every other process of the file before it sleeps
 * (tl_shm_watch_all), then looks at the holder's liveness again and
 * publishes its node with the word's value and the poke counter it saw
 * (lib/ShmLock.js, I4), so a death before the watcher blocks is seen by
 * that look or that value check, and a death after it by the watcher. A watcher
 * ends when its process died; a new one is started when needed. At most one per
 * slot and join; all are cancelled (in their one cancellation point, the lock
 * wait) and joined when the join is left. A thread of a live process that ends
 * (its env's cleanup hook) pokes the file too (tl_shm_thread_remove, after its
 * id is dead): its process's liveness byte stays held.
 *
 * A watcher watches one generation of its slot, the one of the id it was
 * asked for, and must not miss that process's death when the slot is
 * claimed again before the watcher blocks (its thread may start late, or
 * the kernel may hand the freed liveness byte to a claimer before the
 * woken watcher retries): then it would block on the new process and the
 * death would poke nobody. So a watcher first takes a read lock on the
 * slot's guard byte (TL_SHM_GUARD + slot), which a claimer must be able
 * to write-lock after the liveness byte (else it leaves the slot), then
 * compares the slot's generation with its own:
 *   W1. a claim in progress (the guard write-locked) or a new generation
 *       means the process died: it pokes at once;
 *   W2. else, while it holds the guard, nobody claims the slot, so the
 *       liveness byte it waits for is its process's: granted when that
 *       process dies;
 *   W3. it marks itself ended before it lets the guard go, so a caller
 *       that sees it not ended knows which generation it watches
 *       (w->generation); one of another generation is cancelled and
 *       replaced (W1 makes it poke or end at once anyway).
 * The guard locks of one join share its description: every watcher's
 * last step unlocks its slot's guard, which also drops what a cancelled
 * predecessor of the same slot left there.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform.h"
#include "shm.h"

/* The header page's owner region (the first 64 bytes are the header of
 * shm_linux.c). */
typedef struct {
  _Atomic uint32_t generation; /* bumped at each claim, under its bytes */
  uint32_t pid;                /* of the claimer, for diagnostics */
  uint64_t start_time;
  _Atomic uint32_t threads[TL_SHM_THREADS / 32]; /* live thread indices */
} tl_shm_slot_t;

#define TL_SHM_SLOT_AT 1024 /* the slots' offset in the header page */

_Static_assert(TL_SHM_SLOT_AT + TL_SHM_SLOTS * sizeof(tl_shm_slot_t) <=
                   TL_SHM_HEADER,
               "the slots fit in the header page");
_Static_assert(TL_SHM_SLOTS <= 128 && TL_SHM_THREADS == 128, "the id's fields");

/* A watcher thread of one process slot (see above). */
typedef struct {
  tl_hp_thread_t *thread; /* joined by tl__shm_leave or the next start */
  tl_shm_join_t *join;
  uint32_t slot, generation;      /* the process it watches */
  void (*poke)(tl_shm_join_t *j); /* tl_shm_poke (shm_wait.c) */
  _Atomic int ended;              /* set by the thread as it ends */
} tl_shm_watcher_t;

/* One process's join of one file (by device and inode). */
struct tl_shm_join_s {
  /* Immutable while joined. */
  uint64_t dev, ino;
  int fd;               /* its own open file description: holds the lock */
  tl_shm_slot_t *slots; /* the header page's slots, in its own mapping */
  void *page;           /* that mapping */
  uint32_t slot, generation;
  /* Protected by tl__join_lock. */
  int refs;       /* mappings and thread records using it */
  uint32_t given; /* thread indices given out, never given again */
  tl_shm_watcher_t *watch[TL_SHM_SLOTS]; /* NULL: none started */
  /* The generation of each slot that tl_shm_watch_all has seen to: a
   * watcher started for it, or found without a live process (probed once).
   * Written under tl__join_lock, read without it. */
  _Atomic uint32_t handled[TL_SHM_SLOTS];
  int announced; /* this process's arrival was poked (tl_shm_announce) */
  tl_shm_join_t *next;
};

static pthread_mutex_t tl__join_lock = PTHREAD_MUTEX_INITIALIZER;
static tl_shm_join_t *tl__joins; /* protected by tl__join_lock */

/* Whether the file still has its whole length (its size by lseek, which
 * copies no stat structure: the join's descriptor is only read and
 * written at explicit offsets; the header page is read only once the file
 * holds it). */
static int
tl__page_ok(const tl_shm_join_t *j)
{
  uint64_t now;

  if (tl__hp_size_now(j->fd, &now) != 0 || now < TL_SHM_HEADER)
    return 0;
  uint64_t size =
      atomic_load((_Atomic uint64_t *)((char *)j->page + TL_SHM_SIZE_AT));
  return now == TL_SHM_HEADER + size;
}

int
tl_shm_header_ok(tl_shm_join_t *j)
{
  return tl__page_ok(j) ? 0 : TL_HOST_ECORRUPT;
}

/* Claims a free slot of the file `fd` (the join's own description). */
static int
tl__claim(tl_shm_join_t *j, tl_host_error_t *e)
{
  for (uint32_t s = 0; s < TL_SHM_SLOTS; s++) {
    /* A slot whose process lives is passed over without its CLAIM byte:
     * tl_shm_owner_alive reads a held CLAIM byte as "being claimed again,
     * so its owner is dead", and a scan that took it on a live slot made
     * that slot's owners look dead to every other process for as long
     * (their locks were taken over with DIED while held: an exclusion
     * break seen once in host-shm.test.js under load). A slot that comes
     * to life between this look and the CLAIM byte still gets the short
     * hold below; closing that too needs the liveness check to wait out a
     * CLAIM byte instead of reading it as death (not done). */
    if (tl__hp_probe(j->fd, TL_SHM_LIVE + s) == TL_HP_OWNED)
      continue;
    if (tl__hp_trylock(j->fd, TL_SHM_CLAIM + s, 1) != 0)
      continue;
    if (tl__hp_trylock(j->fd, TL_SHM_LIVE + s, 1) != 0) {
      tl__hp_unlock(j->fd, TL_SHM_CLAIM + s);
      continue;
    }
    /* A watcher of the slot's last process has not seen it die yet (W2):
     * another slot, so that the death is not missed. */
    if (tl__hp_trylock(j->fd, TL_SHM_GUARD + s, 1) != 0) {
      tl__hp_unlock(j->fd, TL_SHM_LIVE + s);
      tl__hp_unlock(j->fd, TL_SHM_CLAIM + s);
      continue;
    }
    tl_shm_slot_t *slot = &j->slots[s];
    uint32_t g = (atomic_load(&slot->generation) + 1) & TL_SHM_GEN_MASK;
    if (g == 0)
      g = 1;
    for (int k = 0; k < TL_SHM_THREADS / 32; k++)
      atomic_store(&slot->threads[k], 0);
    slot->pid = tl__hp_pid();
    slot->start_time = tl__hp_start_time();
    atomic_store(&slot->generation, g);
    tl__hp_unlock(j->fd, TL_SHM_GUARD + s);
    tl__hp_unlock(j->fd, TL_SHM_CLAIM + s);
    j->slot = s;
    j->generation = g;
    return 0;
  }
  return tl__host_fail(e, TL_HOST_ENAMES, 0,
                       "all %d process slots of the shared memory are in use",
                       TL_SHM_SLOTS);
}

/* Takes `fd` (a description of the file opened for this mapping): it
 * becomes the new join's, or is closed. */
tl_shm_join_t *
tl__shm_join(int fd, tl_host_error_t *e)
{
  uint64_t dev, ino, size;
  tl_shm_join_t *j;

  if (tl__hp_identity(fd, &dev, &ino, &size) != 0) {
    tl__host_fail(e, TL_HOST_ESYS, errno, "fstat: %s", strerror(errno));
    return NULL;
  }
  pthread_mutex_lock(&tl__join_lock);
  for (j = tl__joins; j != NULL; j = j->next) {
    if (j->dev == dev && j->ino == ino) {
      j->refs++;
      pthread_mutex_unlock(&tl__join_lock);
      tl__hp_close(fd);
      return j;
    }
  }
  j = calloc(1, sizeof(*j));
  if (j == NULL)
    goto nomem;
  j->fd = -1;
  j->dev = dev;
  j->ino = ino;
  /* The opener's own description becomes the join's: it holds the
   * liveness lock from now on. */
  j->fd = fd;
  fd = -1;
  j->page = tl__hp_map(j->fd, TL_SHM_HEADER);
  if (j->page == NULL) {
    tl__host_fail(e, TL_HOST_ESYS, errno, "cannot map: %s", strerror(errno));
    goto fail;
  }
  j->slots = (tl_shm_slot_t *)((char *)j->page + TL_SHM_SLOT_AT);
  if (!tl__page_ok(j)) {
    tl__host_fail(e, TL_HOST_ECORRUPT, 0, "the file shrank");
    goto fail;
  }
  if (tl__claim(j, e) != 0)
    goto fail;
  j->refs = 1;
  j->next = tl__joins;
  tl__joins = j;
  pthread_mutex_unlock(&tl__join_lock);
  return j;

nomem:
  tl__host_fail(e, TL_HOST_ESYS, ENOMEM, "out of memory");
fail:
  if (j != NULL) {
    if (j->page != NULL)
      tl__hp_unmap(j->page, TL_SHM_HEADER);
    if (j->fd >= 0)
      tl__hp_close(j->fd); /* drops the locks */
    free(j);
  }
  if (fd >= 0)
    tl__hp_close(fd);
  pthread_mutex_unlock(&tl__join_lock);
  return NULL;
}

void
tl__shm_leave(tl_shm_join_t *j)
{
  pthread_mutex_lock(&tl__join_lock);
  if (--j->refs > 0) {
    pthread_mutex_unlock(&tl__join_lock);
    return;
  }
  for (tl_shm_join_t **p = &tl__joins; *p != NULL; p = &(*p)->next) {
    if (*p == j) {
      *p = j->next;
      break;
    }
  }
  pthread_mutex_unlock(&tl__join_lock);
  /* Nobody else reaches the join now: its watchers are cancelled (in
   * their lock wait) and joined before the page goes. */
  for (uint32_t s = 0; s < TL_SHM_SLOTS; s++) {
    tl_shm_watcher_t *w = j->watch[s];
    if (w == NULL)
      continue;
    if (!atomic_load(&w->ended))
      tl__hp_thread_cancel(w->thread);
    tl__hp_thread_join(w->thread);
    free(w);
  }
  /* Closing the description drops the liveness lock: every id of this
   * process in the file is dead from now on. */
  tl__hp_unmap(j->page, TL_SHM_HEADER);
  tl__hp_close(j->fd);
  free(j);
}

int
tl_shm_thread_add(tl_shm_join_t *j, uint32_t *id)
{
  int r = 0;

  pthread_mutex_lock(&tl__join_lock);
  /* An index is never given twice in one generation of the slot: a new
   * thread with a dead thread's id would own what that one held. */
  if (j->given >= TL_SHM_THREADS) {
    r = TL_HOST_ENODES;
  } else if (!tl__page_ok(j)) {
    r = TL_HOST_ECORRUPT;
  } else {
    uint32_t t = j->given++;
    j->refs++;
    atomic_fetch_or(&j->slots[j->slot].threads[t / 32], 1u << (t % 32));
    *id = TL_SHM_ID_MAKE(j->slot, j->generation, t);
  }
  pthread_mutex_unlock(&tl__join_lock);
  return r;
}

void
tl_shm_thread_remove(tl_shm_join_t *j, uint32_t id,
                     void (*poke)(tl_shm_join_t *j))
{
  uint32_t t = id & 0x7f;

  pthread_mutex_lock(&tl__join_lock);
  if (tl__page_ok(j))
    atomic_fetch_and(&j->slots[j->slot].threads[t / 32], ~(1u << (t % 32)));
  pthread_mutex_unlock(&tl__join_lock);
  /* The id is dead from now on: the lock waiters of the file look again
   * (it may hold a lock; its process's liveness byte stays held, so no
   * watcher fires). */
  poke(j);
  tl__shm_leave(j);
}

char *
tl__shm_page(tl_shm_join_t *j)
{
  return j->page;
}

void
tl__shm_join_ref(tl_shm_join_t *j)
{
  pthread_mutex_lock(&tl__join_lock);
  j->refs++;
  pthread_mutex_unlock(&tl__join_lock);
}

/* A test hook (THREADLOCK_SHM_TEST_WATCH_DELAY_MS): a watcher thread's
 * late start, the window in which its process may die and its slot be
 * claimed again (W1). */
static _Atomic int tl__watch_delay = -1;

static void *
tl__shm_watcher(void *arg)
{
  tl_shm_watcher_t *w = arg;
  tl_shm_join_t *j = w->join;
  int dead = 1;

  tl__hp_cancel_point(0);
  tl__hp_test_pause("THREADLOCK_SHM_TEST_WATCH_DELAY_MS", &tl__watch_delay);
  /* W1: a claim in progress or done since means the process died. */
  if (tl__hp_trylock(j->fd, TL_SHM_GUARD + w->slot, 0) == 0) {
    if (tl__page_ok(j) &&
        atomic_load(&j->slots[w->slot].generation) == w->generation) {
      /* W2: the liveness byte is the watched process's until it dies. */
      dead = tl__hp_lock_wait_cancellable(j->fd, TL_SHM_LIVE + w->slot, 0,
                                          &w->ended) == 0;
      if (dead)
        tl__hp_unlock(j->fd, TL_SHM_LIVE + w->slot);
    }
    /* W3: ended before the guard goes. */
    atomic_store(&w->ended, 1);
    tl__hp_unlock(j->fd, TL_SHM_GUARD + w->slot);
  } else {
    atomic_store(&w->ended, 1);
  }
  if (dead)
    w->poke(j);
  return NULL;
}

int
tl__shm_watch_id(tl_shm_join_t *j, uint32_t id, void (*poke)(tl_shm_join_t *j))
{
  uint32_t slot = TL_SHM_ID_SLOT(id), generation = TL_SHM_ID_GEN(id);
  tl_shm_watcher_t *old = NULL, *w;
  int r = 0;

  if (slot >= TL_SHM_SLOTS || slot == j->slot || generation == 0)
    return 0;
  pthread_mutex_lock(&tl__join_lock);
  w = j->watch[slot];
  if (w != NULL && !atomic_load(&w->ended) && w->generation == generation)
    goto out;
  /* Its process died since (ended), or it watches another generation of
   * the slot (W3: cancelled; if it is past its wait it ends anyway). */
  if (w != NULL && !atomic_load(&w->ended))
    tl__hp_thread_cancel(w->thread);
  old = w;
  w = calloc(1, sizeof(*w));
  if (w == NULL) {
    r = TL_HOST_ENODES;
    goto out;
  }
  w->join = j;
  w->slot = slot;
  w->generation = generation;
  w->poke = poke;
  w->thread = tl__hp_thread_start(tl__shm_watcher, w, "tl-shm-watch");
  if (w->thread == NULL) {
    free(w);
    r = TL_HOST_ENODES;
    goto out;
  }
  j->watch[slot] = w;
out:
  if (r != 0)
    old = NULL; /* stays in place, to be joined later */
  pthread_mutex_unlock(&tl__join_lock);
  if (old != NULL) {
    tl__hp_thread_join(old->thread);
    free(old);
  }
  return r;
}

int
tl_shm_watch_all(tl_shm_join_t *j, void (*poke)(tl_shm_join_t *j))
{
  uint32_t todo[TL_SHM_SLOTS], gens[TL_SHM_SLOTS], n = 0;

  if (!tl__page_ok(j))
    return TL_HOST_ECORRUPT;
  /* The slots with a generation not seen to yet; most calls find none
   * and take no lock. */
  for (uint32_t s = 0; s < TL_SHM_SLOTS; s++) {
    uint32_t g = atomic_load(&j->slots[s].generation);
    if (s == j->slot || g == 0 || atomic_load(&j->handled[s]) == g)
      continue;
    todo[n] = s;
    gens[n++] = g;
  }
  for (uint32_t k = 0; k < n; k++) {
    uint32_t s = todo[k], g = gens[k];
    /* No process holds the slot's liveness byte: none to watch (a claim
     * after this look bumps the generation, which is looked at again). */
    if (tl__hp_probe(j->fd, TL_SHM_LIVE + s) == TL_HP_OWNED &&
        tl__shm_watch_id(j, TL_SHM_ID_MAKE(s, g, 0), poke) != 0)
      return TL_HOST_ENODES;
    pthread_mutex_lock(&tl__join_lock);
    atomic_store(&j->handled[s], g);
    pthread_mutex_unlock(&tl__join_lock);
  }
  return 0;
}

int
tl_shm_announce(tl_shm_join_t *j)
{
  pthread_mutex_lock(&tl__join_lock);
  int first = !j->announced;
  j->announced = 1;
  pthread_mutex_unlock(&tl__join_lock);
  return first;
}

int
tl_shm_owner_alive(tl_shm_join_t *j, uint32_t id)
{
  uint32_t s = TL_SHM_ID_SLOT(id), g = TL_SHM_ID_GEN(id),
           t = TL_SHM_ID_THREAD(id);
  uint32_t bit = 1u << (t % 32);

  if (s >= TL_SHM_SLOTS || g == 0)
    return 0;
  if (!tl__page_ok(j))
    return TL_HOST_ECORRUPT;
  tl_shm_slot_t *slot = &j->slots[s];
  uint32_t g1 = atomic_load(&slot->generation);
  int bits = (atomic_load(&slot->threads[t / 32]) & bit) != 0;
  /* This process's own slot: its lock does not conflict with itself, so
   * a probe would say "free"; the generation and thread set say it. */
  if (s == j->slot)
    return g1 == g && g == j->generation && bits;
  int live = tl__hp_probe(j->fd, TL_SHM_LIVE + s) == TL_HP_OWNED;
  int claim = tl__hp_probe(j->fd, TL_SHM_CLAIM + s) != TL_HP_FREE;
  uint32_t g2 = atomic_load(&slot->generation);
  return g1 == g && g2 == g && bits && live && !claim;
}

uint32_t
tl_shm_join_slot(tl_shm_join_t *j)
{
  return j->slot;
}
