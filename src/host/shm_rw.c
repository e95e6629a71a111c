/* Read holds of RWLocks on shared memory (shm.h). An RWLock's word there
 * holds only its writer (lib/ShmRWLock.js); its readers are booked here,
 * one hold record per thread and word, in a table at the end of the
 * file's header, so that a thread's read locks belong to it across
 * processes (releaseRead() by another thread finds no record of its own)
 * and those of a dead thread are found and given back.
 *
 * A record: the holder's owner id (shm_owners.c; 0: free), its count of
 * read locks on the word, and the word's offset in the data. Only the
 * holder writes a record it has claimed, except that anyone may empty one
 * whose owner is dead (TL_HOLD_GONE marks it while it is emptied, so that
 * two reclaimers do not both free it). Owner ids are never given twice,
 * so a dead owner's record cannot come back to life.
 *
 * The protocol is the one of a Dekker pair, on sequentially consistent
 * atomics only (no lock held by anyone, so that a process stopped or
 * killed at any step delays only what it holds):
 *
 *   reader: count += 1 (a new record: offset, then count = 1); then it
 *           reads the word; a live writer in it: count -= 1 (backs off),
 *           then wakes the writer (below), and waits for the word.
 *   writer: puts its id into the word (compare-exchange from no writer,
 *           lib/ShmRWLock.js); then it reads every record of the word;
 *           while live ones hold, it sleeps on the word.
 *
 * In the total order of these operations either the reader's count comes
 * before the writer's read of it (the writer sees the reader and waits) or
 * the writer's id comes before the reader's read of the word (the reader
 * sees the writer and backs off), or both; never neither, so a reader and
 * the writer never both hold (R1, exclusion).
 *
 * R2 (no lost wake-up of the writer). A writer that waits for readers
 * sets the word's DRAINING bit before each read of the records, and sleeps
 * on the word's value with it. A reader that frees its last hold (or backs
 * off) clears DRAINING if it is set, and then wakes that writer's waiter
 * nodes only (tl_shm_notify_owner: the readers asleep on the word stay
 * asleep). A clear before the writer's setting comes after the reader's
 * count went, so the writer's read of the records, later, sees it gone; a
 * clear after it makes the word differ from the value slept on
 * (not-equal, or the wake finds the writer's node published). While the
 * writer holds, DRAINING is clear: readers that back off then change
 * nothing and wake nobody.
 *
 * R3 (dead readers give their holds back). A record whose owner is dead
 * (kill -9, or a worker's end) counts for nobody: the writer's read of the
 * records empties it and sets DIED on the word, so that the writer is told
 * (ownerDied). A writer that waits for readers watches their processes
 * (shm_owners.c), so a reader's death pokes it (shm_wait.c) and it reads
 * the records again.
 *
 * R4 (a writer that finds no record in use reads none). The header page
 * counts the records in use (TL_SHM_READERS_AT): a claim adds one before
 * its compare-exchange of the owner (and takes it back if it claims
 * nothing), a record emptied (by its holder or a reclaimer) takes its one
 * back after the owner is 0. So the count is at least the number of
 * records with an owner at every moment (more only while a claim is on its
 * way, or for ever by one when a process dies between the two steps of a
 * claim: then writers read the records, as before). A reader adds its one
 * before its count and its read of the word; a writer that reads the
 * count after its id went into the word and finds 0 holds the lock
 * without reading the records (lib/ShmRWLock.js): in the total order of
 * the sequentially consistent operations, a reader whose one came after
 * that read reads the word later still and sees the writer (R1's pair,
 * with the count in the place of the records).
 *
 * R5 (a reader handed the word). A writer's release may hand the word to a
 * sleeping reader that has waited 1 ms (tl_shm_lock_release's RWLock
 * mode: HANDED | WAITERS | its id), which takes it up in the native call
 * that finds its node notified (L8 of lib/ShmLock.js; kind READER, so
 * tl_shm_read_take_up): it counts its hold as any reader does (the count
 * of records in use first: R4) while the word still holds the handed
 * value, and only then frees the word (to 0, by a compare-exchange from
 * that value) and wakes every sleeper, so that the other readers go in
 * with it. While the word names it no writer is inside (the one that
 * released has left) and none can get in; a writer that gets in after the
 * free reads the count after its own id went in, and sees the reader (R4).
 * A reader killed between its count and the free leaves the handed value:
 * its id is cleared as a dead grantee's (no DIED), and its record is
 * emptied as a dead reader's (DIED, as for any reader killed holding).
 *
 * A thread that holds read locks asks again while a writer's id is in the
 * word: TL_SHM_RW_DEADLK (the writer waits for this thread's holds), as
 * src/rwlock.c refuses a read that would queue behind a waiting writer.
 */
