/* A systematic checker for the hand-off protocol of the AsyncLock across
 * processes (lib/ShmLock.js, invariants I1-I6; tl_shm_lock_release in
 * src/host/shm_wait.c, steps H1-H3).
 *
 * That protocol has no lock anywhere: the lock word and the waiters' nodes
 * in the file change by compare-exchange only, from several processes. So
 * an execution is a sequence of atomic steps (one load, one
 * compare-exchange, one store), and a bug is a sequence of such steps. This
 * file models the protocol's steps as a small state machine per actor and
 * explores every interleaving of them, depth first, with the states already
 * seen skipped (their successors were explored from there):
 *
 *   H   holds the lock at the start and releases it (the release's steps:
 *       the scan of the nodes, the hand-off's two writes, the take-back,
 *       the free and the notify);
 *   W1  and W2, waiters asleep at the start, W1 the older (its ticket):
 *       woken, they try the word, take a hand-off up, take a dead holder's
 *       lock over, publish a node again and check the word again, or time
 *       out (at any moment, once each) and pass a hand-off they find on
 *       (#passOn: take it up, release it);
 *   B   a running thread that asks once (barging outside the FIFO mode; in
 *       the FIFO mode a free word with WAITERS is taken and released at
 *       once, I6);
 * and one death at any step of anyone (kill -9: its liveness ends, the
 * watchers poke every lock waiter, whose node is freed and who looks at the
 * word again). Every waiter is taken as eligible for a hand-off (in the
 * default mode: one that has waited 1 ms), but in the loop-* scenarios W1,
 * a promise waiter asleep since it queued: passed over, and called to come
 * when another is handed the lock, until it came to try and published its
 * node again (present).
 *
 * Checked after every step:
 *   - exclusion (I1): at most one actor runs its critical section, and the
 *     word names it without HANDED;
 *   - HANDED only with an owner;
 *   - the bound (I6): once a release's notify of a hand-off succeeded, the
 *     next grant is the grantee's (or a takeover after its death), unless
 *     it left (its timeout raced the hand-off: it passes it on);
 *   - FIFO mode: B is never granted while a waiter still waits for its
 *     turn (asleep, not timed out, alive);
 * and wherever no step but a timeout can be taken: no live waiter sleeps
 * (a lost wake-up), and at the end the word is free or names a dead actor,
 * with no live waiter's node left in the list.
 *
 * TL_INJECT_BUG=n builds a known bug into the model; test/c/run.sh checks
 * that the checker catches each (TL_EXPECT_BUG=1):
 *   1  the release does not take a hand-off back when the grantee's node
 *      left first (H2)
 *   2  the release notifies the grantee's node before it writes the word
 *   3  the release that frees the word wakes a waiter from the scan it made
 *      before the free (a node published in between is missed: H3)
 *   4  a hand-off whose grantee left is not free for others (a release
 *      that died between writing it and taking it back leaves the lock
 *      to nobody: L7)
 *   5  a woken grantee frees its node before it takes the hand-off up (a
 *      running thread takes it meanwhile: L8)
 *   6  the release that frees the word leaves WAITERS off although nodes
 *      other than the one it woke wait (a waiter woken that does not come
 *      leaves them asleep: H3)
 *   7  in the FIFO mode a running thread hands a free word with WAITERS on
 *      as often as it finds one (a livelock with a waiter: I6)
 *
 * Under the sanitizers (test/c/run.sh's tsan and asan builds; the model is
 * one thread, so they check only its own memory) the scenarios with both a
 * death and a timeout are left to the plain build, which runs them all.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#ifndef TL_INJECT_BUG
#define TL_INJECT_BUG 0
#endif

enum { H = 0, W1 = 1, W2 = 2, B = 3, NA = 4 };
enum { FREE = 0, WAITING = 1, NOTIFIED = 2 };

/* Program counters. */
enum {
  P_DONE,
  P_DEAD,
  P_CS,     /* holds the lock; next: unlock */
  P_UNLOCK, /* load the word */
  P_SLEEP,  /* asleep on its node */
  P_TRY,    /* load the word */
  P_TRYCAS, /* compare-exchange from the loaded value */
  P_SETW,   /* WAITERS onto the held value */
  P_PUB,    /* publish its node */
  P_CHECK,  /* the value check after publishing */
  P_LEAVE,  /* #passOn: load */
  P_LEAVECAS,
  P_REL_SCAN, /* the release (tl_shm_lock_release) */
  P_REL_NEXT,
  P_REL_HAND,
  P_REL_TELL,
  P_REL_BACK,
  P_REL_FREE,
  P_REL_NOTIFY,
  P_REL_MARK
};

