/* A systematic checker for the reservation of the Semaphore across
 * processes (lib/ShmSemaphore.js, invariants S1-S8; tl_shm_wait_reserve,
 * tl__reserve_end and tl_shm_sem_reserved in src/host/shm_wait.c).
 *
 * As test/c/shm_handoff.c for the AsyncLock: no lock anywhere, the word
 * and the nodes change by single atomic steps, so the model is a state
 * machine per actor whose every interleaving is explored, depth first,
 * with the states already seen skipped. The actors:
 *
 *   R   a request for 2 permits that has waited 1 ms: it takes them if
 *       free, else reserves (publishes its node, then sets WAITERS |
 *       RESERVED by compare-exchange), sleeps, and at each wake takes
 *       them (clearing RESERVED), or re-arms its node and looks again;
 *       it may time out (once) and give the reservation up; once served
 *       it wakes the others if permits are left, and releases its 2;
 *   T   a request for 1 permit that has not waited 1 ms: it takes a free,
 *       unreserved permit; behind a reservation it checks that the
 *       reservation has a live node (else clears RESERVED, S8); it sleeps
 *       on the word as a lock waiter (poked when a process of the file
 *       dies, S9); once served it releases its permit, and asks again
 *       (twice in all);
 *   L   holds 2 permits at the start and releases them one at a time
 *       (each release keeps RESERVED, clears WAITERS and, if either was
 *       set, notifies every node: one step to read a node, one to move it
 *       from WAITING to NOTIFIED, a dead owner's node reclaimed instead);
 * and R's death at any step (kill -9: its node stays until reclaimed, the
 * watchers poke every lock waiter: T's node freed, T looks again). One
 * permit is free at the start: 3 in all.
 *
 * Checked after every step: the permits are conserved (free + held, the
 * dead's included, is 3: S1); RESERVED is on the word exactly while R
 * holds its reservation, unless R is dead (S5, S7); nobody but R clears
 * it while R lives and holds it (S6: the bound). Wherever no step but a
 * timeout can be taken: every live actor is done (no lost wake-up: L
 * gives every permit back, so each request can be served).
 *
 * TL_INJECT_BUG=n builds a known bug into the model; test/c/run.sh checks
 * that the checker catches each (TL_EXPECT_BUG=1):
 *   1  a woken R without its permits frees its node and publishes a new
 *      one, instead of re-arming the same node (S5)
 *   2  a release clears RESERVED (S6)
 *   3  a release notifies only when WAITERS was set, not for RESERVED alone
 *      (S2: a re-armed R sleeps on with its permits free)
 *   4  R sets RESERVED before it publishes its node (S5)
 *   5  a death pokes nobody (S8: T sleeps behind a dead reservation)
 *   6  R gives up without clearing RESERVED (S5)
 *   7  T's publication does not check the poke counter (a death between
 *      its look and its sleep is missed: S8)
 *   8  T sleeps as a plain waiter when the word has no reservation (not
 *      poked: a releaser that dies between its compare-exchange and its
 *      notify leaves it asleep with the permits free, S9)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#ifndef TL_INJECT_BUG
#define TL_INJECT_BUG 0
#endif

enum { R = 0, T = 1, L = 2, NA = 3 };
enum { FREE = 0, WAITING = 1, NOTIFIED = 2 };
#define NEED_R 2
#define NEED_T 1
#define TOTAL 3

/* Program counters. */
enum {
  P_DONE,
  P_DEAD,
  /* R */
  R_TRY,     /* load the word */
  R_TAKE,    /* compare-exchange: take 2 */
  R_PUB,     /* publish its node */
  R_SETRES,  /* compare-exchange: WAITERS | RESERVED */
  R_WD,      /* withdraw its node (the compare-exchange failed) */
  R_SLEEP,   /* asleep on its node */
  R_END,     /* tl__reserve_end: load the word */
  R_ACC,     /* compare-exchange: take 2, clear RESERVED */
  R_FREEACC, /* free its node after taking */
  R_FREEOK,  /* free its node: the reservation was lost */
  R_ST,      /* load its node's state */
  R_REARM,   /* NOTIFIED -> WAITING, next seq */
  R_SERVED,  /* load the word: wake the others if permits are left */
  R_GU,      /* give up: load the word */
  R_GUCAS,   /* compare-exchange: clear RESERVED */
  R_GUFREE,  /* free its node */
  R_GUWAKE,  /* load the word: wake the others if WAITERS */
  /* T */
  T_TRY,   /* read the poke counter, load the word */
  T_TAKE,  /* compare-exchange: take 1 */
  T_CHK,   /* the reservation's node: live? */
  T_CLR,   /* compare-exchange: clear an orphan RESERVED */
  T_PREP,  /* compare-exchange: WAITERS on */
  T_PUB,   /* publish its node */
  T_CHECK, /* the value check (and the poke counter, behind a reservation) */
  T_WD,    /* withdraw / leave its node */
  T_SLEEP, /* asleep on its node */
  /* every releaser */
  X_REL,    /* load the word */
  X_RELCAS, /* compare-exchange: add the permits */
  /* notify-all, a sub-machine of any actor */
  N_READ, /* read node `nidx` */
  N_CAS   /* WAITING -> NOTIFIED (or reclaim a dead owner's) */
};

