/* A systematic checker for the read holds of RWLocks on memory shared by
 * processes: the Dekker pair of a reader's hold record and a writer's id in
 * the word (src/host/shm_rw.c, R1), with the count of records in use that a
 * writer reads instead of the records when it is 0 (R4; the writers' fast
 * path of lib/ShmRWLock.js). The readers' steps are those of both
 * tl_shm_read_enter / tl__drop in C and #enterFast / #drop of
 * lib/ShmRWLock.js, which take them in the same order.
 *
 * As test/c/shm_sem.c: no lock anywhere; the word, the records and the
 * count change by single sequentially consistent steps, so the model is a
 * state machine per actor whose every interleaving is explored, depth
 * first, with the states already seen skipped. The actors:
 *
 *   A0, A1  two readers, each of its own process. One read lock, twice
 *           over: the count of records in use up by one, a free record
 *           claimed (its owner set), its count set to 1, then the word
 *           read: free, the reader holds; a writer's id there, it backs
 *           off (count 0, owner 0, the count of records down by one),
 *           waits for the word to be free and tries again (twice at
 *           most). Leaving: count 0, owner 0, the count of records down
 *           by one. In scenario rw-death A0 dies at any one of its steps.
 *   W       a writer, twice over: its id into the word (one
 *           compare-exchange from free), then the count of records: 0, it
 *           holds; otherwise it reads the records one by one, empties one
 *           whose owner is dead (owner GONE, count 0, owner 0, the count of
 *           records down by one) and notes a live one with a count, and
 *           holds once a pass found none live; otherwise it reads the count
 *           again (the real writer sleeps until a reader leaves). Release:
 *           the word to 0; in the rw-handoff scenarios its first release
 *           hands the word to W2 instead (W2's id with HANDED, in one
 *           compare-exchange from its own: tl_shm_lock_release's H1 in its
 *           RWLock mode), if W2 is alive and asleep. W takes a dead
 *           grantee's id over as a dead writer's (lib/ShmRWLock.js
 *           #claim), without DIED when it was only handed the word.
 *   (A1)    in the rw-handoff-reader scenarios W's first release hands
 *           the word to A1 instead, if A1 is alive and waits (shm_rw.c,
 *           R5): A1 counts its hold (the count of records, a record, its
 *           count) while the word holds the handed value, then frees the
 *           word and holds; it may die at any step (-death: W writes once,
 *           so that only A0 can clear a dead grantee's id; -death-2: A0 may
 *           die too).
 *   W2      a writer asleep whose request has waited 1 ms: handed the word,
 *           it takes it up (HANDED cleared by compare-exchange, L8 of
 *           lib/ShmLock.js), then counts the readers as W does (R4), holds
 *           and releases. In the rw-handoff-death scenarios it dies at any
 *           step before its take-up (asleep, or handed); readers that wait
 *           then clear its id (shm_rw.c, tl_shm_read_enter), or W's next
 *           claim takes it over, without DIED when it was handed the word
 *           and never held. In rw-handoff-death W writes once (its only
 *           release may hand the word to W2), with A0's death as well; in
 *           rw-handoff-death-2 W writes twice.
 *
 * Checked after every step: exclusion (a writer never holds while a live
 * reader or the other writer does: R1, also across a hand-off), the count
 * of records in use is never below the number of records that have an
 * owner (R4, which makes a count of 0 mean that no reader holds or enters
 * without seeing the writer), and DIED is never set (the only writer that
 * dies, W2, dies before it held). Wherever no step can be taken: every
 * live actor is done.
 *
 * TL_INJECT_BUG=n builds a known bug into the model; test/c/run.sh checks
 * that the checker catches each (TL_EXPECT_BUG=1):
 *   1  a reader counts its record only after its read of the word found it
 *      free (the count comes too late for a writer's look)
 *   2  a leaving reader takes its one off the count before it frees its
 *      record's owner (the count falls below the records in use)
 *   3  the writer reads the count before its id goes into the word, not
 *      after (the look of the promise path before its claim, alone)
 *   4  a reader waits for a dead grantee's handed id to go, and clears
 *      nothing (nobody else would: a stall)
 *   5  a reader that clears a dead grantee's handed id sets DIED (the
 *      grantee never held: nobody died holding)
 *   6  a reader handed the word frees it before it counts its read hold
 *      (a writer gets in past it: R5)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#ifndef TL_INJECT_BUG
#define TL_INJECT_BUG 0
#endif

enum { A0 = 0, A1 = 1, W = 2, W2 = 3, NA = 4, NR = 2 };
enum { NONE = 255, GONE = 9 };

/* Program counters. */
enum {
  P_DONE,
  P_DEAD,
  /* a reader */
  A_INC,   /* the count of records up by one */
  A_CLAIM, /* compare-exchange: a free record's owner */
  A_COUNT, /* its count to 1 */
  A_READ,  /* read the word */
  A_BO1,   /* back off: count 0 */
  A_BO2,   /* owner 0 */
  A_BO3,   /* the count of records down by one */
  A_WAIT,  /* until the word is free */
  A_HOLD,  /* holds; leaving: count 0 */
  A_L2,    /* owner 0 */
  A_L3,    /* the count of records down by one */
  A_TU1,   /* handed the word (A1): the count of records up by one */
  A_TU2,   /* a free record's owner */
  A_TU3,   /* its count to 1 */
  A_TU4, /* compare-exchange: the handed word to 0, then every sleeper woken */
  /* the writer */
  W_LOOK,   /* (bug 3) the count of records, before its claim */
  W_CAS,    /* compare-exchange: its id into the free word */
  W_READR,  /* the count of records */
  W_SCAN,   /* read record `wscan` */
  W_RC1,    /* a dead owner's record: owner GONE */
  W_RC2,    /* count 0 */
  W_RC3,    /* owner 0 */
  W_RC4,    /* the count of records down by one */
  W_HOLD,   /* holds; release: the word to 0 (or handed to W2) */
  W2_SLEEP, /* W2 asleep: handed the word, takes it up */
};