/* The word: owner (actor + 1, 0: none), WAITERS, HANDED, DIED. */
#define OWN(v) ((v)&7u)
#define WB 8u
#define HB 16u
#define DB 32u

typedef struct {
  uint8_t word;
  uint8_t node[NA];  /* FREE, WAITING, NOTIFIED */
  uint8_t seq[NA];   /* grows at each free */
  uint8_t alive[NA]; /* liveness */
  uint8_t pc[NA];
  uint8_t seen[NA];      /* the word as last loaded (#try, unlock, passOn) */
  uint8_t target[NA];    /* the value #try writes */
  uint8_t pokes[NA];     /* the poke counter when #try loaded */
  uint8_t held[NA];      /* a release's `held` */
  uint8_t after[NA];     /* where a release returns to */
  uint8_t handon[NA];    /* #try takes the word only to release it (I6) */
  uint8_t handed_on[NA]; /* it did so once in this try: no more */
  uint8_t cand[NA][NA], cseq[NA][NA], ncand[NA], k[NA];
  uint8_t timeout_left[NA];
  uint8_t grants[NA];
  uint8_t left_[NA]; /* timed out */
  uint8_t deaths_left;
  uint8_t pokes_all;
  uint8_t handed_to; /* actor + 1 whose hand-off was notified, 0: none */
  uint8_t died_any;
  uint8_t fifo;
  /* W1 is a promise waiter whose loop may be busy: outside the FIFO mode
   * it is handed the lock only once present (it came to try and published
   * its node again); asleep since it queued, it is woken to come instead
   * when another is handed the lock (`call`, its node's seq + 1). */
  uint8_t loop_w1;
  uint8_t present_w1;
  uint8_t call[NA], callseq[NA];
} st_t;

/* The steps of the execution being explored: actor, and its pc before the
 * step (or 100 + actor for a timeout, 200 + actor for a death). */
static int trail[256][2];
static int trail_len;

static const char *pc_names[] = {
  "done",     "dead",     "cs",       "unlock",     "sleep",
  "try",      "trycas",   "setw",     "pub",        "check",
  "leave",    "leavecas", "rel_scan", "rel_next",   "rel_hand",
  "rel_tell", "rel_back", "rel_free", "rel_notify", "rel_mark"
};
static const char *actor_names[] = { "H", "W1", "W2", "B" };

static void
fail(const st_t *s, const char *what)
{
  if (failures == 0) {
    fprintf(stderr, "%s: the execution:\n", scenario_name);
    for (int i = 0; i < trail_len; i++) {
      int a = trail[i][0], pc = trail[i][1];
      if (a >= 200)
        fprintf(stderr, "  %s dies\n", actor_names[a - 200]);
      else if (a >= 100)
        fprintf(stderr, "  %s times out\n", actor_names[a - 100]);
      else
        fprintf(stderr, "  %s %s\n", actor_names[a], pc_names[pc]);
    }
  }
  if (failures++ < 3)
    fprintf(stderr,
            "%s: %s (word owner %u W%u H%u D%u; pcs %u %u %u %u; nodes %u "
            "%u %u %u; alive %u%u%u%u; grants %u %u %u %u)\n",
            scenario_name, what, OWN(s->word), !!(s->word & WB),
            !!(s->word & HB), !!(s->word & DB), s->pc[0], s->pc[1], s->pc[2],
            s->pc[3], s->node[0], s->node[1], s->node[2], s->node[3],
            s->alive[0], s->alive[1], s->alive[2], s->alive[3], s->grants[0],
            s->grants[1], s->grants[2], s->grants[3]);
}

