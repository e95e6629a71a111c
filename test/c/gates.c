/* The semaphore and read-write lock gates: FIFO grants with amounts (a large
 * request at the head holds back smaller ones, and lets them in when it
 * leaves), EOVERFLOW, EINVAL, readers admitted together up to the next
 * queued writer, EDEADLK and ENOTOWNER, a dead writer's lock passed on, and
 * threads hammering both gates while invariants are checked inside.
 */
#include <math.h>

#include "test.h"

#define WORD(p) ((_Atomic int32_t *)(p))

/* A thread that registers `id`, makes one gate request, logs, releases what
 * it got and unregisters. */
typedef struct {
  uv_thread_t thread;
  int32_t *word;
  int gate;
  uint32_t id;
  uint32_t amount;
  double timeout_ms;
  int index;
  tl_test_log_t *log;  /* may be NULL */
  _Atomic int release; /* holds what it got until this is set */
  int result;          /* written before `done` */
  _Atomic int done;
  _Atomic int holding;
} requester_t;

static void
requester_main(void *arg)
{
  requester_t *r = arg;
  int res =
      tl_gate_acquire(r->word, r->gate, r->id, r->amount, r->timeout_ms, NULL);

  r->result = res;
  if (res == TL_RESULT_ACQUIRED || res == TL_RESULT_OWNER_DIED) {
    if (r->log != NULL)
      tl_test_log_add(r->log, r->index);
    atomic_store(&r->holding, 1);
    while (!atomic_load(&r->release))
      uv_sleep(1);
    ASSERT_OK(tl_gate_release(r->word, r->gate, r->id, r->amount));
  }
  tl_thread_unregister(r->id);
  atomic_store(&r->done, 1);
}

/* Starts a request and returns once the word has `enqueued` waiters (0 for
 * a request that is granted at once). With `release_at_once` the thread
 * releases as soon as it holds. See tl_test_wait_enqueued for `unless` and
 * the result. */
static int
requester_start_unless(requester_t *r, int32_t *word, int gate, uint32_t id,
                       uint32_t amount, double timeout_ms, int index,
                       tl_test_log_t *log, int release_at_once, size_t enqueued,
                       _Atomic int *unless)
{
  r->word = word;
  r->gate = gate;
  r->id = id;
  r->amount = amount;
  r->timeout_ms = timeout_ms;
  r->index = index;
  r->log = log;
  r->result = -1;
  atomic_store(&r->release, release_at_once);
  atomic_store(&r->done, 0);
  atomic_store(&r->holding, 0);
  tl_thread_register(id);
  ASSERT_OK(uv_thread_create(&r->thread, requester_main, r));
  if (enqueued == 0) {
    WAIT_UNTIL(atomic_load(&r->holding));
    return 1;
  }
  return tl_test_wait_enqueued(word, enqueued, unless);
}

static void
requester_start(requester_t *r, int32_t *word, int gate, uint32_t id,
                uint32_t amount, double timeout_ms, int index,
                tl_test_log_t *log, int release_at_once, size_t enqueued)
{
  requester_start_unless(r, word, gate, id, amount, timeout_ms, index, log,
                         release_at_once, enqueued, NULL);
}

static int
requester_join(requester_t *r)
{
  atomic_store(&r->release, 1);
  ASSERT_OK(uv_thread_join(&r->thread));
  return r->result;
}

/* Queues r[0], a request with a short timeout that is to leave by timing
 * out, and r[1] behind it, which holds what it gets until joined. Returns
 * once both were seen queued. If r[0] timed out before that (a loaded
 * machine), cleans up and tries again with a longer timeout: r[1], if it
 * started, gets what it asked for once r[0] has left (a reader, when only
 * readers hold the word) or once the permits it asked for are released
 * here (a semaphore request, on a word with none), and the word is then
 * put back as it was. */