#include <stdatomic.h>
#include <stdint.h>

#include "platform.h"
#include "shm.h"

typedef struct {
  /* The holder's owner id; 0 while free; TL_HOLD_GONE while a reclaimer
   * empties it. Claimed by a compare-exchange from 0, freed by its holder
   * or, once the holder is dead, by a reclaimer. */
  _Atomic uint32_t owner;
  /* The holder's read locks on the word; written by the holder (and set
   * to 0 by a reclaimer). */
  _Atomic uint32_t count;
  /* The word's offset in the data; written by the holder while count is
   * 0. */
  _Atomic uint64_t offset;
} tl_shm_hold_t;

_Static_assert(sizeof(tl_shm_hold_t) == 16, "holds are 16 bytes");
_Static_assert(TL_SHM_HOLDS_AT + TL_SHM_HOLDS * sizeof(tl_shm_hold_t) ==
                   TL_SHM_HEADER,
               "the holds end where the data starts");

/* Owner ids have 28 bits: this one is nobody's. */
#define TL_HOLD_GONE 0x80000000u

static tl_shm_hold_t *
tl__holds(char *base)
{
  return (tl_shm_hold_t *)(base + TL_SHM_HOLDS_AT);
}

/* The count of records in use (R4). */
static _Atomic uint32_t *
tl__readers(char *base)
{
  return (_Atomic uint32_t *)(base + TL_SHM_READERS_AT);
}

static uint64_t
tl__offset(char *base, const void *word)
{
  return (uint64_t)((const char *)word - base - TL_SHM_HEADER);
}

/* The caller's record of the word (only the caller changes it while the
 * caller lives), or NULL. */
static tl_shm_hold_t *
tl__mine(char *base, uint64_t offset, uint32_t owner)
{
  tl_shm_hold_t *holds = tl__holds(base);

  for (uint32_t i = 0; i < TL_SHM_HOLDS; i++) {
    tl_shm_hold_t *h = &holds[i];
    if (atomic_load(&h->owner) == owner && atomic_load(&h->count) > 0 &&
        atomic_load(&h->offset) == offset)
      return h;
  }
  return NULL;
}

/* Empties the record `h` if its owner `o` is dead. Returns 1 when it held
 * read locks (their word is then `*offset`), else 0. */
static int
tl__reclaim(tl_shm_join_t *j, char *base, tl_shm_hold_t *h, uint32_t o,
            uint64_t *offset)
{
  uint32_t want = o;

  if (o == 0 || o == TL_HOLD_GONE || tl_shm_owner_alive(j, o) != 0)
    return 0;
  if (!atomic_compare_exchange_strong(&h->owner, &want, TL_HOLD_GONE))
    return 0;
  *offset = atomic_load(&h->offset);
  uint32_t c = atomic_exchange(&h->count, 0);
  atomic_store(&h->owner, 0);
  atomic_fetch_sub(tl__readers(base), 1);
  return c > 0;
}

/* Tells the RWLock word at `offset` that a holder died (DIED), if the
 * offset lies in the data (the records are the library's, but the file is
 * the user's). */
static void
tl__mark_died(char *base, uint64_t offset)
{
  uint64_t size = atomic_load((_Atomic uint64_t *)(base + TL_SHM_SIZE_AT));

  if (offset % 4 == 0 && offset < size)
    atomic_fetch_or((_Atomic uint32_t *)(base + TL_SHM_HEADER + offset),
                    TL_SHM_RW_DIED);
}