typedef struct {
  uint8_t word;   /* 0, or 1 + w: writer w's id (W: 1, W2: 2) */
  uint8_t handed; /* HANDED: the id in the word is a grantee's */
  uint8_t died;   /* DIED */
  uint8_t handed_once, w2_alive, w2_deaths;
  uint8_t readers;
  uint8_t owner[NR]; /* 0 free, a + 1 reader a's, GONE */
  uint8_t count[NR];
  uint8_t pc[NA];
  uint8_t rec[2]; /* the record a reader claimed, or NONE */
  uint8_t tries[2];
  uint8_t rounds[NA];
  uint8_t alive[2];
  uint8_t wscan[2], wsaw[2], wlook;
  uint8_t deaths_left;
} st_t;

static const char *const actor_names[] = { "A0", "A1", "W", "W2" };

/* The scenario's: to whom W's first release hands the word (0: nobody, W2
 * or A1), if it is alive and asleep. */
static int handoff;

/* Whether the word names a dead writer or a dead grantee (W never dies). */
static int
dead_id(const st_t *s)
{
  return (s->word == 2 && !s->w2_alive) || (s->word == 3 && !s->alive[A1]);
}

static void
fail(const st_t *s, const char *what)
{
  (void)s;
  model_fail(actor_names, what);
}

/* A reader starts a read lock (or its next try). */
static void
reader_begin(st_t *s, int a)
{
  s->pc[a] = TL_INJECT_BUG == 1 ? A_CLAIM : A_INC;
}

/* Reader `a` claims a free record (its owner set): 0 when none is free. */
static int
claim_record(st_t *s, int a)
{
  for (int r = 0; r < NR; r++) {
    if (s->owner[r] == 0) {
      s->owner[r] = (uint8_t)(a + 1);
      s->rec[a] = (uint8_t)r;
      return 1;
    }
  }
  return 0;
}

/* A1's handed word, if it still is, goes to 0 (R5's free). */
static void
free_handed(st_t *s)
{
  if (s->word == 3 && s->handed) {
    s->word = 0;
    s->handed = 0;
  }
}