static void
start_timed_pair(requester_t r[2], int32_t *word, int gate0, uint32_t id0,
                 uint32_t amount0, int gate1, uint32_t id1, uint32_t amount1)
{
  int32_t before = atomic_load(WORD(word));

  for (double timeout = 30;; timeout *= 2) {
    int ok;

    ASSERT_LE(timeout, 8000);
    ok = requester_start_unless(&r[0], word, gate0, id0, amount0, timeout, 0,
                                NULL, 1, 1, &r[0].done);
    if (ok && requester_start_unless(&r[1], word, gate1, id1, amount1, INFINITY,
                                     1, NULL, 0, 2, &r[0].done))
      return;
    ASSERT_EQ(requester_join(&r[0]), TL_RESULT_TIMED_OUT);
    if (ok) {
      if (gate1 == TL_GATE_SEM)
        ASSERT_OK(tl_gate_release(word, TL_GATE_SEM, 0, amount1));
      WAIT_UNTIL(atomic_load(&r[1].holding));
      ASSERT_EQ(requester_join(&r[1]), TL_RESULT_ACQUIRED);
      atomic_store(WORD(word), before);
    }
  }
}

static void
test_einval(void)
{
  int32_t word = 0;
  tl_waiter_t w;

  ASSERT_EQ(tl_gate_acquire(&word, 9, 1, 0, 0, NULL), TL_EINVAL);
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_NONE, 1, 0, 0, NULL), TL_EINVAL);
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_LOCK, 0, 0, 0, NULL), TL_EINVAL);
  ASSERT_EQ(
      tl_gate_acquire(&word, TL_GATE_WRITE, TL_LOCK_ID_MASK + 1, 0, 0, NULL),
      TL_EINVAL);
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_SEM, 0, TL_SEM_MASK + 1u, 0, NULL),
            TL_EINVAL);
  ASSERT_EQ(tl_gate_release(&word, TL_GATE_SEM, 0, TL_SEM_MASK + 1u),
            TL_EINVAL);
  tl_waiter_init_async(&w, NULL);
  ASSERT_EQ(tl_gate_acquire_async(&w, &word, 9, 1, 0), TL_EINVAL);
  ASSERT_EQ(atomic_load(WORD(&word)), 0);
  tl_test_quiescent();
}

/* Permits are taken and given back; a request that does not fit waits, and
 * the queued requests keep their order: the head's size decides for
 * everyone queued behind it. A head that has starved gets the permits
 * reserved (sem.c). */
static void
test_semaphore(void)
{
  int32_t word = 3;
  requester_t r[3];
  tl_test_log_t log;

  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_SEM, 0, 2, INFINITY, NULL),
            TL_RESULT_ACQUIRED);
  ASSERT_EQ(atomic_load(WORD(&word)), 1);
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_SEM, 0, 2, 0, NULL),
            TL_RESULT_TIMED_OUT);
  ASSERT_EQ(atomic_load(WORD(&word)), 1);
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_SEM, 0, 0, 0, NULL),
            TL_RESULT_ACQUIRED);
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_SEM, 0, 1, 0, NULL),
            TL_RESULT_ACQUIRED);
  ASSERT_EQ(atomic_load(WORD(&word)), 0);

  /* Head wants 3, then 1, then 1. */
  tl_test_log_init(&log);
  requester_start(&r[0], &word, TL_GATE_SEM, 1, 3, INFINITY, 0, &log, 1, 1);
  requester_start(&r[1], &word, TL_GATE_SEM, 2, 1, INFINITY, 1, &log, 0, 2);
  requester_start(&r[2], &word, TL_GATE_SEM, 3, 1, INFINITY, 2, &log, 0, 3);
  ASSERT_EQ(atomic_load(WORD(&word)), TL_GATE_WAITERS);
#ifndef NDEBUG
  tl_check_table();