/* Claims a free record, emptying those of dead owners on the way. */
static tl_shm_hold_t *
tl__claim(tl_shm_join_t *j, char *base, uint32_t owner)
{
  tl_shm_hold_t *holds = tl__holds(base);

  /* R4: counted before the claim, for the record it claims. */
  atomic_fetch_add(tl__readers(base), 1);
  for (int pass = 0; pass < 2; pass++) {
    for (uint32_t i = 0; i < TL_SHM_HOLDS; i++) {
      tl_shm_hold_t *h = &holds[i];
      uint32_t o = atomic_load(&h->owner);
      uint64_t offset;
      if (o == 0) {
        if (atomic_compare_exchange_strong(&h->owner, &o, owner))
          return h;
      } else if (pass == 1 && tl__reclaim(j, base, h, o, &offset)) {
        tl__mark_died(base, offset);
        i--; /* claim it on the next turn */
      }
    }
  }
  atomic_fetch_sub(tl__readers(base), 1);
  return NULL;
}

/* R2: a writer that waits for the readers reads the records again. */
static void
tl__wake_writer(tl_shm_join_t *j, char *base, _Atomic uint32_t *w)
{
  uint32_t v = atomic_load(w);

  while ((v & TL_SHM_RW_DRAINING) != 0) {
    if (atomic_compare_exchange_weak(w, &v, v & ~TL_SHM_RW_DRAINING)) {
      tl_shm_notify_owner(j, base, w, v & TL_SHM_RW_ID);
      return;
    }
  }
}

/* Gives back one read lock of the record `h` (its holder's). */
static void
tl__drop(tl_shm_join_t *j, char *base, _Atomic uint32_t *w, tl_shm_hold_t *h)
{
  uint32_t c = atomic_load(&h->count);

  if (c > 1) {
    atomic_store(&h->count, c - 1);
    return;
  }
  atomic_store(&h->count, 0);
  atomic_store(&h->owner, 0);
  atomic_fetch_sub(tl__readers(base), 1);
  tl__wake_writer(j, base, w);
}

int
tl_shm_read_enter(tl_shm_join_t *j, char *base, void *word, uint32_t owner)
{
  _Atomic uint32_t *w = word;
  uint64_t offset = tl__offset(base, word);
  int died = 0;

  if (tl_shm_header_ok(j) != 0)
    return TL_HOST_ECORRUPT;
  tl_shm_hold_t *h = tl__mine(base, offset, owner);
  int fresh = h == NULL;
  if (fresh) {
    h = tl__claim(j, base, owner);
    if (h == NULL)
      return TL_HOST_ENODES;
    atomic_store(&h->offset, offset);
    atomic_store(&h->count, 1);
  }
  for (;;) {
    uint32_t v = atomic_load(w);
    uint32_t id = v & TL_SHM_RW_ID;
    if (id == 0) {
      if (!fresh)
        atomic_store(&h->count, atomic_load(&h->count) + 1);
      /* Every reader that enters while DIED is set is told, so that all
       * the readers that waited behind a dead writer are, whichever of
       * them cleared its id. */
      return died || (v & TL_SHM_RW_DIED) != 0;
    }
    int alive = id == owner ? 1 : tl_shm_owner_alive(j, id);
    if (alive != 0) {
      /* A live writer (or this thread): back off. */
      if (fresh)
        tl__drop(j, base, w, h);
      if (alive < 0)
        return TL_HOST_ECORRUPT;
      return id == owner || !fresh ? TL_SHM_RW_DEADLK : TL_SHM_RW_BLOCKED;
    }
    /* A dead writer (or one that died waiting for readers): its id is
     * cleared, and the lock's holders are told (DIED); one that was handed
     * the lock by a release (HANDED) and died before it took it up never
     * held, and nobody is told. */
    uint32_t cleared =
        v & ~(TL_SHM_RW_ID | TL_SHM_RW_DRAINING | TL_SHM_RW_HANDED);
    uint32_t tell = (v & TL_SHM_RW_HANDED) ? 0 : TL_SHM_RW_DIED;
    if (atomic_compare_exchange_strong(w, &v, cleared | tell) && tell != 0)
      died = 1;
  }
}

