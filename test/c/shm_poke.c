/* A systematic checker for the pokes and doorbells of promise waiters on
 * memory shared by processes: tl_shm_poke (P1), tl__tell and tl__publish
 * in src/host/shm_wait.c; the helper thread's doorbell check and the
 * env's poll in src/host/binding_host.c and binding_shm.c; the wait loop
 * of lib/CountDownLatch.js (as Barrier's and ConditionVariable's).
 *
 * As test/c/shm_sem.c: no lock anywhere, the nodes, the doorbells and the
 * counters change by single atomic steps, so the model is a state machine
 * per actor whose every interleaving is explored, depth first, with the
 * states already seen skipped. The actors:
 *
 *   W0, W1  two promise waiters, each of its own process (its own
 *           doorbell, helper thread and event loop), waiting for a latch
 *           to open. Each loops: it reads the poke counter and the count
 *           (0: done), is counted in its env and takes a free node, any
 *           (another process may have taken the first free one meanwhile),
 *           publishes it WAITING, reads the count and the poke counter
 *           again (changed: leaves) and sleeps in its loop. Its helper
 *           sees its doorbell move and queues one poll unless one is
 *           queued; the poll clears the queued mark, then looks at the
 *           node: WAITING with its seq: sleeps on; NOTIFIED: frees it;
 *           freed by a poke: nothing; after either it looks again. In
 *           scenario poke-arrival the helper also has the loop look once
 *           a slice has passed, rung or not (P3: every second); here at
 *           every state where nothing else can move, after which every
 *           waiter must be done.
 *   P       a process that pokes the file (its arrival; a death its
 *           watcher saw): the counter grows, then one step per node (a
 *           WAITING node freed, a NOTIFIED one left) and one to ring that
 *           node's owner (P1), then one to ring its own process (P2).
 *   C       the last count-down: the count to 0, then a notify of every
 *           node: one step to move it from WAITING to NOTIFIED, one to
 *           ring its owner's doorbell.
 *   K0, K1  the watchers of W0's and W1's processes: when P or C is
 *           killed (scenario poke-death, with W0 alone: once, P at any of
 *           its steps, C at any after its change), each pokes the file as
 *           P does; its rings include its own process's. In scenario
 *           poke-arrival P is a process that arrived after the waiters
 *           slept: nobody watches it, and it is killed at any of its
 *           steps with no poke for its death (P3).
 *
 * Checked wherever no step can be taken: both waiters are done (no lost
 * wake-up: the latch is open, so each must hear of it).
 *
 * TL_INJECT_BUG=n builds a known bug into the model; test/c/run.sh checks
 * that the checker catches each (TL_EXPECT_BUG=1):
 *   1  a poke rings a process once per scan, after its first node (the
 *      lost ring of the CountDownLatch test: a waiter back on a later node
 *      is freed there unheard)
 *   2  a poke does not ring its own process (a poker killed between its
 *      free and its ring leaves the waiter with a freed node, unheard)
 *   3  the poll clears the queued mark after it looked at the node, not
 *      before (a ring in between queues nothing)
 *   4  a notify rings before it moves the node to NOTIFIED
 *   5  no slice (no P3: a waiter that an arriving poker freed and that
 *      died before ringing sleeps on)
 * (A poke also rings the owner of a NOTIFIED node, for a notifier killed
 * between its state change and its ring: here the waiter's own watcher
 * covers that death already, with its own ring, so leaving it out is not
 * caught; it is kept for a waiter whose process does not watch yet.)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#ifndef TL_INJECT_BUG
#define TL_INJECT_BUG 0
#endif

enum { NW = 2, NN = 2, NK = 3 }; /* waiters, nodes, pokers (P, K0, K1) */
enum { FREE = 0, WAITING = 1, NOTIFIED = 2 };
enum { NONE = 255 };

enum {
  /* a waiter */
  W_LOOK,  /* read the poke counter and the count */
  W_PUB,   /* counted, take a free node, publish it */
  W_CHECK, /* read the count and the poke counter again */
  W_SLEEP, /* asleep in its loop */
  W_NODE,  /* the poll looks at its node */
  W_CLEAR, /* (bug 3) the poll clears the queued mark */
  W_DONE,
  /* a poker */
  K_IDLE,
  K_START, /* the counter grows */
  K_SCAN,  /* node `idx`: freed (WAITING) or left (NOTIFIED) */
  K_RING,  /* the ring of that node's owner */
  K_OWN,   /* the ring of its own process (P2) */
  K_DONE,
  K_DEAD,
  /* the count-down */
  C_SET,  /* the count to 0 */
  C_TELL, /* node `idx`: WAITING -> NOTIFIED */
  C_RING, /* ring the owner of node `idx` */
  C_DONE,
  C_DEAD
};