#endif
  /* Two permits do not let the small requests pass the large head, which
   * has starved by now: they are kept for it. */
  tl_test_sleep_ms(5);
  ASSERT_OK(tl_gate_release(&word, TL_GATE_SEM, 0, 2));
  tl_test_sleep_ms(10);
  ASSERT_EQ(atomic_load(&log.len), 0);
  ASSERT_EQ(atomic_load(WORD(&word)), 2 | TL_GATE_WAITERS | TL_SEM_RESERVED);
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_SEM, 0, 1, 0, NULL),
            TL_RESULT_TIMED_OUT);
  /* The third permit: the head takes all 3 and gives them back at once;
   * then both small requests fit. */
  ASSERT_OK(tl_gate_release(&word, TL_GATE_SEM, 0, 1));
  ASSERT_EQ(requester_join(&r[0]), TL_RESULT_ACQUIRED);
  WAIT_UNTIL(atomic_load(&r[1].holding) && atomic_load(&r[2].holding));
  ASSERT_EQ(tl_test_log_get(&log, 0), 0);
  ASSERT_EQ(atomic_load(WORD(&word)), 1);
  ASSERT_EQ(requester_join(&r[1]), TL_RESULT_ACQUIRED);
  ASSERT_EQ(requester_join(&r[2]), TL_RESULT_ACQUIRED);
  ASSERT_EQ(atomic_load(WORD(&word)), 3);

  /* A large head that times out lets the smaller ones behind it in. */
  atomic_store(WORD(&word), 0);
  start_timed_pair(r, &word, TL_GATE_SEM, 1, 3, TL_GATE_SEM, 2, 1);
  ASSERT_OK(tl_gate_release(&word, TL_GATE_SEM, 0, 1));
  ASSERT_EQ(requester_join(&r[0]), TL_RESULT_TIMED_OUT);
  WAIT_UNTIL(atomic_load(&r[1].holding));
  ASSERT_EQ(atomic_load(WORD(&word)), 0);
  ASSERT_EQ(requester_join(&r[1]), TL_RESULT_ACQUIRED);
  ASSERT_EQ(atomic_load(WORD(&word)), 1);

  /* Overflow is refused and changes nothing. */
  atomic_store(WORD(&word), TL_SEM_MASK - 1);
  ASSERT_EQ(tl_gate_release(&word, TL_GATE_SEM, 0, 2), TL_EOVERFLOW);
  ASSERT_EQ(atomic_load(WORD(&word)), TL_SEM_MASK - 1);
  ASSERT_OK(tl_gate_release(&word, TL_GATE_SEM, 0, 1));
  ASSERT_EQ(atomic_load(WORD(&word)), TL_SEM_MASK);
  tl_test_quiescent();
}

typedef struct {
  tl_waiter_t w; /* first */
  _Atomic int settled;
  uint8_t owner_died;
} async_req_t;

static void
async_req_settle(tl_waiter_t *w)
{
  async_req_t *a = (async_req_t *)w;
  a->owner_died = w->owner_died;
  atomic_fetch_add(&a->settled, 1);
}

static void
async_req_init(async_req_t *a)
{
  tl_waiter_init_async(&a->w, async_req_settle);
  atomic_store(&a->settled, 0);
  a->owner_died = 0;
}

/* Async semaphore requests queue with the sync ones; a cancelled head lets
 * the next one in: woken to compete, it takes its permit when it tries. A
 * new request takes free permits past queued ones that do not fit. */
static void
test_semaphore_async(void)
{
  int32_t word = 0;
  async_req_t a[2];

  async_req_init(&a[0]);
  async_req_init(&a[1]);
  ASSERT_EQ(tl_gate_acquire_async(&a[0].w, &word, TL_GATE_SEM, 0, 2),
            TL_RESULT_PENDING);
  ASSERT_EQ(tl_gate_acquire_async(&a[1].w, &word, TL_GATE_SEM, 0, 1),
            TL_RESULT_PENDING);
  ASSERT_OK(tl_gate_release(&word, TL_GATE_SEM, 0, 1));
  ASSERT_EQ(atomic_load(&a[1].settled), 0);
  ASSERT_EQ(tl_cancel(&a[0].w, TL_CANCELLED), 1);
  ASSERT_EQ(atomic_load(&a[1].settled), 1);
  if (!a[1].w.granted) {
    /* Woken (it had not starved yet): it is on its way, SEM_WOKEN set. */
    ASSERT_EQ(atomic_load(WORD(&word)), 1 | TL_GATE_WAITERS | TL_SEM_WOKEN);
    ASSERT_EQ(tl_gate_retry_async(&a[1].w), TL_RESULT_ACQUIRED);
  }
  ASSERT_EQ(atomic_load(WORD(&word)), 0);
  ASSERT_EQ(tl_cancel(&a[1].w, TL_CANCELLED), 0);
  /* Barging: the permit goes to a new request while a queued one (2) does
   * not fit. */
  async_req_init(&a[1]);
  ASSERT_EQ(tl_gate_acquire_async(&a[1].w, &word, TL_GATE_SEM, 0, 2),
            TL_RESULT_PENDING);
  ASSERT_OK(tl_gate_release(&word, TL_GATE_SEM, 0, 1));
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_SEM, 0, 1, 0, NULL),
            TL_RESULT_ACQUIRED);
  ASSERT_EQ(tl_cancel(&a[1].w, TL_CANCELLED), 1);
  ASSERT_EQ(atomic_load(WORD(&word)), 0);
  ASSERT_OK(tl_gate_release(&word, TL_GATE_SEM, 0, 1));
  ASSERT_EQ(tl_gate_acquire_async(&a[0].w, &word, TL_GATE_SEM, 0, 1),
            TL_RESULT_ACQUIRED);
  ASSERT_EQ(atomic_load(&a[0].settled), 0);
  tl_test_quiescent();
}