static int
is_waiter(int a)
{
  return a == W1 || a == W2;
}

/* A node's free (its waiter or anyone): the seq grows. */
static void
node_free(st_t *s, int a)
{
  s->node[a] = FREE;
  s->seq[a]++;
}

static void
grant(st_t *s, int a)
{
  /* (After a death, every waiter is poked and may take a hand-off whose
   * grantee had no node when it looked, and whose value came back since:
   * the bound is checked in executions without deaths.) */
  if (s->handed_to != 0 && s->handed_to != a + 1 && !s->died_any &&
      s->alive[s->handed_to - 1] && !s->left_[s->handed_to - 1])
    fail(s, "a grant to another after a hand-off was notified (I6)");
  if (s->handed_to == a + 1)
    s->handed_to = 0;
  /* (After a death every waiter is poked and on its way: a running thread
   * may then come first.) */
  if (s->fifo && a == B && !s->died_any)
    for (int w = W1; w <= W2; w++)
      if (s->alive[w] && !s->left_[w] && s->grants[w] == 0)
        fail(s, "FIFO: a running thread passed a waiter (I6)");
  s->grants[a]++;
  s->pc[a] = P_CS;
}

static void poke(st_t *s);

/* A notify of one: the oldest live waiter whose node waits. */
static void
notify_oldest(st_t *s)
{
  for (int w = W1; w <= W2; w++)
    if (s->node[w] == WAITING && s->alive[w]) {
      s->node[w] = NOTIFIED;
      return;
    }
}

/* L8: a woken waiter whose node was notified takes a hand-off to it up
 * before it frees the node; 1 when it did (granted). */
static int
take_up(st_t *s, int a)
{
  uint8_t me = (uint8_t)(a + 1);
  if (s->node[a] != NOTIFIED || s->word != (HB | WB | me) || TL_INJECT_BUG == 5)
    return 0;
  s->word = WB | me;
  node_free(s, a);
  grant(s, a);
  return 1;
}

/* Starts a release of the word held as `held`, returning to `after`. */
static void
release(st_t *s, int a, uint8_t held, uint8_t after)
{
  s->held[a] = held;
  s->after[a] = after;
  s->pc[a] = (held & WB) ? P_REL_SCAN : P_REL_FREE;
}

