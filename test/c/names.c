/* The named-lock table (src/names.c) alone: Web Locks grant order for
 * exclusive and shared requests, ifAvailable, steal, cancel, release of
 * every phase, the query order, records freed once a name is unused, and
 * mutual exclusion with real threads.
 */
#include "names.h"
#include "test.h"

/* A request with the events its callback saw. */
typedef struct {
  tl_named_t r; /* first, so that the callback can cast back */
  _Atomic int granted;
  _Atomic int stolen;
} req_t;

static void
on_event(tl_named_t *r, int event)
{
  req_t *q = (req_t *)r;

  if (event == TL_NAMED_EVENT_GRANTED)
    atomic_fetch_add(&q->granted, 1);
  else if (event == TL_NAMED_EVENT_STOLEN)
    atomic_fetch_add(&q->stolen, 1);
  else
    TL_TEST_FAIL("unknown event %d", event);
}

static const uint16_t NAME_A[] = { 'a' };
static const uint16_t NAME_B[] = { 'b' };
/* Same length as NAME_A and NAME_B, and with a zero unit inside: names are
 * compared by length and content, never as C strings. */
static const uint16_t NAME_Z[] = { 'a', 0, 'b' };
static const uint16_t NAME_Z2[] = { 'a', 0, 'c' };

static int
request(req_t *q, const uint16_t *name, size_t len, int exclusive,
        int if_available, int steal)
{
  atomic_init(&q->granted, 0);
  atomic_init(&q->stolen, 0);
  return tl_named_request(&q->r, name, len, exclusive, if_available, steal, 7,
                          on_event);
}

static void
test_exclusive_fifo(void)
{
  req_t a, b, c;

  ASSERT_EQ(request(&a, NAME_A, 1, 1, 0, 0), TL_NAMED_HELD);
  ASSERT_EQ(request(&b, NAME_A, 1, 1, 0, 0), TL_NAMED_QUEUED);
  ASSERT_EQ(request(&c, NAME_A, 1, 0, 0, 0), TL_NAMED_QUEUED);
  ASSERT_EQ(tl_named_count(), 1);
  /* A grant made at once is reported by the return value, not an event. */
  ASSERT_EQ(atomic_load(&a.granted), 0);

  ASSERT_EQ(tl_named_release(&a.r), TL_NAMED_HELD);
  ASSERT_EQ(atomic_load(&b.granted), 1);
  ASSERT_EQ(atomic_load(&c.granted), 0);
  ASSERT_EQ(tl_named_release(&b.r), TL_NAMED_HELD);
  ASSERT_EQ(atomic_load(&c.granted), 1);
  ASSERT_EQ(tl_named_release(&c.r), TL_NAMED_HELD);
  /* A second release finds the node released and changes nothing. */
  ASSERT_EQ(tl_named_release(&c.r), TL_NAMED_RELEASED);
  ASSERT_EQ(tl_named_count(), 0);
}

/* Shared holders share; a queued exclusive request holds back the shared
 * ones behind it (no barging past the queue). */
static void
test_shared(void)
{
  req_t a, b, c, d;

  ASSERT_EQ(request(&a, NAME_A, 1, 0, 0, 0), TL_NAMED_HELD);
  ASSERT_EQ(request(&b, NAME_A, 1, 0, 0, 0), TL_NAMED_HELD);
  ASSERT_EQ(request(&c, NAME_A, 1, 1, 0, 0), TL_NAMED_QUEUED);
  ASSERT_EQ(request(&d, NAME_A, 1, 0, 0, 0), TL_NAMED_QUEUED);
  ASSERT_EQ(tl_named_release(&a.r), TL_NAMED_HELD);
  ASSERT_EQ(atomic_load(&c.granted), 0);
  ASSERT_EQ(tl_named_release(&b.r), TL_NAMED_HELD);
  ASSERT_EQ(atomic_load(&c.granted), 1);
  ASSERT_EQ(atomic_load(&d.granted), 0);
  ASSERT_EQ(tl_named_release(&c.r), TL_NAMED_HELD);
  ASSERT_EQ(atomic_load(&d.granted), 1);
  ASSERT_EQ(tl_named_release(&d.r), TL_NAMED_HELD);
  ASSERT_EQ(tl_named_count(), 0);
}