/* Readers share; a writer waits for them; a queued writer holds back later
 * readers; readers at the head are admitted together. */
static void
test_rwlock(void)
{
  int32_t word = 0;
  requester_t r[4];
  tl_test_log_t log;

  tl_thread_register(1);
  tl_thread_register(2);
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_READ, 1, 0, INFINITY, NULL),
            TL_RESULT_ACQUIRED);
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_READ, 2, 0, INFINITY, NULL),
            TL_RESULT_ACQUIRED);
  ASSERT_EQ(atomic_load(WORD(&word)), 2);
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_WRITE, 3, 0, 0, NULL),
            TL_RESULT_TIMED_OUT);
  ASSERT_EQ(atomic_load(WORD(&word)), 2);

  /* A writer queues behind the readers, a reader behind the writer. */
  tl_test_log_init(&log);
  requester_start(&r[0], &word, TL_GATE_WRITE, 3, 0, INFINITY, 0, &log, 0, 1);
  requester_start(&r[1], &word, TL_GATE_READ, 4, 0, INFINITY, 1, &log, 0, 2);
  ASSERT_EQ(atomic_load(WORD(&word)), 2 | TL_GATE_WAITERS);
  ASSERT_OK(tl_gate_release(&word, TL_GATE_READ, 1, 0));
  tl_test_sleep_ms(10);
  ASSERT_EQ(atomic_load(&log.len), 0);
  ASSERT_OK(tl_gate_release(&word, TL_GATE_READ, 2, 0));
  WAIT_UNTIL(atomic_load(&r[0].holding));
  ASSERT_EQ(atomic_load(WORD(&word)), TL_RW_WRITER | 3 | TL_GATE_WAITERS);
  ASSERT_EQ(requester_join(&r[0]), TL_RESULT_ACQUIRED);
  WAIT_UNTIL(atomic_load(&r[1].holding));
  ASSERT_EQ(atomic_load(WORD(&word)), 1);
  ASSERT_EQ(requester_join(&r[1]), TL_RESULT_ACQUIRED);
  ASSERT_EQ(atomic_load(WORD(&word)), 0);

  /* Writer holds; R R W R queue: the two readers enter together, then the
   * writer, then the last reader. */
  tl_test_log_init(&log);
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_WRITE, 1, 0, INFINITY, NULL),
            TL_RESULT_ACQUIRED);
  requester_start(&r[0], &word, TL_GATE_READ, 10, 0, INFINITY, 0, &log, 0, 1);
  requester_start(&r[1], &word, TL_GATE_READ, 11, 0, INFINITY, 1, &log, 0, 2);
  requester_start(&r[2], &word, TL_GATE_WRITE, 12, 0, INFINITY, 2, &log, 0, 3);
  requester_start(&r[3], &word, TL_GATE_READ, 13, 0, INFINITY, 3, &log, 0, 4);
  ASSERT_OK(tl_gate_release(&word, TL_GATE_WRITE, 1, 0));
  WAIT_UNTIL(atomic_load(&r[0].holding) && atomic_load(&r[1].holding));
  ASSERT_EQ(atomic_load(WORD(&word)), 2 | TL_GATE_WAITERS);
  ASSERT_EQ(tl_waiter_count(&word), 2);
  ASSERT_EQ(requester_join(&r[0]), TL_RESULT_ACQUIRED);
  tl_test_sleep_ms(10);
  ASSERT_EQ(atomic_load(&r[2].holding), 0);
  ASSERT_EQ(requester_join(&r[1]), TL_RESULT_ACQUIRED);
  WAIT_UNTIL(atomic_load(&r[2].holding));
  ASSERT_EQ(atomic_load(&r[3].holding), 0);
  ASSERT_EQ(requester_join(&r[2]), TL_RESULT_ACQUIRED);
  ASSERT_EQ(requester_join(&r[3]), TL_RESULT_ACQUIRED);
  ASSERT_EQ(tl_test_log_get(&log, 2), 2);
  ASSERT_EQ(tl_test_log_get(&log, 3), 3);
  ASSERT_EQ(atomic_load(WORD(&word)), 0);

  /* A waiting writer that times out lets the readers behind it in. */
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_READ, 1, 0, INFINITY, NULL),
            TL_RESULT_ACQUIRED);
  start_timed_pair(r, &word, TL_GATE_WRITE, 20, 0, TL_GATE_READ, 21, 0);
  ASSERT_EQ(requester_join(&r[0]), TL_RESULT_TIMED_OUT);
  WAIT_UNTIL(atomic_load(&r[1].holding));
  ASSERT_EQ(atomic_load(WORD(&word)), 2);
  ASSERT_EQ(requester_join(&r[1]), TL_RESULT_ACQUIRED);
  ASSERT_OK(tl_gate_release(&word, TL_GATE_READ, 1, 0));
  ASSERT_EQ(atomic_load(WORD(&word)), 0);

  /* EDEADLK and ENOTOWNER. */
  ASSERT_EQ(tl_gate_release(&word, TL_GATE_READ, 1, 0), TL_ENOTOWNER);
  ASSERT_EQ(tl_gate_release(&word, TL_GATE_WRITE, 1, 0), TL_ENOTOWNER);
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_WRITE, 1, 0, INFINITY, NULL),
            TL_RESULT_ACQUIRED);
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_WRITE, 1, 0, 10, NULL), TL_EDEADLK);
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_READ, 1, 0, 10, NULL), TL_EDEADLK);
  ASSERT_EQ(tl_gate_release(&word, TL_GATE_WRITE, 2, 0), TL_ENOTOWNER);
  ASSERT_EQ(tl_gate_release(&word, TL_GATE_READ, 1, 0), TL_ENOTOWNER);
  ASSERT_EQ(atomic_load(WORD(&word)), TL_RW_WRITER | 1);
  ASSERT_OK(tl_gate_release(&word, TL_GATE_WRITE, 1, 0));
  ASSERT_EQ(atomic_load(WORD(&word)), 0);
  tl_thread_unregister(1);
  tl_thread_unregister(2);
  tl_test_quiescent();
}