/* One step of actor `a`; returns 0 when it cannot move. */
static int
step(st_t *s, int a)
{
  uint8_t me = (uint8_t)(a + 1);
  switch (s->pc[a]) {
  case P_DONE:
  case P_DEAD:
    return 0;
  case P_CS:
    s->pc[a] = P_UNLOCK;
    return 1;
  case P_UNLOCK: {
    uint8_t v = s->word;
    if ((v & (7u | HB)) != me) {
      fail(s, "unlock by a thread that does not hold");
      s->pc[a] = P_DONE;
      return 1;
    }
    if (!(v & WB)) {
      s->word = 0; /* the compare-exchange from v (nobody changes a held
                      word without WAITERS but to add it: merged) */
      s->pc[a] = P_DONE;
    } else {
      release(s, a, v, P_DONE);
    }
    return 1;
  }
  case P_SLEEP:
    if (s->node[a] == NOTIFIED) {
      /* Woken: a hand-off is taken up before the node is freed (so a
       * grantee on its way has a node: nobody takes it from it, L7). */
      if (take_up(s, a))
        return 1;
      node_free(s, a);
      s->pc[a] = P_TRY;
      return 1;
    }
    if (s->node[a] == FREE) { /* poked */
      s->pc[a] = P_TRY;
      return 1;
    }
    return 0; /* WAITING: only its timeout (below) moves it */
  case P_TRY: {
    uint8_t v = s->word;
    uint8_t o = OWN(v);
    int slept = a != B;
    s->seen[a] = v;
    s->pokes[a] = s->pokes_all;
    if (o == 0) {
      if (s->fifo && !slept && (v & WB) && !s->handed_on[a]) {
        /* I6: taken and released at once (once: a second free word with
         * WAITERS is taken, or two such threads could pass it between
         * them for ever: bug 7) */
        s->target[a] = me | WB;
        s->handon[a] = 1;
        s->handed_on[a] = TL_INJECT_BUG != 7;
      } else {
        s->target[a] = me | (v & WB) | (slept ? WB : 0);
        s->handon[a] = 0;
      }
      s->pc[a] = P_TRYCAS;
    } else if (o == me && (v & HB)) {
      s->target[a] = v & ~HB;
      s->handon[a] = 0;
      s->pc[a] = P_TRYCAS;
    } else if (o != me && !s->alive[o - 1]) {
      s->target[a] = me | (v & WB) | ((v & HB) ? 0 : DB);
      s->handon[a] = 0;
      s->pc[a] = P_TRYCAS;
    } else if (o != me && (v & HB) && s->node[o - 1] == FREE &&
               TL_INJECT_BUG != 4) {
      /* L7: a hand-off whose grantee has no node on the word (it left, and
       * the release that wrote it died before it took it back) is free
       * for anyone; a grantee on its way loses it (and waits again). */
      s->target[a] = me | (v & WB);
      /* In the FIFO mode a running thread takes it only to release it,
       * as a free word with WAITERS (I6). */
      s->handon[a] = (uint8_t)(s->fifo && !slept && !s->handed_on[a]);
      if (s->handon[a])
        s->handed_on[a] = TL_INJECT_BUG != 7;
      s->pc[a] = P_TRYCAS;
    } else if (a == B) {
      s->pc[a] = P_DONE; /* tryLock: held */
    } else {
      s->pc[a] = P_SETW;
    }
    return 1;
  }
  case P_TRYCAS:
    if (s->word != s->seen[a]) {
      s->pc[a] = P_TRY;
      return 1;
    }
    s->word = s->target[a];
    if (s->handon[a]) {
      release(s, a, s->target[a], P_TRY);
      return 1;
    }
    grant(s, a);
    return 1;
  case P_SETW: {
    uint8_t v = s->seen[a];
    if (s->word != v) {
      s->pc[a] = P_TRY;
      return 1;
    }
    s->word = v | WB;
    s->seen[a] = v | WB;
    /* The holder's liveness after the watch (I4). */
    s->pc[a] = s->alive[OWN(v) - 1] ? P_PUB : P_TRY;
    return 1;
  }
  case P_PUB:
    s->node[a] = WAITING;
    if (a == W1)
      s->present_w1 = 1; /* it came to try: present from now on */
    s->pc[a] = P_CHECK;
    return 1;
  case P_CHECK:
    if (s->word != s->seen[a] || s->pokes[a] != s->pokes_all) {
      /* withdraw (or take the notify that came first: L8, a hand-off is
       * taken up before the node is freed) and try again */
      if (take_up(s, a))
        return 1;
      node_free(s, a);
      s->pc[a] = P_TRY;
    } else {
      s->pc[a] = P_SLEEP;
    }
    return 1;
  case P_LEAVE: {
    uint8_t v = s->word;
    s->seen[a] = v;
    if ((v & (7u | HB)) == (me | HB)) {
      s->target[a] = v & ~HB; /* taken up, then released */
      s->pc[a] = P_LEAVECAS;
    } else if (OWN(v) == 0 && (v & WB) && s->fifo) {
      s->target[a] = me | WB; /* I6: taken, then released */
      s->pc[a] = P_LEAVECAS;
    } else {
      if (OWN(v) == 0 && (v & WB))
        notify_oldest(s);
      s->pc[a] = P_DONE;
    }
    return 1;
  }
  case P_LEAVECAS:
    if (s->word != s->seen[a]) {
      s->pc[a] = P_LEAVE;
      return 1;
    }
    s->word = s->target[a];
    release(s, a, s->word, P_DONE);
    return 1;
  case P_REL_SCAN: {
    uint8_t n = 0;
    for (int w = W1; w <= W2; w++)
      if (s->node[w] == WAITING) {
        s->cand[a][n] = (uint8_t)w;
        s->cseq[a][n] = s->seq[w];
        n++;
      }
    s->ncand[a] = n;
    s->k[a] = 0;
    s->call[a] = 0;
    s->pc[a] = P_REL_NEXT;
    return 1;
  }
  case P_REL_NEXT: {
    if (s->k[a] == s->ncand[a]) {
      s->pc[a] = P_REL_FREE;
      return 1;
    }
    int c = s->cand[a][s->k[a]];
    if (!s->alive[c]) {
      if (s->node[c] == WAITING && s->seq[c] == s->cseq[a][s->k[a]])
        node_free(s, c);
      s->k[a]++;
      return 1;
    }
    if (c == W1 && s->loop_w1 && !s->present_w1 && !s->fifo) {
      /* asleep since it queued: passed over, and called to come */
      if (s->call[a] == 0) {
        s->call[a] = (uint8_t)(c + 1);
        s->callseq[a] = s->cseq[a][s->k[a]];
      }
      s->k[a]++;
      return 1;
    }
    /* H1: the word first, then the node (bug 2: the other way round). */
    s->pc[a] = TL_INJECT_BUG == 2 ? P_REL_TELL : P_REL_HAND;
    return 1;
  }
  case P_REL_HAND: {
    int c = s->cand[a][s->k[a]];
    if (s->word != s->held[a]) {
      fail(s, "a held word changed under its holder");
      s->pc[a] = P_DONE;
      return 1;
    }
    s->word = (uint8_t)(HB | WB | (c + 1));
    if (TL_INJECT_BUG == 2) {
      s->handed_to = (uint8_t)(c + 1);
      s->pc[a] = s->after[a];
    } else {
      s->pc[a] = P_REL_TELL;
    }
    return 1;
  }
  case P_REL_TELL: {
    int c = s->cand[a][s->k[a]];
    if (s->node[c] == WAITING && s->seq[c] == s->cseq[a][s->k[a]]) {
      s->node[c] = NOTIFIED;
      if (TL_INJECT_BUG == 2) {
        s->pc[a] = P_REL_HAND;
      } else {
        s->handed_to = (uint8_t)(c + 1);
        s->pc[a] = s->after[a];
        /* The releaser watches the grantee: dead already, the watcher
         * pokes at once (a later death pokes through die()). */
        if (!s->alive[c])
          poke(s);
        /* The promise waiter passed over is called to come (one step with
         * the hand-off's end: its notify changes nothing of the word). */
        int w = s->call[a] - 1;
        if (w >= 0 && s->node[w] == WAITING && s->seq[w] == s->callseq[a])
          s->node[w] = NOTIFIED;
      }
    } else if (TL_INJECT_BUG == 2) {
      s->k[a]++;
      s->pc[a] = P_REL_NEXT;
    } else {
      /* H2: the node left first; bug 1: the hand-off stays. */
      s->pc[a] = TL_INJECT_BUG == 1 ? s->after[a] : P_REL_BACK;
    }
    return 1;
  }
  case P_REL_BACK: {
    int c = s->cand[a][s->k[a]];
    uint8_t handed = (uint8_t)(HB | WB | (c + 1));
    if (s->word != handed) {
      s->pc[a] = s->after[a];
    } else {
      s->word = s->held[a];
      s->k[a]++;
      s->pc[a] = P_REL_NEXT;
    }
    return 1;
  }
  case P_REL_FREE:
    if (s->word != s->held[a]) {
      fail(s, "a held word changed under its holder");
      s->pc[a] = P_DONE;
      return 1;
    }
    /* H3: WAITERS kept while the scan found nodes (bug 6: cleared, so a
     * waiter woken that does not come leaves the others to sleep while
     * running threads take and release the lock). */
    s->word = (s->ncand[a] > 0 && TL_INJECT_BUG != 6) ? WB : 0;
    s->pc[a] = (s->held[a] & WB) ? P_REL_NOTIFY : s->after[a];
    return 1;
  case P_REL_NOTIFY:
    /* H3: a scan after the free (bug 3: the scan made before it, which
     * misses a node published since while the word was still held). */
    for (uint8_t i = 0; TL_INJECT_BUG == 3 && i < s->ncand[a]; i++) {
      int c = s->cand[a][i];
      if (s->node[c] == WAITING && s->seq[c] == s->cseq[a][i] && s->alive[c]) {
        s->node[c] = NOTIFIED;
        break;
      }
    }
    if (TL_INJECT_BUG != 3) {
      notify_oldest(s);
      /* H3: others still wait: WAITERS back on the word (next step). */
      int others = 0;
      for (int w = W1; w <= W2; w++)
        others |= s->node[w] == WAITING && s->alive[w];
      if (others && TL_INJECT_BUG != 6) {
        s->pc[a] = P_REL_MARK;
        return 1;
      }
    }
    s->pc[a] = s->after[a];
    return 1;
  case P_REL_MARK:
    s->word |= WB;
    s->pc[a] = s->after[a];
    return 1;
  }
  return 0;
}