static void
test_if_available(void)
{
  req_t a, b, c;

  /* On a free name ifAvailable is granted; otherwise nothing is linked and
   * the record of an unused name does not linger. */
  ASSERT_EQ(request(&c, NAME_B, 1, 1, 1, 0), TL_NAMED_HELD);
  ASSERT_EQ(request(&a, NAME_A, 1, 1, 0, 0), TL_NAMED_HELD);
  ASSERT_EQ(request(&b, NAME_A, 1, 0, 1, 0), TL_NAMED_UNAVAILABLE);
  ASSERT_EQ(tl_named_count(), 2);
  ASSERT_EQ(tl_named_release(&a.r), TL_NAMED_HELD);
  ASSERT_EQ(atomic_load(&b.granted), 0);
  ASSERT_EQ(tl_named_release(&c.r), TL_NAMED_HELD);
  ASSERT_EQ(tl_named_count(), 0);
}

static void
test_steal(void)
{
  req_t a, b, s, q;

  ASSERT_EQ(request(&a, NAME_A, 1, 0, 0, 0), TL_NAMED_HELD);
  ASSERT_EQ(request(&b, NAME_A, 1, 0, 0, 0), TL_NAMED_HELD);
  ASSERT_EQ(request(&q, NAME_A, 1, 1, 0, 0), TL_NAMED_QUEUED);
  ASSERT_EQ(request(&s, NAME_A, 1, 1, 0, 1), TL_NAMED_HELD);
  ASSERT_EQ(atomic_load(&a.stolen), 1);
  ASSERT_EQ(atomic_load(&b.stolen), 1);
  ASSERT_EQ(atomic_load(&q.granted), 0);
  /* The robbed holders' release reports the steal and frees nothing. */
  ASSERT_EQ(tl_named_release(&a.r), TL_NAMED_STOLEN);
  ASSERT_EQ(tl_named_release(&b.r), TL_NAMED_STOLEN);
  ASSERT_EQ(atomic_load(&q.granted), 0);
  ASSERT_EQ(tl_named_release(&s.r), TL_NAMED_HELD);
  ASSERT_EQ(atomic_load(&q.granted), 1);
  ASSERT_EQ(tl_named_release(&q.r), TL_NAMED_HELD);
  ASSERT_EQ(tl_named_count(), 0);
}

static void
test_cancel(void)
{
  req_t a, b, c;

  ASSERT_EQ(request(&a, NAME_A, 1, 1, 0, 0), TL_NAMED_HELD);
  ASSERT_EQ(request(&b, NAME_A, 1, 1, 0, 0), TL_NAMED_QUEUED);
  ASSERT_EQ(request(&c, NAME_A, 1, 0, 0, 0), TL_NAMED_QUEUED);
  ASSERT_EQ(tl_named_cancel(&a.r), 0); /* held: not a queued request */
  ASSERT_EQ(tl_named_cancel(&b.r), 1);
  ASSERT_EQ(tl_named_cancel(&b.r), 0);
  ASSERT_EQ(tl_named_release(&b.r), TL_NAMED_CANCELLED);
  ASSERT_EQ(atomic_load(&b.granted), 0);
  ASSERT_EQ(atomic_load(&c.granted), 0);
  /* Withdrawing a queued request by release lets the next one in. */
  ASSERT_EQ(tl_named_release(&a.r), TL_NAMED_HELD);
  ASSERT_EQ(atomic_load(&c.granted), 1);
  ASSERT_EQ(tl_named_release(&c.r), TL_NAMED_HELD);

  ASSERT_EQ(request(&a, NAME_A, 1, 1, 0, 0), TL_NAMED_HELD);
  ASSERT_EQ(request(&b, NAME_A, 1, 1, 0, 0), TL_NAMED_QUEUED);
  ASSERT_EQ(tl_named_release(&b.r), TL_NAMED_QUEUED);
  ASSERT_EQ(tl_named_release(&a.r), TL_NAMED_HELD);
  ASSERT_EQ(atomic_load(&b.granted), 0);
  ASSERT_EQ(tl_named_count(), 0);
}