/* The writer's id dies while holding the lock: the waiters at the head get
 * it, every reader of the batch told so; with nobody waiting, the next
 * acquirer. */
static void
test_rwlock_dead_writer(void)
{
  int32_t word = 0;
  requester_t r[2];
  async_req_t a;

  tl_thread_register(30);
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_WRITE, 30, 0, INFINITY, NULL),
            TL_RESULT_ACQUIRED);
  requester_start(&r[0], &word, TL_GATE_READ, 31, 0, INFINITY, 0, NULL, 0, 1);
  requester_start(&r[1], &word, TL_GATE_READ, 32, 0, INFINITY, 1, NULL, 0, 2);
  tl_thread_unregister(30);
  WAIT_UNTIL(atomic_load(&r[0].holding) && atomic_load(&r[1].holding));
  /* The word keeps the mark for the next writer (readers cannot repair
   * what the writer left half done), from the moment the dead writer's
   * hold is cleared: a writer barging in from JavaScript is told too. */
  ASSERT_EQ(atomic_load(WORD(&word)), TL_RW_OWNER_DIED | 2);
  ASSERT_EQ(requester_join(&r[0]), TL_RESULT_OWNER_DIED);
  ASSERT_EQ(requester_join(&r[1]), TL_RESULT_OWNER_DIED);
  ASSERT_EQ(atomic_load(WORD(&word)), TL_RW_OWNER_DIED);

  /* Nobody waiting: a sync writer, then an async reader, take over. */
  tl_thread_register(33);
  tl_thread_register(34);
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_WRITE, 33, 0, INFINITY, NULL),
            TL_RESULT_OWNER_DIED);
  ASSERT_OK(tl_gate_release(&word, TL_GATE_WRITE, 33, 0));
  ASSERT_EQ(atomic_load(WORD(&word)), 0); /* a writer's release clears it */
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_WRITE, 33, 0, INFINITY, NULL),
            TL_RESULT_ACQUIRED);
  tl_thread_unregister(33);
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_WRITE, 34, 0, 0, NULL),
            TL_RESULT_OWNER_DIED);
  /* The word says so while the writer holds it, as a lock word does. */
  ASSERT_EQ(atomic_load(WORD(&word)), TL_RW_WRITER | TL_RW_OWNER_DIED | 34);
  tl_thread_unregister(34);
  async_req_init(&a);
  tl_thread_register(35);
  ASSERT_EQ(tl_gate_acquire_async(&a.w, &word, TL_GATE_READ, 35, 0),
            TL_RESULT_OWNER_DIED);
  ASSERT_EQ(atomic_load(WORD(&word)), TL_RW_OWNER_DIED | 1);
  ASSERT_OK(tl_gate_release(&word, TL_GATE_READ, 35, 0));
  ASSERT_EQ(atomic_load(WORD(&word)), TL_RW_OWNER_DIED);
  ASSERT_EQ(tl_gate_acquire(&word, TL_GATE_WRITE, 35, 0, INFINITY, NULL),
            TL_RESULT_OWNER_DIED);
  ASSERT_OK(tl_gate_release(&word, TL_GATE_WRITE, 35, 0));
  ASSERT_EQ(atomic_load(WORD(&word)), 0);
  tl_thread_unregister(35);
  tl_test_quiescent();
}