/* One step of actor `a`; 0 when it cannot move now. */
static int
step(st_t *s, int a)
{
  int r, wi = a == W2;

  switch (s->pc[a]) {
  case A_INC:
    s->readers++;
    s->pc[a] = A_CLAIM;
    return 1;
  case A_CLAIM:
    if (!claim_record(s, a)) {
      /* Every record taken (by dead readers not yet emptied): a real
       * reader gets ENODES; here it gives up. */
      if (TL_INJECT_BUG != 1)
        s->readers--;
      s->pc[a] = P_DONE;
      return 1;
    }
    s->pc[a] = A_COUNT;
    return 1;
  case A_COUNT:
    s->count[s->rec[a]] = 1;
    s->pc[a] = A_READ;
    return 1;
  case A_READ:
    if (s->word == 0) {
      if (TL_INJECT_BUG == 1)
        s->readers++;
      s->pc[a] = A_HOLD;
    } else {
      s->pc[a] = A_BO1;
    }
    return 1;
  case A_BO1:
    s->count[s->rec[a]] = 0;
    s->pc[a] = A_BO2;
    return 1;
  case A_BO2:
    s->owner[s->rec[a]] = 0;
    s->rec[a] = NONE;
    s->pc[a] = TL_INJECT_BUG == 1 ? A_WAIT : A_BO3;
    return 1;
  case A_BO3:
    s->readers--;
    s->pc[a] = A_WAIT;
    return 1;
  case A_WAIT:
    if (a == A1 && s->word == 3 && s->handed) {
      /* Handed the word (R5): its read hold counted before the free (bug 6:
       * after it). */
      s->pc[a] = TL_INJECT_BUG == 6 ? A_TU4 : A_TU1;
      return 1;
    }
    if (dead_id(s) && TL_INJECT_BUG != 4) {
      /* A dead writer's id is cleared; one that was handed the word
       * never held, and nobody is told. */
      if (!s->handed || TL_INJECT_BUG == 5)
        s->died = 1;
      s->word = 0;
      s->handed = 0;
      return 1;
    }
    if (s->word != 0)
      return 0;
    if (s->tries[a] == 0) {
      s->pc[a] = P_DONE;
    } else {
      s->tries[a]--;
      reader_begin(s, a);
    }
    return 1;
  case A_HOLD:
    s->count[s->rec[a]] = 0;
    if (TL_INJECT_BUG == 2) {
      s->readers--;
      s->pc[a] = A_L2;
    } else {
      s->pc[a] = A_L2;
    }
    return 1;
  case A_L2:
    s->owner[s->rec[a]] = 0;
    s->rec[a] = NONE;
    s->pc[a] = TL_INJECT_BUG == 2 ? P_DONE : A_L3;
    if (TL_INJECT_BUG == 2 && s->rounds[a] > 0) {
      s->rounds[a]--;
      reader_begin(s, a);
    }
    return 1;
  case A_L3:
    s->readers--;
    if (s->rounds[a] > 0) {
      s->rounds[a]--;
      reader_begin(s, a);
    } else {
      s->pc[a] = P_DONE;
    }
    return 1;

  case W_LOOK:
    s->wlook = s->readers;
    s->pc[a] = W_CAS;
    return 1;
  case A_TU1:
    s->readers++;
    s->pc[a] = A_TU2;
    return 1;
  case A_TU2:
    if (!claim_record(s, a)) {
      /* No record: the word goes on as from a release (freed, every
       * sleeper woken), and the reader tries again. */
      s->readers--;
      free_handed(s);
      s->pc[a] = A_WAIT;
      return 1;
    }
    s->pc[a] = A_TU3;
    return 1;
  case A_TU3:
    s->count[s->rec[a]] = 1;
    s->pc[a] = TL_INJECT_BUG == 6 ? A_HOLD : A_TU4;
    return 1;
  case A_TU4:
    free_handed(s);
    s->pc[a] = TL_INJECT_BUG == 6 ? A_TU1 : A_HOLD;
    return 1;
  case W_CAS:
    if (dead_id(s)) {
      /* A dead writer's id taken over (DIED), a dead grantee's without. */
      if (!s->handed)
        s->died = 1;
      s->handed = 0;
      s->word = 1;
      s->pc[a] = W_READR;
      return 1;
    }
    if (s->word != 0)
      return 0;
    s->word = 1;
    if (TL_INJECT_BUG == 3) {
      /* The look before the claim decides. */
      if (s->wlook == 0) {
        s->pc[a] = W_HOLD;
      } else {
        s->wscan[0] = 0;
        s->wsaw[0] = 0;
        s->pc[a] = W_SCAN;
      }
    } else {
      s->pc[a] = W_READR;
    }
    return 1;
  case W_READR:
    if (s->readers == 0) {
      s->pc[a] = W_HOLD;
    } else {
      s->wscan[wi] = 0;
      s->wsaw[wi] = 0;
      s->pc[a] = W_SCAN;
    }
    return 1;
  case W_SCAN: {
    if (s->wscan[wi] == NR) {
      s->pc[a] = s->wsaw[wi] ? W_READR : W_HOLD;
      return 1;
    }
    r = s->wscan[wi];
    uint8_t o = s->owner[r];
    if (o != 0 && o != GONE && !s->alive[o - 1]) {
      s->pc[a] = W_RC1;
      return 1;
    }
    if (o != 0 && o != GONE && s->count[r] > 0)
      s->wsaw[wi] = 1;
    s->wscan[wi]++;
    return 1;
  }
  case W_RC1:
    /* Another writer may have emptied it first: then nothing to do. */
    if (s->owner[s->wscan[wi]] == 0 || s->owner[s->wscan[wi]] == GONE) {
      s->wscan[wi]++;
      s->pc[a] = W_SCAN;
      return 1;
    }
    s->owner[s->wscan[wi]] = GONE;
    s->pc[a] = W_RC2;
    return 1;
  case W_RC2:
    s->count[s->wscan[wi]] = 0;
    s->pc[a] = W_RC3;
    return 1;
  case W_RC3:
    s->owner[s->wscan[wi]] = 0;
    s->pc[a] = W_RC4;
    return 1;
  case W_RC4:
    s->readers--;
    s->wscan[wi]++;
    s->pc[a] = W_SCAN;
    return 1;
  case W2_SLEEP:
    /* Handed the word: the take-up, a compare-exchange from the handed
     * value. */
    if (s->word != 2 || !s->handed)
      return 0;
    s->handed = 0;
    s->pc[a] = W_READR;
    return 1;
  case W_HOLD:
    if (a == W2) {
      s->word = 0;
      s->pc[a] = P_DONE;
      return 1;
    }
    if (handoff == W2 && !s->handed_once && s->w2_alive &&
        s->pc[W2] == W2_SLEEP) {
      /* H1: handed to the writer that has waited 1 ms. */
      s->word = 2;
      s->handed = 1;
      s->handed_once = 1;
    } else if (handoff == A1 && !s->handed_once && s->alive[A1] &&
               s->pc[A1] == A_WAIT) {
      /* H1: handed to the reader that has waited 1 ms (R5). */
      s->word = 3;
      s->handed = 1;
      s->handed_once = 1;
    } else {
      s->word = 0;
    }
    if (s->rounds[W] > 0) {
      s->rounds[W]--;
      s->pc[a] = TL_INJECT_BUG == 3 ? W_LOOK : W_CAS;
    } else {
      s->pc[a] = P_DONE;
    }
    return 1;
  default:
    return 0;
  }
}