int
tl_shm_read_take_up(const void *word, uint32_t owner)
{
  _Atomic uint32_t *w = (_Atomic uint32_t *)word;
  uint32_t id = owner & TL_SHM_RW_ID;
  uint32_t handed = TL_SHM_RW_HANDED | TL_SHM_LOCK_WAITERS | id;
  char *base;
  tl_shm_join_t *j = tl_shm_find_map(word, &base);

  if (j == NULL || tl_shm_header_ok(j) != 0 || atomic_load(w) != handed)
    return 0;
  uint64_t offset = tl__offset(base, word);
  /* R5: counted while the word names this thread (the count of records
   * first: R4), so no writer is inside or gets in without seeing it; only
   * then is the word freed. */
  tl_shm_hold_t *h = tl__mine(base, offset, owner);
  if (h != NULL) {
    atomic_store(&h->count, atomic_load(&h->count) + 1);
  } else {
    h = tl__claim(j, base, owner);
    if (h == NULL) {
      /* No record free: the word goes on, as from a release (its HANDED
       * cleared first: the release takes the holder's value). */
      uint32_t v = handed;
      if (atomic_compare_exchange_strong(w, &v, TL_SHM_LOCK_WAITERS | id))
        while (tl_shm_lock_release(j, base, word, atomic_load(w),
                                   TL_SHM_RELEASE_RW) == 2)
          ;
      return 0;
    }
    atomic_store(&h->offset, offset);
    atomic_store(&h->count, 1);
  }
  /* Only this thread takes the handed value away while its node is
   * NOTIFIED (L7 needs it gone; a dead grantee's is cleared only once it is
   * dead), and others only add WAITERS, which it has. */
  uint32_t v = handed;
  if (!atomic_compare_exchange_strong(w, &v, 0)) {
    tl__drop(j, base, w, h);
    return 0;
  }
  (void)tl_shm_notify(j, base, word, -1);
  return 1;
}

int
tl_shm_read_leave(tl_shm_join_t *j, char *base, void *word, uint32_t owner)
{
  if (tl_shm_header_ok(j) != 0)
    return TL_HOST_ECORRUPT;
  tl_shm_hold_t *h = tl__mine(base, tl__offset(base, word), owner);
  if (h == NULL)
    return TL_SHM_RW_NOTOWNER;
  tl__drop(j, base, word, h);
  return 0;
}

int64_t
tl_shm_read_holds(tl_shm_join_t *j, char *base, void *word, uint32_t owner,
                  int watch, int64_t *mine)
{
  tl_shm_hold_t *holds = tl__holds(base);
  uint64_t offset = tl__offset(base, word);
  uint32_t watched[(TL_SHM_SLOTS + 31) / 32] = { 0 };
  uint32_t me = tl_shm_join_slot(j);
  int64_t total = 0;
  int died = 0;

  *mine = 0;
  if (tl_shm_header_ok(j) != 0)
    return TL_HOST_ECORRUPT;
  for (uint32_t i = 0; i < TL_SHM_HOLDS; i++) {
    tl_shm_hold_t *h = &holds[i];
    uint32_t o = atomic_load(&h->owner);
    if (o == 0 || o == TL_HOLD_GONE)
      continue;
    uint32_t c = atomic_load(&h->count);
    if (c == 0 || atomic_load(&h->offset) != offset)
      continue;
    if (o == owner) {
      *mine += c;
      total += c;
      continue;
    }
    int alive = tl_shm_owner_alive(j, o);
    if (alive < 0)
      return TL_HOST_ECORRUPT;
    uint64_t at;
    if (alive == 0) {
      if (tl__reclaim(j, base, h, o, &at) && at == offset)
        died = 1;
      continue;
    }
    total += c;
    uint32_t slot = TL_SHM_ID_SLOT(o);
    if (watch && slot != me && slot < TL_SHM_SLOTS &&
        !(watched[slot / 32] & (1u << (slot % 32)))) {
      watched[slot / 32] |= 1u << (slot % 32);
      if (tl__shm_watch_id(j, o, tl_shm_poke) != 0)
        return TL_HOST_ENODES;
    }
  }
  if (died)
    atomic_fetch_or((_Atomic uint32_t *)word, TL_SHM_RW_DIED);
  return total;
}

int64_t
tl_shm_holds_used(char *base)
{
  tl_shm_hold_t *holds = tl__holds(base);
  int64_t used = 0;

  for (uint32_t i = 0; i < TL_SHM_HOLDS; i++)
    used += atomic_load(&holds[i].owner) != 0;
  return used;
}

int
tl_shm_wake_writer(tl_shm_join_t *j, char *base, void *word, uint32_t owner)
{
  (void)owner;
  if (tl_shm_header_ok(j) != 0)
    return TL_HOST_ECORRUPT;
  tl__wake_writer(j, base, word);
  return 0;
}