/* Threads take both gates at random, with sync, timed and async requests;
 * inside, they check what the gate promises. The protected value is plain
 * memory, so ThreadSanitizer checks that every grant orders the sections. */
typedef struct {
  int32_t sem;
  int32_t rw;
  int permits;
  _Atomic int sem_inside; /* permits held */
  _Atomic int readers;
  _Atomic int writers;
  int64_t value; /* written by writers only, read by readers */
} shared_t;

typedef struct {
  uv_thread_t thread;
  shared_t *s;
  uint32_t id;
  int rounds;
  uint64_t seed;
  int64_t writes; /* read after join */
} hammer_t;

static int
hammer_acquire(hammer_t *h, int32_t *word, int gate, uint32_t amount,
               tl_rng_t *rng, async_req_t *a)
{
  uint64_t how = tl_rng_below(rng, 4);
  int r;

  if (how == 0) {
    async_req_init(a);
    r = tl_gate_acquire_async(&a->w, word, gate, h->id, amount);
    if (r != TL_RESULT_PENDING)
      return r;
    /* The settle callback only counts; poll, as an event loop would, and
     * then go on as src/ready.c does: a request woken to compete (a
     * semaphore's) tries, and may sleep again in its place. */
    for (int seen = 1;; seen++) {
      while (atomic_load(&a->settled) < seen)
        uv_sleep(0);
      r = tl_gate_retry_async(&a->w);
      if (r != TL_RESULT_PENDING)
        break;
    }
    ASSERT_EQ(r, TL_RESULT_ACQUIRED); /* nobody dies here */
    return r;
  }
  if (how == 1)
    return tl_gate_acquire(word, gate, h->id, amount, 0.5, NULL);
  return tl_gate_acquire(word, gate, h->id, amount, INFINITY, NULL);
}