static void
check(const st_t *s)
{
  int owned = 0;

  for (int r = 0; r < NR; r++)
    owned += s->owner[r] != 0;
  if (s->readers < owned || s->readers > 8)
    fail(s, "the count of records in use is below the records that have an "
            "owner (R4)");
  if (s->died)
    fail(s, "DIED is set, but no writer died holding");
  int writers = (s->pc[W] == W_HOLD) + (s->w2_alive && s->pc[W2] == W_HOLD);
  if (writers > 1)
    fail(s, "both writers hold");
  if (writers == 0)
    return;
  for (int a = A0; a <= A1; a++)
    if (s->alive[a] && s->pc[a] == A_HOLD)
      fail(s, "a writer holds while a reader does (R1)");
}

static int
quiet(const st_t *s)
{
  for (int a = 0; a < NA; a++) {
    if ((a <= A1 && !s->alive[a]) || (a == W2 && !s->w2_alive))
      continue;
    if (s->pc[a] != P_DONE)
      return 0;
  }
  return 1;
}

static void explore(const st_t *s, int depth);

static void
go(const st_t *s, int depth, int who, int pc)
{
  if (!model_push(depth, who, pc)) {
    fail(s, "the execution is too long (a livelock?)");
    return;
  }
  check(s);
  if (failures == 0)
    explore(s, depth + 1);
}