typedef struct {
  uint8_t count, pokes;
  uint8_t nst[NN], nseq[NN], nown[NN];
  /* each waiter's process */
  /* rang: its doorbell moved since its helper last looked (how far does
   * not matter: the helper acts on any move) */
  uint8_t rang[NW], queued[NW], counted[NW];
  uint8_t wpc[NW], pk[NW], rnode[NW], rseq[NW], clear_after[NW];
  /* each poker */
  uint8_t kpc[NK], kidx[NK], kmark[NK], kring[NK];
  uint8_t cpc, cidx;
  uint8_t deaths_left;
} st_t;

/* The steps of the execution being explored: what moved, as text. */
static char trail[512][48];
static int trail_len;

static void
fail(const st_t *s, const char *what)
{
  if (failures == 0) {
    fprintf(stderr, "%s: the execution:\n", scenario_name);
    for (int i = 0; i < trail_len; i++)
      fprintf(stderr, "  %s\n", trail[i]);
    fprintf(stderr, "%s: %s (count %d; waiters at %d/%d; nodes", scenario_name,
            what, s->count, s->wpc[0], s->wpc[1]);
    for (int k = 0; k < NN; k++)
      fprintf(stderr, " %d:%d/%d", s->nown[k], s->nst[k], s->nseq[k]);
    fprintf(stderr, ")\n");
  }
  failures++;
}

static void
free_node(st_t *s, int k)
{
  s->nst[k] = FREE;
  s->nseq[k]++; /* the file's seq has 30 bits: no wrap here */
}

static void
ring(st_t *s, int w)
{
  s->rang[w] = 1;
}

/* A waiter's withdrawal or take of its node (tl__left): frees it if it is
 * still its WAITING or NOTIFIED node; a node a poke freed is left. */
static void
leave(st_t *s, int w)
{
  int k = s->rnode[w];
  if (s->nseq[k] == s->rseq[w] && s->nst[k] != FREE)
    free_node(s, k);
  s->counted[w] = 0;
  s->rnode[w] = NONE;
}

/* One step of waiter `w` other than W_PUB (whose node is a choice). */
static int
step_waiter(st_t *s, int w)
{
  switch (s->wpc[w]) {
  case W_LOOK:
    s->pk[w] = s->pokes;
    s->wpc[w] = s->count == 0 ? W_DONE : W_PUB;
    return 1;
  case W_CHECK:
    if (s->count != 1 || s->pokes != s->pk[w]) {
      leave(s, w);
      s->wpc[w] = W_LOOK;
    } else {
      s->wpc[w] = W_SLEEP;
    }
    return 1;
  case W_NODE: {
    int k = s->rnode[w];
    if (s->nst[k] == WAITING && s->nseq[k] == s->rseq[w]) {
      s->wpc[w] = W_SLEEP;
    } else {
      leave(s, w);
      s->wpc[w] = W_LOOK;
    }
    if (s->clear_after[w]) {
      /* Bug 3: the mark is cleared in a step of its own, after the look. */
      s->clear_after[w] = (uint8_t)(1 + s->wpc[w]);
      s->wpc[w] = W_CLEAR;
    }
    return 1;
  }
  case W_CLEAR:
    s->queued[w] = 0;
    s->wpc[w] = (uint8_t)(s->clear_after[w] - 1);
    s->clear_after[w] = 0;
    return 1;
  default:
    return 0;
  }
}

/* The env's poll of waiter `w`'s process, run by its loop between turns. */
static int
step_poll(st_t *s, int w)
{
  if (!s->queued[w] || (s->wpc[w] != W_SLEEP && s->wpc[w] != W_DONE))
    return 0;
  if (s->wpc[w] == W_DONE) {
    s->queued[w] = 0;
    return 1;
  }
  if (TL_INJECT_BUG == 3)
    s->clear_after[w] = 1;
  else
    s->queued[w] = 0;
  s->wpc[w] = W_NODE;
  return 1;
}

/* Scenario poke-arrival: P arrived after the waiters slept, so its death
 * pokes nothing (nobody watches it), and C does not die; the helpers' slice
 * (P3) is modelled in this scenario only, so that the others check that
 * the rings alone (P1, P2) reach every waiter, with no wait for it. */
static int arrival;