typedef struct {
  uint8_t P, W, RES;       /* the word: free permits, WAITERS, RESERVED */
  uint8_t node[2], seq[2]; /* R's and T's nodes */
  uint8_t tlock;           /* T's node is a lock waiter's (pokes free it) */
  uint8_t alive_r;
  uint8_t pc[NA];
  uint8_t sP[NA], sW[NA], sRES[NA]; /* the word as last loaded */
  uint8_t wseq[2];                  /* the seq a sleeper sleeps on */
  uint8_t pk, pokes, poke_pending;
  uint8_t held[NA];
  uint8_t reserving; /* R holds the reservation */
  uint8_t timeout_left, deaths_left;
  uint8_t l_left; /* L's releases still to make */
  uint8_t t_left; /* T's requests still to make after this one */
  uint8_t rel_n[NA];
  uint8_t nidx[NA], nseen[NA], nret[NA]; /* notify-all */
} st_t;

static int trail[512][2];
static int trail_len;

static const char *actor_names[] = { "R", "T", "L" };

static void
fail(const st_t *s, const char *what)
{
  if (failures == 0) {
    fprintf(stderr, "%s: the execution:\n", scenario_name);
    for (int i = 0; i < trail_len; i++) {
      int a = trail[i][0], pc = trail[i][1];
      if (a >= 300)
        fprintf(stderr, "  poke\n");
      else if (a >= 200)
        fprintf(stderr, "  %s dies\n", actor_names[a - 200]);
      else if (a >= 100)
        fprintf(stderr, "  %s times out\n", actor_names[a - 100]);
      else
        fprintf(stderr, "  %s at pc %d\n", actor_names[a], pc);
    }
    fprintf(stderr,
            "%s: %s (word P=%d W=%d RES=%d; nodes R %d/%d T %d/%d; "
            "reserving %d; alive R %d)\n",
            scenario_name, what, s->P, s->W, s->RES, s->node[R], s->seq[R],
            s->node[T], s->seq[T], s->reserving, s->alive_r);
  }
  failures++;
}

/* Starts notify-all for actor `a`, returning to `ret` when done. */
static void
notify_all(st_t *s, int a, int ret)
{
  s->nidx[a] = 0;
  s->nret[a] = (uint8_t)ret;
  s->pc[a] = N_READ;
}

static void
free_node(st_t *s, int who)
{
  s->node[who] = FREE;
  s->seq[who] = (uint8_t)((s->seq[who] + 1) & 7);
}

/* Starts a release of `n` permits by `a`. */
static void
release(st_t *s, int a, int n)
{
  s->rel_n[a] = (uint8_t)n;
  s->pc[a] = X_REL;
}