typedef struct {
  int n;
  size_t len[8];
  uint16_t first[8];
  int exclusive[8];
  int held[8];
} visits_t;

static void
visit(void *data, const uint16_t *name, size_t len, int exclusive,
      uint32_t client, int held)
{
  visits_t *v = data;

  ASSERT_LT(v->n, 8);
  ASSERT_EQ(client, 7);
  v->len[v->n] = len;
  v->first[v->n] = len > 0 ? name[len - 1] : 0;
  v->exclusive[v->n] = exclusive;
  v->held[v->n] = held;
  v->n++;
}

/* Every held lock comes before every queued request; per name oldest
 * first. Names that differ only after a zero unit are different names. */
static void
test_query(void)
{
  req_t a, b, c, d;
  visits_t v = { 0 };

  ASSERT_EQ(request(&a, NAME_Z, 3, 1, 0, 0), TL_NAMED_HELD);
  ASSERT_EQ(request(&b, NAME_Z, 3, 0, 0, 0), TL_NAMED_QUEUED);
  ASSERT_EQ(request(&c, NAME_Z2, 3, 0, 0, 0), TL_NAMED_HELD);
  ASSERT_EQ(request(&d, NAME_Z, 0, 1, 0, 0), TL_NAMED_HELD); /* "" */
  ASSERT_EQ(tl_named_count(), 3);
  tl_named_query(visit, &v);
  ASSERT_EQ(v.n, 4);
  for (int i = 0; i < 3; i++)
    ASSERT_EQ(v.held[i], 1);
  ASSERT_EQ(v.held[3], 0);
  ASSERT_EQ(v.len[3], 3);
  ASSERT_EQ(v.first[3], 'b');
  ASSERT_EQ(v.exclusive[3], 0);

  ASSERT_EQ(tl_named_release(&a.r), TL_NAMED_HELD);
  ASSERT_EQ(atomic_load(&b.granted), 1);
  ASSERT_EQ(tl_named_release(&b.r), TL_NAMED_HELD);
  ASSERT_EQ(tl_named_release(&c.r), TL_NAMED_HELD);
  ASSERT_EQ(tl_named_release(&d.r), TL_NAMED_HELD);
  ASSERT_EQ(tl_named_count(), 0);
}

/* Threads take one exclusive name in turns; whoever holds it checks that
 * it is alone. A lost grant shows as a hang, which the watchdog reports. */
#define NTHREADS 4

static _Atomic int inside;
static _Atomic uint64_t progress;
static int rounds;

static void
worker(void *arg)
{
  (void)arg;
  for (int i = 0; i < rounds; i++) {
    req_t q;
    int phase = request(&q, NAME_B, 1, 1, 0, 0);

    if (phase == TL_NAMED_QUEUED) {
      while (atomic_load(&q.granted) == 0)
        uv_sleep(0);
    } else {
      ASSERT_EQ(phase, TL_NAMED_HELD);
    }
    ASSERT_EQ(atomic_fetch_add(&inside, 1), 0);
    atomic_fetch_sub(&inside, 1);
    ASSERT_EQ(tl_named_release(&q.r), TL_NAMED_HELD);
    atomic_fetch_add(&progress, 1);
  }
}

static void
test_threads(void)
{
  uv_thread_t t[NTHREADS];

  for (int i = 0; i < NTHREADS; i++)
    ASSERT_OK(uv_thread_create(&t[i], worker, NULL));
  for (int i = 0; i < NTHREADS; i++)
    ASSERT_OK(uv_thread_join(&t[i]));
  ASSERT_EQ(atomic_load(&progress), (uint64_t)NTHREADS * (uint64_t)rounds);
  ASSERT_EQ(tl_named_count(), 0);
}

int
main(int argc, char **argv)
{
  tl_watchdog_t wd;

  rounds = (int)tl_test_setting(argc, argv, 1, "TL_NAMES_ROUNDS", 2000);
  tl_watchdog_start(&wd, "names", 60, &progress);
  test_exclusive_fifo();
  test_shared();
  test_if_available();
  test_steal();
  test_cancel();
  test_query();
  test_threads();
  tl_watchdog_stop(&wd);
  printf("names: ok\n");
  return 0;
}