/* The helper thread of waiter `w`'s process: its doorbell moved. */
static int
step_helper(st_t *s, int w)
{
  if (!s->rang[w])
    return 0;
  s->rang[w] = 0;
  if (s->counted[w] && !s->queued[w])
    s->queued[w] = 1;
  return 1;
}

/* One step of poker `k` (0: P; 1 + w: the watcher of waiter w's process). */
static int
step_poker(st_t *s, int k)
{
  int own = k == 0 ? NONE : k - 1;

  switch (s->kpc[k]) {
  case K_START:
    s->pokes = (uint8_t)((s->pokes + 1) & 3);
    s->kidx[k] = 0;
    s->kmark[k] = 0;
    s->kpc[k] = K_SCAN;
    return 1;
  case K_SCAN: {
    int n = s->kidx[k];
    int handled = 0;
    if (s->nst[n] == WAITING) {
      free_node(s, n);
      handled = 1;
    } else if (s->nst[n] == NOTIFIED) {
      handled = 1;
    }
    if (handled) {
      /* Its owner's ring, the next step (P1); bug 1: once per scan. */
      int o = s->nown[n];
      int first = !(s->kmark[k] & (1u << o));
      s->kmark[k] |= (uint8_t)(1u << o);
      if (TL_INJECT_BUG != 1 || first) {
        s->kring[k] = (uint8_t)o;
        s->kpc[k] = K_RING;
        return 1;
      }
    }
    if (++s->kidx[k] == NN)
      s->kpc[k] = K_OWN;
    return 1;
  }
  case K_RING:
    ring(s, s->kring[k]);
    s->kpc[k] = ++s->kidx[k] == NN ? K_OWN : K_SCAN;
    return 1;
  case K_OWN:
    /* P2: its own process's doorbell (bug 2: not). */
    if (own != NONE && TL_INJECT_BUG != 2)
      ring(s, own);
    s->kpc[k] = K_DONE;
    return 1;
  default:
    return 0;
  }
}

static int
step_countdown(st_t *s)
{
  switch (s->cpc) {
  case C_SET:
    s->count = 0;
    s->cidx = 0;
    s->cpc = C_TELL;
    return 1;
  case C_TELL: {
    int n = s->cidx;
    if (TL_INJECT_BUG == 4) {
      /* Rings first (if it sees a waiter), moves the node after. */
      if (s->nst[n] == WAITING) {
        ring(s, s->nown[n]);
        s->cpc = C_RING;
      } else if (++s->cidx == NN) {
        s->cpc = C_DONE;
      }
      return 1;
    }
    if (s->nst[n] == WAITING) {
      s->nst[n] = NOTIFIED;
      s->cpc = C_RING;
    } else if (++s->cidx == NN) {
      s->cpc = C_DONE;
    }
    return 1;
  }
  case C_RING:
    if (TL_INJECT_BUG == 4) {
      if (s->nst[s->cidx] == WAITING)
        s->nst[s->cidx] = NOTIFIED;
    } else {
      ring(s, s->nown[s->cidx]);
    }
    s->cpc = ++s->cidx == NN ? C_DONE : C_TELL;
    return 1;
  default:
    return 0;
  }
}

static void explore(const st_t *s, int depth);

/* Waiter `w`'s step W_PUB on the free node `k`: counted, node published. */
static void
publish(st_t *s, int w, int k)
{
  s->counted[w] = 1;
  s->nst[k] = WAITING;
  s->nown[k] = (uint8_t)w;
  s->rnode[w] = (uint8_t)k;
  s->rseq[w] = s->nseq[k];
  s->wpc[w] = W_CHECK;
}

/* P3 at a state where nothing else can move: the helpers' slice has every
 * loop with a waiter look (as a ring), and the waiters' own steps run to
 * their end (nobody else moves any more; a publication takes the first
 * free node). Whether every waiter is done then. */
static int
slice_settles(const st_t *from)
{
  st_t s = *from;
  for (int w = 0; w < NW; w++)
    if (s.wpc[w] != W_DONE)
      ring(&s, w);
  for (int steps = 0; steps < 256; steps++) {
    int moved = 0;
    for (int w = 0; w < NW; w++) {
      if (s.wpc[w] == W_PUB) {
        for (int k = 0; k < NN; k++) {
          if (s.nst[k] != FREE)
            continue;
          publish(&s, w, k);
          moved = 1;
          break;
        }
      }
      moved |= step_waiter(&s, w) | step_poll(&s, w) | step_helper(&s, w);
    }
    if (!moved)
      break;
  }
  for (int w = 0; w < NW; w++)
    if (s.wpc[w] != W_DONE)
      return 0;
  return 1;
}