/* One step of actor `a`; 0 when it cannot take one now. */
static int
step(st_t *s, int a)
{
  switch (s->pc[a]) {
  /* ---- R */
  case R_TRY:
    s->sP[a] = s->P;
    s->sW[a] = s->W;
    s->sRES[a] = s->RES;
    if (!s->RES && s->P >= NEED_R)
      s->pc[a] = R_TAKE;
    else if (s->RES)
      s->pc[a] = R_TRY; /* only R reserves: cannot be (checked below) */
    else
      s->pc[a] = TL_INJECT_BUG == 4 ? R_SETRES : R_PUB;
    if (s->RES && s->alive_r)
      fail(s, "R found RESERVED that is not its own");
    return 1;
  case R_TAKE:
    if (s->P == s->sP[a] && s->W == s->sW[a] && s->RES == s->sRES[a]) {
      s->P -= NEED_R;
      s->held[R] = NEED_R;
      release(s, a, NEED_R);
    } else {
      s->pc[a] = R_TRY;
    }
    return 1;
  case R_PUB:
    s->node[R] = WAITING;
    s->wseq[R] = s->seq[R];
    s->pc[a] = TL_INJECT_BUG == 4 ? R_SLEEP : R_SETRES;
    return 1;
  case R_SETRES:
    if (s->P == s->sP[a] && s->W == s->sW[a] && s->RES == s->sRES[a] &&
        !s->RES && s->P < NEED_R) {
      s->W = 1;
      s->RES = 1;
      s->reserving = 1;
      s->pc[a] = TL_INJECT_BUG == 4 ? R_PUB : R_SLEEP;
    } else {
      s->pc[a] = TL_INJECT_BUG == 4 ? R_TRY : R_WD;
    }
    return 1;
  case R_WD:
    free_node(s, R);
    s->pc[a] = R_TRY;
    return 1;
  case R_SLEEP:
    if (s->node[R] == WAITING && s->seq[R] == s->wseq[R])
      return 0;
    s->pc[a] = R_END;
    return 1;
  case R_END:
    s->sP[a] = s->P;
    s->sW[a] = s->W;
    s->sRES[a] = s->RES;
    s->pc[a] = s->P >= NEED_R ? R_ACC : !s->RES ? R_FREEOK : R_ST;
    return 1;
  case R_ACC:
    if (s->P == s->sP[a] && s->W == s->sW[a] && s->RES == s->sRES[a]) {
      s->P -= NEED_R;
      s->RES = 0;
      s->reserving = 0;
      s->held[R] = NEED_R;
      s->pc[a] = R_FREEACC;
    } else {
      s->pc[a] = R_END;
    }
    return 1;
  case R_FREEACC:
    free_node(s, R);
    s->pc[a] = R_SERVED;
    return 1;
  case R_FREEOK:
    free_node(s, R);
    s->reserving = 0;
    s->pc[a] = R_TRY;
    return 1;
  case R_ST:
    if (s->node[R] == WAITING && s->seq[R] == s->wseq[R]) {
      s->pc[a] = R_SLEEP;
    } else if (s->node[R] == NOTIFIED && s->seq[R] == s->wseq[R]) {
      s->pc[a] = R_REARM;
    } else {
      fail(s, "R's node changed under it");
      s->pc[a] = P_DONE;
    }
    return 1;
  case R_REARM:
    if (TL_INJECT_BUG == 1) {
      /* Bug 1: a new node instead of the same one. */
      free_node(s, R);
      s->pc[a] = R_PUB + 100; /* handled below */
      return 1;
    }
    s->seq[R] = (uint8_t)((s->seq[R] + 1) & 7);
    s->node[R] = WAITING;
    s->wseq[R] = s->seq[R];
    s->pc[a] = R_END;
    return 1;
  case R_PUB + 100:
    s->node[R] = WAITING;
    s->wseq[R] = s->seq[R];
    s->pc[a] = R_END;
    return 1;
  case R_SERVED:
    if (s->P > 0 && s->W)
      notify_all(s, a, X_REL);
    else
      s->pc[a] = X_REL;
    s->rel_n[a] = NEED_R;
    return 1;
  case R_GU:
    s->sP[a] = s->P;
    s->sW[a] = s->W;
    s->sRES[a] = s->RES;
    s->pc[a] = (s->RES && TL_INJECT_BUG != 6) ? R_GUCAS : R_GUFREE;
    if (TL_INJECT_BUG == 6)
      s->reserving = 0;
    return 1;
  case R_GUCAS:
    if (s->P == s->sP[a] && s->W == s->sW[a] && s->RES == s->sRES[a]) {
      s->RES = 0;
      s->reserving = 0;
      s->pc[a] = R_GUFREE;
    } else {
      s->pc[a] = R_GU;
    }
    return 1;
  case R_GUFREE:
    free_node(s, R);
    s->pc[a] = R_GUWAKE;
    return 1;
  case R_GUWAKE:
    if (s->W)
      notify_all(s, a, P_DONE);
    else
      s->pc[a] = P_DONE;
    return 1;

  /* ---- T */
  case T_TRY:
    s->pk = s->pokes;
    s->sP[a] = s->P;
    s->sW[a] = s->W;
    s->sRES[a] = s->RES;
    s->pc[a] = (!s->RES && s->P >= NEED_T) ? T_TAKE : s->RES ? T_CHK : T_PREP;
    s->tlock = TL_INJECT_BUG == 8 ? s->RES : 1;
    return 1;
  case T_TAKE:
    if (s->P == s->sP[a] && s->W == s->sW[a] && s->RES == s->sRES[a]) {
      s->P -= NEED_T;
      s->held[T] = NEED_T;
      release(s, a, NEED_T);
    } else {
      s->pc[a] = T_TRY;
    }
    return 1;
  case T_CHK:
    /* tl_shm_sem_reserved: a node of R's, waiting or notified, R alive. */
    s->pc[a] = (s->node[R] != FREE && s->alive_r) ? T_PREP : T_CLR;
    return 1;
  case T_CLR:
    if (s->P == s->sP[a] && s->W == s->sW[a] && s->RES == s->sRES[a]) {
      if (s->reserving && s->alive_r)
        fail(s, "T cleared the RESERVED of a live reservation (the bound)");
      s->RES = 0;
      if (s->sW[a])
        notify_all(s, a, T_TRY);
      else
        s->pc[a] = T_TRY;
    } else {
      s->pc[a] = T_TRY;
    }
    return 1;
  case T_PREP:
    /* #prepare: WAITERS onto the value seen, unless it has it. */
    if (s->sW[a]) {
      s->pc[a] = T_PUB;
    } else if (s->P == s->sP[a] && !s->W && s->RES == s->sRES[a]) {
      s->W = 1;
      s->sW[a] = 1;
      s->pc[a] = T_PUB;
    } else {
      s->pc[a] = T_TRY;
    }
    return 1;
  case T_PUB:
    s->node[T] = WAITING;
    s->wseq[T] = s->seq[T];
    s->pc[a] = T_CHECK;
    return 1;
  case T_CHECK:
    if (s->P != s->sP[a] || s->W != s->sW[a] || s->RES != s->sRES[a] ||
        (s->tlock && s->pokes != s->pk && TL_INJECT_BUG != 7))
      s->pc[a] = T_WD;
    else
      s->pc[a] = T_SLEEP;
    return 1;
  case T_WD:
    if (s->node[T] != FREE && s->seq[T] == s->wseq[T])
      free_node(s, T);
    s->pc[a] = T_TRY;
    return 1;
  case T_SLEEP:
    if (s->node[T] == WAITING && s->seq[T] == s->wseq[T])
      return 0;
    s->pc[a] = T_WD;
    return 1;

  /* ---- releases */
  case X_REL:
    s->sP[a] = s->P;
    s->sW[a] = s->W;
    s->sRES[a] = s->RES;
    s->pc[a] = X_RELCAS;
    return 1;
  case X_RELCAS:
    if (s->P == s->sP[a] && s->W == s->sW[a] && s->RES == s->sRES[a]) {
      int n = s->rel_n[a];
      int wake = TL_INJECT_BUG == 3 ? s->W : (s->W || s->RES);
      s->P = (uint8_t)(s->P + n);
      s->held[a] = (uint8_t)(s->held[a] - n);
      s->W = 0;
      if (TL_INJECT_BUG == 2)
        s->RES = 0;
      int after = P_DONE;
      if (a == T && s->t_left > 0) {
        s->t_left--;
        after = T_TRY;
      }
      if (a == L && --s->l_left > 0) {
        after = X_REL;
        s->rel_n[a] = 1;
      }
      if (wake)
        notify_all(s, a, after);
      else
        s->pc[a] = (uint8_t)after;
    } else {
      s->pc[a] = X_REL;
    }
    return 1;

  /* ---- notify-all: every node, one at a time */
  case N_READ: {
    int i = s->nidx[a];
    if (i >= 2) {
      s->pc[a] = s->nret[a];
      return 1;
    }
    s->nseen[a] = s->node[i] == WAITING ? (uint8_t)(1 + s->seq[i]) : (uint8_t)0;
    if (s->nseen[a] == 0)
      s->nidx[a]++;
    else
      s->pc[a] = N_CAS;
    return 1;
  }
  case N_CAS: {
    int i = s->nidx[a];
    if (s->node[i] == WAITING && 1 + s->seq[i] == s->nseen[a]) {
      if (i == R && !s->alive_r)
        free_node(s, R); /* a dead owner's node is reclaimed */
      else
        s->node[i] = NOTIFIED;
    }
    s->nidx[a]++;
    s->pc[a] = N_READ;
    return 1;
  }
  default:
    return 0;
  }
}