static void
hammer_main(void *arg)
{
  hammer_t *h = arg;
  shared_t *s = h->s;
  tl_rng_t rng;
  async_req_t a;
  int r;

  tl_rng_seed(&rng, h->seed);
  tl_thread_register(h->id);
  h->writes = 0;
  for (int i = 0; i < h->rounds; i++) {
    uint64_t what = tl_rng_below(&rng, 3);

    if (what == 0) {
      uint32_t n = 1 + (uint32_t)tl_rng_below(&rng, (uint64_t)s->permits);
      r = hammer_acquire(h, &s->sem, TL_GATE_SEM, n, &rng, &a);
      if (r == TL_RESULT_TIMED_OUT)
        continue;
      ASSERT_EQ(r, TL_RESULT_ACQUIRED);
      ASSERT_LE(atomic_fetch_add(&s->sem_inside, (int)n) + (int)n, s->permits);
      tl_cpu_relax();
      atomic_fetch_sub(&s->sem_inside, (int)n);
      ASSERT_OK(tl_gate_release(&s->sem, TL_GATE_SEM, h->id, n));
    } else if (what == 1) {
      r = hammer_acquire(h, &s->rw, TL_GATE_READ, 0, &rng, &a);
      if (r == TL_RESULT_TIMED_OUT)
        continue;
      ASSERT_EQ(r, TL_RESULT_ACQUIRED);
      atomic_fetch_add(&s->readers, 1);
      ASSERT_EQ(atomic_load(&s->writers), 0);
      ASSERT_GE(s->value, 0);
      atomic_fetch_sub(&s->readers, 1);
      ASSERT_OK(tl_gate_release(&s->rw, TL_GATE_READ, h->id, 0));
    } else {
      r = hammer_acquire(h, &s->rw, TL_GATE_WRITE, 0, &rng, &a);
      if (r == TL_RESULT_TIMED_OUT)
        continue;
      ASSERT_EQ(r, TL_RESULT_ACQUIRED);
      ASSERT_EQ(atomic_fetch_add(&s->writers, 1), 0);
      ASSERT_EQ(atomic_load(&s->readers), 0);
      s->value++;
      h->writes++;
      atomic_fetch_sub(&s->writers, 1);
      ASSERT_OK(tl_gate_release(&s->rw, TL_GATE_WRITE, h->id, 0));
    }
  }
  tl_thread_unregister(h->id);
}

static void
test_hammer(uint64_t seed, int threads, int rounds)
{
  enum { MAXT = 16 };
  static shared_t s;
  hammer_t h[MAXT];
  int64_t writes = 0;

  ASSERT_LE(threads, MAXT);
  s.permits = 3;
  s.sem = s.permits;
  s.rw = 0;
  s.value = 0;
  for (int i = 0; i < threads; i++) {
    h[i] = (hammer_t){ .s = &s,
                       .id = (uint32_t)(100 + i),
                       .rounds = rounds,
                       .seed = seed + (uint64_t)i };
    ASSERT_OK(uv_thread_create(&h[i].thread, hammer_main, &h[i]));
  }
  for (int i = 0; i < threads; i++) {
    ASSERT_OK(uv_thread_join(&h[i].thread));
    writes += h[i].writes;
  }
  ASSERT_EQ(s.value, writes);
  ASSERT_EQ(atomic_load(WORD(&s.sem)), s.permits);
  ASSERT_EQ(atomic_load(WORD(&s.rw)), 0);
  tl_test_quiescent();
}

int
main(int argc, char **argv)
{
  tl_watchdog_t wd;
  uint64_t seed = tl_test_seed("gates");
  int rounds = (int)tl_test_setting(argc, argv, 1, "TL_GATE_ROUNDS", 3000);
  int threads = (int)tl_test_setting(argc, argv, 2, "TL_GATE_THREADS", 6);

  tl_watchdog_start(&wd, "gates", 120, NULL);
  for (unsigned spin = 0; spin <= 2000; spin += 2000) {
    tl_set_spin(spin);
    test_einval();
    test_semaphore();
    test_semaphore_async();
    test_rwlock();
    test_rwlock_dead_writer();
    test_hammer(seed + spin, threads, rounds);
  }
  tl_test_quiescent();
  tl_watchdog_stop(&wd);
  printf("gates: ok\n");
  return 0;
}
