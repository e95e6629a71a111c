/* Many wait / notify hand-offs between threads, to find lost wakeups.
 *
 * Pairs of threads ping-pong on a cell of their own: a thread waits while
 * the cell holds the other side's turn, then moves and notifies. The pairs
 * differ in width, timeouts and kind (sync or async waiter), so that every
 * path through the core races with notify. A ring of threads then passes a
 * token on one cell, with notify waking all. A lost wakeup leaves both sides
 * of a hand-off waiting forever; the watchdog turns that into an abort with
 * a message.
 *
 * Usage: stress [hand-offs per phase] [threads]; or TL_STRESS_N and
 * TL_STRESS_THREADS. Both phases run with and without spinning.
 */
#include <math.h>
#include <stddef.h>

#include "test.h"

#define MAX_THREADS 16

/* How a player waits for its turn. */
enum { WAIT_SYNC, WAIT_TIMED, WAIT_ASYNC };

static _Atomic uint64_t progress;

typedef struct player_s player_t;

struct player_s {
  uv_thread_t thread;
  _Atomic int64_t *cell;
  int width;
  int side;     /* 0 or 1: moves when (cell / step) % 2 == side */
  int64_t step; /* 1 << 32 for 8-byte cells: the low half never changes */
  int mode;
  uint64_t moves;
  uint64_t seed;
  tl_waiter_t async; /* WAIT_ASYNC: reused for every wait */
  uv_sem_t settled;  /* WAIT_ASYNC: posted by the settle callback */
  uint64_t waits;    /* how often it had to wait; read after join */
};

static int64_t
cell_load(_Atomic int64_t *cell, int width)
{
  if (width == 8)
    return atomic_load(cell);
  return atomic_load((_Atomic int32_t *)cell);
}

static void
cell_store(_Atomic int64_t *cell, int width, int64_t v)
{
  if (width == 8)
    atomic_store(cell, v);
  else
    atomic_store((_Atomic int32_t *)cell, (int32_t)v);
}

/* Runs on the notifying thread under the bucket lock. The node goes back to
 * its player, which sleeps on the semaphore until now. */
static void
player_settle(tl_waiter_t *w)
{
  player_t *p = (player_t *)((char *)w - offsetof(player_t, async));
  uv_sem_post(&p->settled);
}

static void
player_wait(player_t *p, int64_t seen, tl_rng_t *rng)
{
  int r;

  p->waits++;
  switch (p->mode) {
  case WAIT_SYNC:
    r = tl_wait(p->cell, p->width, seen, INFINITY, NULL);
    ASSERT(r == TL_RESULT_OK || r == TL_RESULT_NOT_EQUAL);
    break;
  case WAIT_TIMED:
    /* Up to half a millisecond: many end by timeout, racing with the move
     * and its notify; the caller's loop rechecks the cell either way. */
    r = tl_wait(p->cell, p->width, seen, (double)tl_rng_below(rng, 6) * 0.1,
                NULL);
    ASSERT(r == TL_RESULT_OK || r == TL_RESULT_NOT_EQUAL ||
           r == TL_RESULT_TIMED_OUT);
    break;
  default:
    r = tl_wait_async(&p->async, p->cell, p->width, seen, 0);
    if (r == TL_RESULT_PENDING)
      uv_sem_wait(&p->settled);
    else
      ASSERT_EQ(r, TL_RESULT_NOT_EQUAL);
    break;
  }
}

static void
player_main(void *arg)
{
  player_t *p = arg;
  tl_rng_t rng;

  tl_rng_seed(&rng, p->seed);
  for (uint64_t i = 0; i < p->moves; i++) {
    int64_t v;

    for (;;) {
      v = cell_load(p->cell, p->width);
      if ((v / p->step) % 2 == p->side)
        break;
      player_wait(p, v, &rng);
    }
    cell_store(p->cell, p->width, v + p->step);
    /* Only the other side can be waiting on this cell. */
    ASSERT_LE(tl_notify(p->cell, 1), 1);
    atomic_fetch_add_explicit(&progress, 1, memory_order_relaxed);
  }
}