static void
check(const st_t *s)
{
  if (s->P + s->held[R] + s->held[T] + s->held[L] != TOTAL)
    fail(s, "permits not conserved");
  if (s->alive_r && s->RES != s->reserving &&
      !(s->pc[R] == R_GUFREE || s->pc[R] == R_GU || s->pc[R] == R_GUCAS))
    fail(s, "RESERVED is not R's reservation");
}

static int
quiet(const st_t *s)
{
  for (int a = 0; a < NA; a++) {
    if (a == R && !s->alive_r)
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
  if (depth >= (int)(sizeof(trail) / sizeof(trail[0]))) {
    fail(s, "the execution is too long (a livelock?)");
    return;
  }
  trail[depth][0] = who;
  trail[depth][1] = pc;
  trail_len = depth + 1;
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
    if (a == R && !s->alive_r)
      continue;
    st_t n = *s;
    int pc = n.pc[a];
    if (step(&n, a)) {
      moved = 1;
      go(&n, depth, a, pc);
    }
  }
  /* R times out while asleep. */
  if (failures == 0 && s->alive_r && s->pc[R] == R_SLEEP &&
      s->timeout_left > 0) {
    st_t n = *s;
    n.timeout_left--;
    n.pc[R] = R_GU;
    go(&n, depth, 100 + R, s->pc[R]);
  }
  /* R dies at any step (before it is done). */
  if (failures == 0 && s->alive_r && s->deaths_left > 0 && s->pc[R] != P_DONE) {
    st_t n = *s;
    n.deaths_left--;
    n.alive_r = 0;
    n.pc[R] = P_DEAD;
    n.reserving = 0;
    n.poke_pending = TL_INJECT_BUG != 5;
    moved = 1;
    go(&n, depth, 200 + R, s->pc[R]);
  }
  /* The watchers' poke after R's death: every lock waiter's node freed. */
  if (failures == 0 && s->poke_pending) {
    st_t n = *s;
    n.poke_pending = 0;
    n.pokes = (uint8_t)((n.pokes + 1) & 3);
    if (n.node[T] == WAITING && n.tlock)
      free_node(&n, T);
    moved = 1;
    go(&n, depth, 300, 0);
  }
  if (!moved && failures == 0 && !quiet(s))
    fail(s, "a live request sleeps with nothing left to wake it (lost "
            "wake-up)");
}

static int
run(const char *name, int timeouts, int deaths)
{
  st_t s;
  memset(&s, 0, sizeof(s));
  model_begin(name);
  s.P = TOTAL - 2;
  s.held[L] = 2;
  s.alive_r = 1;
  s.pc[R] = R_TRY;
  s.pc[T] = T_TRY;
  s.l_left = 2;
  s.t_left = 1;
  release(&s, L, 1);
  s.timeout_left = (uint8_t)timeouts;
  s.deaths_left = (uint8_t)deaths;
  explore(&s, 0);
  model_report(name, 22, failures, explored, pruned);
  return failures;
}

int
main(void)
{
  static const struct {
    const char *name;
    int timeouts, deaths;
  } scenarios[] = {
    { "sem-basic", 0, 0 },
    { "sem-timeouts", 1, 0 },
    { "sem-death", 0, 1 },
    { "sem-all", 1, 1 },
  };
  int failed = 0, ran = 0;

  if (model_init(22) != 0)
    return 2;
  for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
    if (!model_wanted(scenarios[i].name))
      continue;
    ran++;
    failed +=
        run(scenarios[i].name, scenarios[i].timeouts, scenarios[i].deaths) != 0;
  }
  model_free();
  return model_exit(failed, ran);
}