static void
explore(const st_t *s, int depth)
{
  if (!model_visit(s, sizeof(*s)))
    return;
  int moved = 0;
  for (int a = 0; a < NA && failures == 0; a++) {
    if ((a <= A1 && !s->alive[a]) || (a == W2 && !s->w2_alive))
      continue;
    st_t n = *s;
    int pc = n.pc[a];
    if (step(&n, a)) {
      moved = 1;
      go(&n, depth, a, pc);
    }
  }
  /* A0 dies at any step (before it is done). */
  if (failures == 0 && s->alive[A0] && s->deaths_left > 0 &&
      s->pc[A0] != P_DONE) {
    st_t n = *s;
    n.deaths_left--;
    n.alive[A0] = 0;
    n.pc[A0] = P_DEAD;
    moved = 1;
    go(&n, depth, 200 + A0, s->pc[A0]);
  }
  /* A1, the grantee of the rw-handoff-reader scenarios, dies at any step. */
  if (failures == 0 && handoff == A1 && s->alive[A1] && s->w2_deaths > 0 &&
      s->pc[A1] != P_DONE) {
    st_t n = *s;
    n.w2_deaths--;
    n.alive[A1] = 0;
    n.pc[A1] = P_DEAD;
    moved = 1;
    go(&n, depth, 200 + A1, s->pc[A1]);
  }
  /* W2 dies before it took the word up (asleep, or handed it). */
  if (failures == 0 && handoff == W2 && s->w2_alive && s->w2_deaths > 0 &&
      s->pc[W2] == W2_SLEEP) {
    st_t n = *s;
    n.w2_deaths--;
    n.w2_alive = 0;
    n.pc[W2] = P_DEAD;
    moved = 1;
    go(&n, depth, 200 + W2, s->pc[W2]);
  }
  if (!moved && failures == 0 && !quiet(s))
    fail(s, "an actor waits with nothing left to let it on");
}

static int
run(const char *name, int deaths, int hands, int w2_deaths, int w_rounds)
{
  st_t s;
  memset(&s, 0, sizeof(s));
  model_begin(name);
  handoff = hands;
  s.w2_alive = 1;
  s.w2_deaths = (uint8_t)w2_deaths;
  s.pc[W2] = hands == W2 ? W2_SLEEP : P_DONE;
  for (int a = A0; a <= A1; a++) {
    s.alive[a] = 1;
    s.rec[a] = NONE;
    s.tries[a] = 2;
    s.rounds[a] = 1;
    reader_begin(&s, a);
  }
  s.rounds[W] = (uint8_t)w_rounds;
  s.pc[W] = TL_INJECT_BUG == 3 ? W_LOOK : W_CAS;
  s.deaths_left = (uint8_t)deaths;
  explore(&s, 0);
  model_report(name, 12, failures, explored, pruned);
  return failures;
}

int
main(void)
{
  static const struct {
    const char *name;
    int deaths, handoff, w2_deaths, w_rounds;
  } scenarios[] = {
    { "rw-basic", 0, 0, 0, 1 },
    { "rw-death", 1, 0, 0, 1 },
    { "rw-handoff", 0, W2, 0, 1 },
    /* W writes once: nobody but the readers is left to clear the id of a
     * grantee that died. */
    { "rw-handoff-death", 1, W2, 1, 0 },
    { "rw-handoff-death-2", 0, W2, 1, 1 },
    { "rw-handoff-reader", 0, A1, 0, 1 },
    { "rw-handoff-reader-death", 0, A1, 1, 0 },
    { "rw-handoff-reader-death-2", 1, A1, 1, 1 },
  };
  int failed = 0, ran = 0;

  if (model_init(22) != 0)
    return 2;
  for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
    if (!model_wanted(scenarios[i].name))
      continue;
    ran++;
    failed += run(scenarios[i].name, scenarios[i].deaths, scenarios[i].handoff,
                  scenarios[i].w2_deaths, scenarios[i].w_rounds) != 0;
  }
  model_free();
  return model_exit(failed, ran);
}