static void
run_pairs(uint64_t handoffs, int threads, uint64_t seed)
{
  static _Alignas(64) _Atomic int64_t cells[MAX_THREADS / 2];
  player_t players[MAX_THREADS];
  int pairs = threads / 2;
  uint64_t moves = handoffs / (uint64_t)threads;
  uint64_t start = uv_hrtime();
  uint64_t waits = 0;

  for (int i = 0; i < pairs; i++)
    atomic_store(&cells[i], 0);
  for (int i = 0; i < threads; i++) {
    player_t *p = &players[i];
    int pair = i / 2;

    memset(p, 0, sizeof(*p));
    p->cell = &cells[pair];
    p->width = pair % 2 == 0 ? 4 : 8;
    p->step = p->width == 8 ? INT64_C(1) << 32 : 1;
    p->side = i % 2;
    p->moves = moves;
    p->seed = seed + (uint64_t)i;
    /* Pair 0: both sync. Pair 1: sync, 8 bytes. Pair 2: timed waits.
     * Pair 3: an async side against a sync side. Then round again. */
    switch (pair % 4) {
    case 2:
      p->mode = WAIT_TIMED;
      break;
    case 3:
      p->mode = p->side == 0 ? WAIT_ASYNC : WAIT_SYNC;
      break;
    default:
      p->mode = WAIT_SYNC;
      break;
    }
    tl_waiter_init_async(&p->async, player_settle);
    ASSERT_OK(uv_sem_init(&p->settled, 0));
  }
  for (int i = 0; i < threads; i++)
    ASSERT_OK(uv_thread_create(&players[i].thread, player_main, &players[i]));
  for (int i = 0; i < threads; i++) {
    ASSERT_OK(uv_thread_join(&players[i].thread));
    uv_sem_destroy(&players[i].settled);
    waits += players[i].waits;
  }
  for (int i = 0; i < pairs; i++) {
    int64_t step = i % 2 == 0 ? 1 : INT64_C(1) << 32;
    ASSERT_EQ(cell_load(&cells[i], i % 2 == 0 ? 4 : 8),
              (int64_t)(2 * moves) * step);
  }
  printf("stress: pairs: %d threads, %" PRIu64 " hand-offs, %" PRIu64
         " waits, %.0f ns per hand-off\n",
         threads, moves * (uint64_t)threads, waits,
         (double)(uv_hrtime() - start) / (double)(moves * (uint64_t)threads));
  tl_test_quiescent();
}

typedef struct {
  uv_thread_t thread;
  _Atomic int32_t *token;
  int index;
  int threads;
  int32_t total;
} ringer_t;

/* The token's value says whose turn it is (value % threads); everyone else
 * waits on the value it saw, and each move wakes all of them. */
static void
ringer_main(void *arg)
{
  ringer_t *r = arg;

  for (;;) {
    int32_t v = atomic_load(r->token);

    if (v >= r->total)
      break;
    if (v % r->threads == r->index) {
      atomic_store(r->token, v + 1);
      ASSERT_LE(tl_notify(r->token, -1), r->threads - 1);
      atomic_fetch_add_explicit(&progress, 1, memory_order_relaxed);
      continue;
    }
    int res = tl_wait(r->token, 4, v, INFINITY, NULL);
    ASSERT(res == TL_RESULT_OK || res == TL_RESULT_NOT_EQUAL);
  }
}

static void
run_ring(uint64_t handoffs, int threads)
{
  static _Atomic int32_t token;
  ringer_t ringers[MAX_THREADS];
  uint64_t start = uv_hrtime();

  atomic_store(&token, 0);
  for (int i = 0; i < threads; i++) {
    ringers[i] = (ringer_t){ .token = &token,
                             .index = i,
                             .threads = threads,
                             .total = (int32_t)handoffs };
    ASSERT_OK(uv_thread_create(&ringers[i].thread, ringer_main, &ringers[i]));
  }
  for (int i = 0; i < threads; i++)
    ASSERT_OK(uv_thread_join(&ringers[i].thread));
  ASSERT_EQ(atomic_load(&token), (int32_t)handoffs);
  printf("stress: ring: %d threads, %" PRIu64
         " hand-offs, %.0f ns per hand-off\n",
         threads, handoffs, (double)(uv_hrtime() - start) / (double)handoffs);
  tl_test_quiescent();
}

int
main(int argc, char **argv)
{
  tl_watchdog_t wd;
  uint64_t seed = tl_test_seed("stress");
  uint64_t n = tl_test_setting(argc, argv, 1, "TL_STRESS_N", 100000);
  int threads = (int)tl_test_setting(argc, argv, 2, "TL_STRESS_THREADS", 8);
  static const unsigned spins[] = { 0, 2000 };

  ASSERT(threads >= 2 && threads <= MAX_THREADS && threads % 2 == 0);
  ASSERT(n >= (uint64_t)threads && n < INT32_MAX);
  tl_watchdog_start(&wd, "stress", 30, &progress);
  for (size_t s = 0; s < sizeof(spins) / sizeof(spins[0]); s++) {
    printf("stress: spin %u\n", spins[s]);
    tl_set_spin(spins[s]);
    run_pairs(n, threads, seed + s);
    run_ring(n / 4, threads / 2 > 2 ? threads / 2 : 2);
  }
  tl_test_quiescent();
  tl_watchdog_stop(&wd);
  printf("stress: ok\n");
  return 0;
}