/* A poke (a death seen by a watcher): every live lock waiter's WAITING
 * node is freed, and the poke counter grows. */
static void
poke(st_t *s)
{
  s->pokes_all++;
  for (int w = W1; w <= W2; w++)
    if (s->alive[w] && s->node[w] == WAITING)
      node_free(s, w);
}

/* A timeout of waiter `a` (once): withdraws its node; a notify that came
 * first makes it a wake. */
static int
timeout(st_t *s, int a)
{
  if (!is_waiter(a) || s->pc[a] != P_SLEEP || s->timeout_left[a] == 0 ||
      s->node[a] != WAITING)
    return 0;
  s->timeout_left[a]--;
  node_free(s, a);
  s->left_[a] = 1;
  if (s->handed_to == a + 1)
    s->handed_to = 0;
  s->pc[a] = P_LEAVE;
  return 1;
}

/* kill -9 of `a`: its liveness ends; the watchers poke every lock waiter
 * (a WAITING node is freed, its waiter looks again). */
static int
die(st_t *s, int a)
{
  if (s->deaths_left == 0 || !s->alive[a] || s->pc[a] == P_DONE)
    return 0;
  s->deaths_left--;
  s->died_any = 1;
  s->alive[a] = 0;
  s->pc[a] = P_DEAD;
  if (s->handed_to == a + 1)
    s->handed_to = 0;
  poke(s);
  return 1;
}