static void
go(const st_t *s, int depth, const char *what, int who, int at)
{
  if (depth >= (int)(sizeof(trail) / sizeof(trail[0]))) {
    fail(s, "the execution is too long (a livelock?)");
    return;
  }
  snprintf(trail[depth], sizeof(trail[depth]), "%s%d at %d", what, who, at);
  trail_len = depth + 1;
  if (failures == 0)
    explore(s, depth + 1);
}

/* A death (P or C): the watchers of both waiters' processes poke. */
static void
died(st_t *s)
{
  s->deaths_left--;
  for (int w = 0; w < NW; w++)
    s->kpc[1 + w] = K_START;
}

static void
explore(const st_t *s, int depth)
{
  if (!model_visit(s, sizeof(*s)))
    return;
  int moved = 0;
  st_t n;

  for (int w = 0; w < NW && failures == 0; w++) {
    if (s->wpc[w] == W_PUB) {
      /* Any free node. */
      for (int k = 0; k < NN && failures == 0; k++) {
        if (s->nst[k] != FREE)
          continue;
        n = *s;
        publish(&n, w, k);
        moved = 1;
        go(&n, depth, "W", w, W_PUB);
      }
    }
    n = *s;
    if (step_waiter(&n, w)) {
      moved = 1;
      go(&n, depth, "W", w, s->wpc[w]);
    }
    n = *s;
    if (failures == 0 && step_poll(&n, w)) {
      moved = 1;
      go(&n, depth, "poll of W", w, s->wpc[w]);
    }
    n = *s;
    if (failures == 0 && step_helper(&n, w)) {
      moved = 1;
      go(&n, depth, "helper of W", w, 0);
    }
  }
  for (int k = 0; k < NK && failures == 0; k++) {
    n = *s;
    if (step_poker(&n, k)) {
      moved = 1;
      go(&n, depth, "poker ", k, s->kpc[k]);
    }
  }
  n = *s;
  if (failures == 0 && step_countdown(&n)) {
    moved = 1;
    go(&n, depth, "count-down ", 0, s->cpc);
  }
  /* P killed at any of its steps; C after its change of the count. */
  if (failures == 0 && s->deaths_left > 0 && s->kpc[0] != K_DEAD) {
    n = *s;
    n.kpc[0] = K_DEAD;
    if (arrival)
      n.deaths_left--;
    else
      died(&n);
    moved = 1;
    go(&n, depth, "P dies ", 0, s->kpc[0]);
  }
  if (failures == 0 && !arrival && s->deaths_left > 0 &&
      (s->cpc == C_TELL || s->cpc == C_RING)) {
    n = *s;
    n.cpc = C_DEAD;
    died(&n);
    moved = 1;
    go(&n, depth, "C dies ", 0, s->cpc);
  }
  if (!moved && failures == 0 && (s->wpc[0] != W_DONE || s->wpc[1] != W_DONE) &&
      !(arrival && TL_INJECT_BUG != 5 && slice_settles(s)))
    fail(s, "a waiter sleeps with the latch open and nothing left to wake "
            "it (lost wake-up)");
}

static int
run(const char *name, int waiters, int deaths, int arrives)
{
  st_t s;
  memset(&s, 0, sizeof(s));
  model_begin(name);
  arrival = arrives;
  s.count = 1;
  for (int w = 0; w < NW; w++) {
    s.wpc[w] = w < waiters ? W_LOOK : W_DONE;
    s.rnode[w] = NONE;
  }
  s.kpc[0] = K_START;
  for (int k = 1; k < NK; k++)
    s.kpc[k] = K_IDLE;
  s.cpc = C_SET;
  s.deaths_left = (uint8_t)deaths;
  explore(&s, 0);
  model_report(name, 22, failures, explored, pruned);
  return failures;
}

int
main(void)
{
  /* With a death, one waiter: two watchers' pokes besides P's and the
   * notify make two waiters too many states for the visited set. */
  static const struct {
    const char *name;
    int waiters, deaths, arrival;
  } scenarios[] = {
    { "poke-basic", 2, 0, 0 },
    { "poke-death", 1, 1, 0 },
    { "poke-arrival", 2, 1, 1 },
  };
  int failed = 0, ran = 0;

  if (model_init(22) != 0)
    return 2;
  for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
    if (!model_wanted(scenarios[i].name))
      continue;
    ran++;
    failed += run(scenarios[i].name, scenarios[i].waiters, scenarios[i].deaths,
                  scenarios[i].arrival) != 0;
  }
  model_free();
  return model_exit(failed, ran);
}