static void
check(const st_t *s)
{
  int in = 0;
  for (int a = 0; a < NA; a++) {
    if (s->pc[a] != P_CS && s->pc[a] != P_UNLOCK)
      continue;
    in++;
    if ((s->word & (7u | HB)) != (uint8_t)(a + 1))
      fail(s, "a holder that the word does not name (I1)");
  }
  if (in > 1)
    fail(s, "two holders (I1)");
  if ((s->word & HB) && OWN(s->word) == 0)
    fail(s, "HANDED without an owner");
  /* I2: a live waiter asleep on a waiting node has WAITERS on the word, so
   * that the next release (whoever holds by then) looks at the nodes;
   * except while a release is between its free and its notify. */
  int notifying = 0;
  for (int a = 0; a < NA; a++)
    notifying |= s->pc[a] == P_REL_NOTIFY || s->pc[a] == P_REL_MARK;
  for (int w = W1; w <= W2; w++)
    if (!notifying && s->alive[w] && s->pc[w] == P_SLEEP &&
        s->node[w] == WAITING && !(s->word & WB))
      fail(s, "a waiter asleep while the word has no WAITERS (I2)");
}

static void
explore(const st_t *s, int depth)
{
  if (failures > 0)
    return;
  if (!model_visit(s, sizeof(*s)))
    return;
  check(s);
  if (depth > 200) {
    fail(s, "an execution longer than 200 steps (a livelock)");
    return;
  }
  int moved = 0;
  for (int a = 0; a < NA; a++) {
    st_t n = *s;
    trail[trail_len][0] = a;
    trail[trail_len][1] = s->pc[a];
    trail_len++;
    if (step(&n, a)) {
      moved = 1;
      explore(&n, depth + 1);
    }
    trail_len--;
  }
  /* With no other step possible, nobody may sleep (a lost wake-up). */
  if (!moved) {
    for (int a = W1; a <= W2; a++)
      if (s->alive[a] && s->pc[a] == P_SLEEP)
        fail(s, "a waiter asleep for ever (only its timeout could move it)");
    uint8_t o = OWN(s->word);
    if (o != 0 && s->alive[o - 1] &&
        !((s->word & HB) && s->node[o - 1] == FREE))
      fail(s, "the word names a live thread at the end (not a hand-off "
              "free for the next comer)");
  }
  for (int a = 0; a < NA; a++) {
    st_t n = *s;
    trail[trail_len][0] = 100 + a;
    trail_len++;
    if (timeout(&n, a))
      explore(&n, depth + 1);
    trail[trail_len - 1][0] = 200 + a;
    n = *s;
    if (die(&n, a))
      explore(&n, depth + 1);
    trail_len--;
  }
}

static int
run(const char *name, int fifo, int timeouts, int deaths, int barger,
    int loop_w1)
{
  st_t s;
  memset(&s, 0, sizeof(s));
  model_begin(name);
  s.fifo = (uint8_t)fifo;
  s.loop_w1 = (uint8_t)loop_w1;
  s.word = (uint8_t)((H + 1) | WB);
  for (int a = 0; a < NA; a++)
    s.alive[a] = 1;
  s.pc[H] = P_CS;
  s.grants[H] = 1;
  for (int w = W1; w <= W2; w++) {
    s.pc[w] = P_SLEEP;
    s.node[w] = WAITING;
    s.timeout_left[w] = (uint8_t)timeouts;
  }
  s.pc[B] = barger ? P_TRY : P_DONE;
  s.deaths_left = (uint8_t)deaths;
  explore(&s, 0);
  model_report(name, 34, failures, explored, pruned);
  return failures;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TL_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TL_SANITIZED 1
#endif
#endif
#ifndef TL_SANITIZED
#define TL_SANITIZED 0
#endif

int
main(void)
{
  static const struct {
    const char *name;
    int fifo, timeouts, deaths, barger, loop_w1;
  } scenarios[] = {
    { "handoff-basic", 0, 0, 0, 1, 0 }, { "handoff-timeouts", 0, 1, 0, 1, 0 },
    { "handoff-death", 0, 0, 1, 1, 0 }, { "handoff-all", 0, 1, 1, 1, 0 },
    { "loop-basic", 0, 0, 0, 1, 1 },    { "loop-timeouts", 0, 1, 0, 1, 1 },
    { "loop-death", 0, 0, 1, 1, 1 },    { "loop-all", 0, 1, 1, 1, 1 },
    { "fifo-basic", 1, 0, 0, 1, 0 },    { "fifo-timeouts", 1, 1, 0, 1, 0 },
    { "fifo-death", 1, 0, 1, 1, 0 },    { "fifo-all", 1, 1, 1, 1, 0 },
  };
  int failed = 0, ran = 0;

  if (model_init(25) != 0)
    return 2;
  for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
    if (!model_wanted(scenarios[i].name))
      continue;
    if (TL_SANITIZED && scenarios[i].timeouts && scenarios[i].deaths)
      continue;
    ran++;
    int f = run(scenarios[i].name, scenarios[i].fifo, scenarios[i].timeouts,
                scenarios[i].deaths, scenarios[i].barger, scenarios[i].loop_w1);
    failed += f != 0;
  }
  model_free();
  return model_exit(failed, ran);
}
