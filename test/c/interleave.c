/* A deterministic interleaving checker for the lock protocol, in the spirit
 * of Rust's loom and Microsoft's CHESS.
 *
 * The core decides every grant under the word's bucket lock; the only steps
 * that run outside it are JavaScript's compare-exchange fast paths
 * (lib/LockWord.js, lib/RWLock.js). So an execution is a sequence of atomic
 * steps, each one core call or one fast-path compare-exchange, and a bug in
 * the protocol is a sequence of such steps. This file runs small scenarios
 * (two or three simulated threads, a few operations each, on one lock,
 * read-write lock or semaphore word) on
 * one OS thread: each simulated thread is a script of operations, and at
 * every step the checker chooses which runnable simulated thread moves.
 * Exploration is stateless: every execution starts again from a zeroed word
 * and replays the choices of the one before up to the point where it
 * branches differently, depth first, until every schedule within the bound
 * (CHESS's preemption bound: how often a thread that could go on is
 * switched away from) has run. After every step it checks the protocol's
 * invariants (of a lock or read-write lock word):
 *   - at most one exclusive holder, and none beside readers;
 *   - the word's owner field names the holder (or is free, or passed to a
 *     woken waiter), and its reader count matches the simulated readers;
 *   - LOCK_WOKEN says that a woken waiter is on its way: the bit is set
 *     while a request is woken and clear otherwise (a woken waiter gives
 *     it back), and at most one request is woken at a time;
 *   - a free word with queued waiters has a woken waiter on its way;
 *   - a dead owner's lock is taken over only with OWNER_DIED said, and
 *     a grant that said it but whose thread died before it ran passes it
 *     on to the next exclusive holder;
 *   - order (src/lock.c, I5 and I7): a release hands the lock only to a
 *     request that can take it up at once (a parked thread's, marked
 *     `park` in a script; an event loop's that came to try and sleeps
 *     again; the releasing thread's own), never to an event loop's request
 *     woken and on its way or asleep since it queued, and to the oldest of
 *     them; a request made earlier and kept in its thread's queue (`early`)
 *     counts from then;
 *   - starvation: a release while such a request has waited 1 ms hands it
 *     the lock, and once it has, at most one hold begins before it (a
 *     barger that took a word that was free already);
 *   - readers: the readers at the head are let in together (no read
 *     request sleeps while no writer holds the word or waits before it),
 *     and no new reader passes a queued or woken writer;
 * at quiescence (nobody can move) no request still sleeps; and at the end
 * the word is 0 with no waiter left. A semaphore word (src/sem.c) has its
 * own invariants: the permits held, on their way to a grantee, lost with
 * a dead thread and available always add up to the total (never more in
 * use than there are); SEM_WOKEN iff a request is woken, and that one is
 * the first in the queue; GATE_WAITERS iff a request is queued; no stall:
 * the first request never sleeps while the permits suffice for it;
 * SEM_RESERVED only while the first request has starved and does not fit;
 * a release while the first request starves grants it or reserves the
 * permits for it, and from then on no new request takes permits before
 * it. The operations check their own
 * contracts too: an abort or timeout of a request that was not granted
 * withdraws it (tl_cancel succeeds, and no grant follows), and a sync
 * request of a thread whose own request is queued or woken on the word
 * fails with EDEADLK.
 *
 * The clock is the checker's too: uv_hrtime, which the core reads through
 * tl_now_ns, is defined below as a counter that every execution resets, so
 * that replays are exact and the 1 ms starvation threshold passes only when
 * a script says so (the `tick` operation).
 *
 * test/c/run.sh also builds this file against cores with a known bug
 * injected (-DTL_INJECT_BUG=n: readers let in one per pass, new readers
 * passing a queued writer, a hand-off that skips the oldest, hand-offs to
 * an event loop's request that is not there) and expects each to fail.
 *
 * The JavaScript fast paths copied below read the word through the same
 * constants as lib/LockWord.js (waiters.h: LOCK_SHORTCUT_MASK,
 * WRITE_SHORTCUT_MASK, SHORTCUT_IF and the owner masks).
 *
 * A failing scenario prints, for each kind of violation it found, the
 * shortest schedule that shows it. Environment:
 *   TL_SCENARIO=a,b          run only these scenarios
 *   TL_EXPECT_BUG=1          succeed only if every scenario run finds a
 *                            violation (to show a counterexample)
 *   TL_INTERLEAVE_PREEMPTIONS, TL_INTERLEAVE_DEPTH   the bounds
 */
#include <stdarg.h>
#include <time.h>

#include "test.h"

#define IL_MAX_THREADS 3
/* The id of the thread that takes over a dead owner's word at the end. */
#define IL_JANITOR (IL_MAX_THREADS + 1)
#define IL_MAX_OPS 8
#define IL_MAX_DEPTH 128
#define IL_NOTE_MAX 4096
#define IL_MAX_KINDS 8

/* The default preemption bound. The plain and AddressSanitizer builds
 * explore every schedule of these scenarios (about 2 s); under
 * ThreadSanitizer every mutex operation is slow and the core's table-wide
 * scan at each thread death costs a thousand of them, so that build stops
 * at four preemptions (about 5 s; every violation found so far shows with
 * four, most with two). */
#define IL_UNBOUNDED 1000
#if defined(__SANITIZE_THREAD__)
#define IL_DEFAULT_PREEMPTIONS 4
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define IL_DEFAULT_PREEMPTIONS 4
#endif
#endif
#ifndef IL_DEFAULT_PREEMPTIONS
#define IL_DEFAULT_PREEMPTIONS IL_UNBOUNDED
#endif
#define IL_DEFAULT_DEPTH 64

/* ---------------------------------------------------------------------- */
/* The virtual clock. */

/* Each reading moves the clock on, so that the core's courtesy wait (which
 * watches the clock for TL_LOCK_COURTESY_NS) ends after a few readings, and
 * a request never starves (TL_POLICY_STARVING_NS) within the few hundred
 * readings of an execution unless a `tick` moves the clock by that much. */
#define IL_CLOCK_STEP_NS 100
#define IL_CLOCK_START_NS UINT64_C(1000000000)

static uint64_t il_clock;

uint64_t
uv_hrtime(void)
{
  il_clock += IL_CLOCK_STEP_NS;
  return il_clock;
}

/* ---------------------------------------------------------------------- */
/* Scenarios. */

enum { IL_WORD_LOCK, IL_WORD_RW, IL_WORD_SEM };

typedef enum {
  IL_ACQ,      /* acquire and wait: fast path, then the core */
  IL_REL,      /* release within the slice */
  IL_REL_END,  /* release at the end of the slice (hand-off) */
  IL_REL_KEEP, /* release to the thread's own next request (LOCK_KEEP):
                  kept, or released and the next request queues */
  IL_TRY,      /* a sync request with timeout 0: fast path, then the core */
  IL_ABORT,    /* the request's signal fires: tl_cancel(CANCELLED) */
  IL_TIMEOUT,  /* the request's timer fires: tl_cancel(TIMED_OUT) */
  IL_DIE,      /* the thread is terminated */
  IL_TICK,     /* TL_POLICY_STARVING_NS pass */
  IL_HALF      /* half of TL_POLICY_STARVING_NS passes (not a tick): a
                  request starves by the core's clock after two, or after
                  one that follows half of its wait */
} il_op_kind_t;

typedef struct {
  uint8_t kind;   /* il_op_kind_t */
  uint8_t gate;   /* TL_GATE_LOCK, _READ, _WRITE or _SEM for ACQ, REL*, TRY */
  uint8_t amount; /* permits, for TL_GATE_SEM */
} il_op_t;

/* A script per thread, separated by '|': acq rel relh try (with a suffix W
 * or R on a read-write lock word: acqW relR ...; with the permits on a
 * semaphore word: acq2 rel1 try1), abort tmo die tick. An
 * abort, timeout, death or try may happen while the thread's request is
 * still queued or woken; the other operations wait for it to settle. */
typedef struct {
  const char *name;
  int kind;
  const char *script;
  const char *what;
  int permits; /* a semaphore word's permits at the start */
} il_scenario_t;

static const il_scenario_t il_scenarios[] = {
  { "lock-basic", IL_WORD_LOCK, "acq rel acq relh | acq rel | acq relh",
    "three threads take turns, within and at the end of slices", 0 },
  { "lock-try", IL_WORD_LOCK, "acq relh acq rel | try rel | acq rel",
    "a try beside a barging holder and a waiter", 0 },
  { "lock-starving", IL_WORD_LOCK, "acq tick rel | acq rel | acq rel",
    "a waiter that waited 1 ms is handed the lock", 0 },
  { "lock-abort", IL_WORD_LOCK, "acq rel | acq abort rel | acq rel",
    "an abort withdraws a request that was not granted (issue 18, bug 2)", 0 },
  { "lock-timeout", IL_WORD_LOCK, "acq relh | acq tmo rel | acq rel",
    "a timeout withdraws a request that was not granted", 0 },
  { "lock-die-woken", IL_WORD_LOCK, "acq rel acq relh | acq die | acq rel",
    "a thread dies queued, woken, handed the lock while woken, or holding", 0 },
  { "lock-die-holding", IL_WORD_LOCK, "acq die | acq rel acq rel | acq rel",
    "a holder dies; the next one takes over with OWNER_DIED", 0 },
  { "lock-die-twice", IL_WORD_LOCK, "acq die | acq die | acq rel",
    "a holder dies; the waiter told OWNER_DIED dies before it runs; the "
    "next holder is told",
    0 },
  { "rw-die-twice", IL_WORD_RW, "acqW die | acqW die | acqW relW",
    "a writer dies; the writer told OWNER_DIED dies before it runs; the "
    "next writer is told",
    0 },
  { "lock-probe", IL_WORD_LOCK, "acq rel | acq try rel | acq rel",
    "a sync request beside the thread's own queued or woken one: EDEADLK", 0 },
  { "rw-writers", IL_WORD_RW, "acqW relW acqW relhW | acqW relhW | acqR relR",
    "writers barge and hand off; a reader waits for them", 0 },
  { "rw-readers", IL_WORD_RW, "acqR relR acqW relW | acqW relW | acqR relR",
    "readers share, a writer excludes them", 0 },
  { "rw-die-woken", IL_WORD_RW, "acqW relW | acqW die | acqW relW",
    "a writer dies while its request is woken (issue 18, bug 1)", 0 },
  { "rw-die-handed", IL_WORD_RW, "acqW relW acqW relhW | acqW die | acqR relR",
    "a writer dies while a slice end hands it the lock as it is woken (bug "
    "1)",
    0 },
  { "rw-die-holding", IL_WORD_RW, "acqW die | acqW relW | acqR relR",
    "a writer dies holding; the next one takes over with OWNER_DIED", 0 },
  { "rw-abort", IL_WORD_RW, "acqW relW | acqW abort relW | acqR relR",
    "an abort withdraws a write request that was not granted (bug 2)", 0 },
  { "rw-read-timeout", IL_WORD_RW, "acqW relW | acqR tmo relR | acqW relW",
    "a queued reader times out while writers come and go", 0 },
  { "rw-probe", IL_WORD_RW, "acqW relW | acqW tryW relW | acqW relW",
    "a sync write request beside the thread's own one: EDEADLK (bug 7)", 0 },
  { "lock-keep", IL_WORD_LOCK, "acq relk relk rel | acq rel | acq abort rel",
    "the holder passes the lock to its own next requests while others wait",
    0 },
  { "lock-keep-starving", IL_WORD_LOCK, "acq tick relk tick relk rel | acq rel",
    "a waiter that waited 1 ms gets the lock at the holder's next release, "
    "also one that would keep it for the holder's own request (bug 4)",
    0 },
  { "lock-starving-barger", IL_WORD_LOCK,
    "acq rel acq tick rel | acq rel | acq rel",
    "a barging holder's release hands the lock to a starving woken waiter", 0 },
  { "rw-keep-starving", IL_WORD_RW,
    "acqW tick relkW relW | acqW relW | acqR relR",
    "a writer's keep while a waiter starves hands the write lock over", 0 },
  { "rw-die-reading", IL_WORD_RW, "acqR die | acqW relW | acqR relR",
    "a reader dies holding a read lock: given back, the next writer is told "
    "(issue 18, bug 12)",
    0 },
  { "rw-die-reading-queued", IL_WORD_RW,
    "acqR acqR die | acqW relW | acqR relR",
    "a reader dies with a read lock and a read request queued behind a "
    "writer",
    0 },
  { "lock-loop-busy", IL_WORD_LOCK,
    "acq rel | acq rel acq tick relh acq rel | park acq rel",
    "an event loop's request woken and on its way while its loop is busy: "
    "a barging thread's releases and a parked waiter that starves behind "
    "it (issue 24, item 1)",
    0 },
  { "lock-loop-came", IL_WORD_LOCK,
    "acq tick rel | acq rel acq rel | park acq rel",
    "an event loop's request that came, found the lock taken and starves "
    "is served at the next release, before a parked waiter behind it",
    0 },
  { "lock-holder-order", IL_WORD_LOCK,
    "acq tick relh acq rel | park acq rel | park early acq rel",
    "a request that waited in its thread's queue since the start takes its "
    "place before the waiters that came later (issue 24, item 3.10)",
    0 },
  { "rw-readers-batch", IL_WORD_RW, "acqW relW | acqR relR | acqR relR",
    "readers queued behind a writer are let in together when it releases", 0 },
  { "rw-reader-behind-writer", IL_WORD_RW, "acqR relR | acqW relW | acqR relR",
    "a new reader queues behind a queued writer (writer preference)", 0 },
  { "lock-handoff-order", IL_WORD_LOCK,
    "acq tick rel | park acq rel | park acq rel",
    "a hand-off goes to the oldest of two parked waiters", 0 },
  { "rw-loop-busy", IL_WORD_RW,
    "acqW relW | acqW relW acqW tick relhW | park acqW relW",
    "the same for writers: a woken promise writer on its way, a barging "
    "writer, a parked writer that starves",
    0 },
  { "sem-basic", IL_WORD_SEM, "acq1 rel1 acq2 rel2 | acq2 rel2 | acq1 rel1",
    "1- and 2-permit requests of 2 permits barge, queue and are woken", 2 },
  { "sem-chain", IL_WORD_SEM, "acq2 rel2 acq1 rel1 | acq1 rel1 | acq1 rel1",
    "a release of 2 permits serves two queued requests: the woken one wakes "
    "the next",
    2 },
  { "sem-starving", IL_WORD_SEM,
    "acq1 tick rel1 acq1 rel1 | acq2 rel2 | acq1 rel1 acq1 rel1",
    "a starving request for 2 gets the permits released before any barger", 2 },
  { "sem-starving-woken", IL_WORD_SEM,
    "acq2 rel1 tick rel1 | acq1 rel1 | "
    "acq2 rel2",
    "a release while the woken or asleep first request starves grants it or "
    "reserves for it",
    2 },
  { "sem-abort", IL_WORD_SEM, "acq2 rel2 | acq2 abort rel2 | acq1 rel1",
    "an abort withdraws a request queued, woken or reserved for", 2 },
  { "sem-timeout", IL_WORD_SEM, "acq1 tick rel1 | acq2 tmo rel2 | acq1 rel1",
    "a starving request times out: the reservation goes with it", 2 },
  { "sem-die", IL_WORD_SEM, "acq2 rel2 | acq1 die | acq2 rel2",
    "a thread dies queued, woken, granted before it ran, or holding (its "
    "permits are lost)",
    2 },
  { "sem-woken-shortcut", IL_WORD_SEM,
    "acq1 rel1 acq1 rel1 | acq1 rel1 acq1 tick rel1 | acq2 rel2",
    "releases while the first request is woken add permits with a "
    "compare-exchange until it could have starved; then the core grants",
    2 },
  { "sem-woken-half", IL_WORD_SEM,
    "acq1 half rel1 acq1 half rel1 | acq1 rel1 | acq2 rel2",
    "the shortcut's bound counts from when the first request queued, not "
    "from the release that told it",
    2 },
  { "sem-try", IL_WORD_SEM, "acq2 rel2 | try1 rel1 try2 rel2 | acq1 tick rel1",
    "sync tries beside queued, woken and starving requests", 2 },
};

#define IL_SCENARIO_COUNT (sizeof(il_scenarios) / sizeof(il_scenarios[0]))

/* ---------------------------------------------------------------------- */
/* The simulated threads and the checker's state. */

typedef enum {
  IL_REQ_NONE,    /* no request in the core */
  IL_REQ_QUEUED,  /* queued in the core (PENDING), no settle yet */
  IL_REQ_SETTLED, /* settled (woken or granted), not yet delivered */
  IL_REQ_CALLING  /* inside the core call that may queue it */
} il_req_t;

typedef enum {
  IL_CONT_NONE,    /* between operations */
  IL_CONT_ACQ,     /* the fast path failed; the core request comes next */
  IL_CONT_TRY,     /* the same for a sync request */
  IL_CONT_RELEASE, /* the compare-exchange release did not apply */
  IL_CONT_KEEP,    /* a LOCK_KEEP release goes to the core next */
  IL_CONT_WATCH,   /* its present request is watched (tl__present_watch):
                      the end of the watch comes next */
} il_cont_t;

typedef struct {
  tl_waiter_t w; /* first: the settle callback casts back; only the core
                    and the adapter below touch it */
  int n;         /* printed as T<n> */
  uint32_t id;
  int alive;
  int nops;
  il_op_t ops[IL_MAX_OPS];
  int pc;              /* the next operation */
  il_cont_t cont;      /* an operation half done: only it may move next */
  uint32_t cont_arg;   /* the release amount of IL_CONT_RELEASE */
  il_req_t req;        /* the thread's one request in the core */
  int req_gate;        /* its gate */
  int excl;            /* delivered lock or write holds (0 or 1) */
  int reads;           /* delivered read holds */
  int req_ticks;       /* il.ticks when its request queued */
  int slice_ticks;     /* il.ticks when its slice began; -1: no slice */
  uint64_t starves_at; /* LockWord #starvesAt, on the checker's clock */
  int permits;         /* semaphore: delivered permits */
  unsigned req_seq;    /* semaphore: the order in which requests queued */
  int starve_seen;     /* semaphore: a release came while its request was
                          first and starving */
  int parked;          /* a blocking thread (script `park`): its requests
                          are taken up at once; otherwise an event loop's
                          promise requests, which may not run for long */
  int came;            /* its event-loop request came to try, found the
                          word taken and sleeps again: it may be served */
  int bypassed;        /* holds others began while its request had starved
                          and could be taken up, other than grants to
                          older waiters (at most 1: the next release
                          serves it; a barger may take a free word once) */
  int early;           /* script `early`: its first request was made at the
                          start and waited in its thread's queue
                          (lib/ThreadQueue.js) until its first step: it
                          goes to the core with that arrival (I5) */
} il_thread_t;

typedef struct {
  int thread;  /* index */
  int deliver; /* 1: the settle reaches the thread; 0: its next step */
} il_move_t;

typedef struct {
  uint16_t n; /* moves to choose from at this depth */
  uint16_t c; /* the one chosen */
} il_choice_t;

static struct {
  const il_scenario_t *sc;
  int nthreads;
  il_thread_t t[IL_MAX_THREADS];
  /* Which ids are registered. Ids live on from one execution to the next
   * (registering is cheap, but unregistering scans the whole table), so
   * only a death unregisters one. */
  int registered[IL_JANITOR + 1];
  int32_t word;            /* reset at the start of every execution */
  int lost;                /* semaphore: permits that died with a thread */
  unsigned seq;            /* semaphore: requests queued so far */
  int dead_owner_reported; /* an OWNER_DIED since the last holder died */
  int news_owed;           /* a grant with OWNER_DIED died unused: the next
                              exclusive holder must be told (lock.c, I6) */
  int ticks;               /* IL_TICKs so far in this execution */
  int releasing;           /* inside a lock or write release's core call */
  il_thread_t *releaser;   /* the thread making it: running, so its own
                              request can take the lock up at once */
  int reader_died;         /* a reader died holding; no writer told yet */
  int violated;
  const char *violation_kind;
  char violation[1024];
  int verbose; /* print every step (the replay of a counterexample) */
  char note[IL_NOTE_MAX]; /* what the step did */
  size_t note_len;
  char events[IL_NOTE_MAX]; /* the settles it caused */
  size_t events_len;
  /* Exploration. */
  il_choice_t stack[IL_MAX_DEPTH];
  int depth;
  int preemption_bound;
  int depth_bound;
  unsigned long executions;
  unsigned long truncated;
  /* The shortest violating schedule of each kind of violation (the format
   * of its message), in the order they were found. */
  struct {
    const char *kind;
    int len;
    il_choice_t schedule[IL_MAX_DEPTH];
  } found[IL_MAX_KINDS];
  int nfound;
  unsigned long violations;
} il;

#define IL_WORD ((_Atomic int32_t *)&il.word)

/* Appends to `buf` (a step's description, or the settles it caused). */
static void
il_vappend(char *buf, size_t *len, const char *fmt, va_list ap)
{
  int k;

  if (*len >= IL_NOTE_MAX - 1)
    return;
  k = vsnprintf(buf + *len, IL_NOTE_MAX - *len, fmt, ap);
  if (k > 0)
    *len += (size_t)k;
  if (*len > IL_NOTE_MAX - 1)
    *len = IL_NOTE_MAX - 1;
}

static void
il_note(const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  il_vappend(il.note, &il.note_len, fmt, ap);
  va_end(ap);
}

static void
il_event(const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  il_vappend(il.events, &il.events_len, fmt, ap);
  va_end(ap);
}

/* Records the first violation of an execution; the execution stops after
 * the step that found it. */
static void
il_violation(const char *fmt, ...)
{
  va_list ap;

  if (il.violated)
    return;
  il.violated = 1;
  il.violation_kind = fmt;
  va_start(ap, fmt);
  vsnprintf(il.violation, sizeof(il.violation), fmt, ap);
  va_end(ap);
}

static il_thread_t *
il_thread_of_id(uint32_t id)
{
  for (int i = 0; i < il.nthreads; i++)
    if (il.t[i].id == id)
      return &il.t[i];
  return NULL;
}

/* A thread's id as printed: T<n>, J for the janitor, or the number. */
static const char *
il_name(uint32_t id, char *buf, size_t size)
{
  il_thread_t *t = il_thread_of_id(id);

  if (id == IL_JANITOR)
    snprintf(buf, size, "J");
  else if (t != NULL)
    snprintf(buf, size, "T%d%s", t->n, t->alive ? "" : "(dead)");
  else
    snprintf(buf, size, "#%u", id);
  return buf;
}

/* The word as printed, e.g. "T1|waiters|woken" or "R:2|waiters". */
static const char *
il_word_str(int32_t v, char *buf, size_t size)
{
  char who[32];
  size_t k = 0;

  if (v == 0) {
    snprintf(buf, size, "0");
    return buf;
  }
  if (il.sc->kind == IL_WORD_SEM) {
    k += (size_t)snprintf(buf + k, size - k, "P:%d", (int)(v & TL_SEM_MASK));
    if (v & TL_SEM_RESERVED)
      k += (size_t)snprintf(buf + k, size - k, "|reserved");
  } else if (il.sc->kind == IL_WORD_LOCK) {
    uint32_t owner = (uint32_t)(v & TL_LOCK_ID_MASK);
    k += (size_t)snprintf(buf + k, size - k, "%s",
                          owner == 0 ? "free"
                                     : il_name(owner, who, sizeof(who)));
    if (v & TL_LOCK_OWNER_DIED)
      k += (size_t)snprintf(buf + k, size - k, "|owner-died");
  } else if (v & TL_RW_WRITER) {
    k +=
        (size_t)snprintf(buf + k, size - k, "W:%s",
                         il_name((uint32_t)(v & TL_RW_MASK), who, sizeof(who)));
  } else if ((v & TL_RW_MASK) != 0) {
    k += (size_t)snprintf(buf + k, size - k, "R:%d", (int)(v & TL_RW_MASK));
  } else {
    k += (size_t)snprintf(buf + k, size - k, "free");
  }
  if ((v & TL_GATE_WAITERS) && k < size)
    k += (size_t)snprintf(buf + k, size - k, "|waiters");
  if ((v & TL_LOCK_WOKEN) && k < size)
    snprintf(buf + k, size - k, "|woken");
  return buf;
}

static const char *
il_result_str(int r)
{
  switch (r) {
  case TL_RESULT_PENDING:
    return "PENDING";
  case TL_RESULT_ACQUIRED:
    return "ACQUIRED";
  case TL_RESULT_OWNER_DIED:
    return "OWNER_DIED";
  case TL_RESULT_TIMED_OUT:
    return "TIMED_OUT";
  case TL_EDEADLK:
    return "EDEADLK";
  case TL_ENOTOWNER:
    return "ENOTOWNER";
  case 0:
    return "0";
  default:
    return "?";
  }
}

static const char *
il_gate_str(int gate)
{
  return gate == TL_GATE_READ    ? "read"
         : gate == TL_GATE_WRITE ? "write"
         : gate == TL_GATE_SEM   ? "semaphore"
                                 : "lock";
}

static int
il_exclusive(int gate)
{
  return gate == TL_GATE_LOCK || gate == TL_GATE_WRITE;
}

/* Whether the thread's request was woken to compete and has not tried yet
 * (it stays queued, WOKEN, until it does): it owes the word its LOCK_WOKEN
 * bit. A woken request may be granted before it tries. */
static int
il_woken(const il_thread_t *t)
{
  return t->req == IL_REQ_SETTLED && atomic_load(&t->w.state) == TL_WOKEN;
}

static int il_starving(const il_thread_t *t);
static void il_check_hand_off(const il_thread_t *t);
static void il_check_bypass(const il_thread_t *t, int from_queue);

/* What a thread holds: its delivered holds and a grant on its way to it. */
static int
il_excl_of(const il_thread_t *t)
{
  return t->excl + (t->req == IL_REQ_SETTLED && t->w.granted &&
                    il_exclusive(t->req_gate));
}

static int
il_reads_of(const il_thread_t *t)
{
  return t->reads + (t->req == IL_REQ_SETTLED && t->w.granted &&
                     t->req_gate == TL_GATE_READ);
}

static void il_sem_hold(il_thread_t *t, int k, int from_queue);

/* Counts a hold the thread was just given (ACQUIRED or OWNER_DIED): `k`
 * permits of a semaphore, which came `from_queue` (a queued request's
 * grant) or were taken by a new request. A writer that takes the word
 * after a reader died holding it must be told. */
static void
il_hold(il_thread_t *t, int gate, int owner_died, int k, int from_queue)
{
  if (gate == TL_GATE_SEM) {
    il_sem_hold(t, k, from_queue);
    return;
  }
  il_check_bypass(t, from_queue);
  if (owner_died)
    il.dead_owner_reported = 1;
  if (il_exclusive(gate) && il.news_owed) {
    il.news_owed = 0;
    if (!owner_died)
      il_violation("T%d took the %s after a grant with OWNER_DIED died "
                   "unused, without OWNER_DIED",
                   t->n, gate == TL_GATE_LOCK ? "lock" : "write lock");
  }
  if (gate == TL_GATE_WRITE && il.reader_died) {
    il.reader_died = 0;
    if (!owner_died)
      il_violation("T%d took the write lock after a reader died holding a "
                   "read lock, without OWNER_DIED",
                   t->n);
  }
  if (il_exclusive(gate))
    t->excl++;
  else
    t->reads++;
}

/* ====================================================================== */
/* THE PROTOCOL AS JAVASCRIPT AND THE GLUE SEE IT.
 *
 * Everything that depends on the protocol's details is in this section:
 * the compare-exchange fast paths that mirror lib/LockWord.js,
 * lib/RWLock.js and lib/Semaphore.js, and how a simulated thread talks to the
 * core (what src/ready.c, src/binding.c and src/env.c do for a request: settle,
 * deliver or retry, cancel, abandon). A change of the protocol changes this
 * section and leaves the invariants and the explorer alone. Each function
 * is one atomic step of the model. */

/* The settle callback, under the bucket lock inside some thread's core
 * call: the request is woken or granted, and its thread may now run it. */
static void
il_settle(tl_waiter_t *w)
{
  il_thread_t *t = (il_thread_t *)w;

  if (t->req == IL_REQ_NONE) {
    il_violation("T%d's request was settled (%s) after it was withdrawn or "
                 "had ended",
                 t->n, w->granted ? "granted" : "woken");
    return;
  }
  if (w->granted && il.releasing && il_exclusive(t->req_gate))
    il_check_hand_off(t);
  if (!w->granted)
    t->came = 0;
  t->req = IL_REQ_SETTLED;
  if (w->granted && w->owner_died)
    il.dead_owner_reported = 1;
  il_event("; T%d %s%s", t->n, w->granted ? "granted" : "woken",
           w->granted && w->owner_died ? " (owner died)" : "");
}

/* The owner field value of thread `t` for an exclusive gate. */
static int32_t
il_own(const il_thread_t *t, int gate)
{
  return gate == TL_GATE_LOCK ? (int32_t)t->id
                              : (int32_t)(TL_RW_WRITER | t->id);
}

static int
il_word_died(int gate)
{
  int32_t v = atomic_load(IL_WORD);

  return (v & (gate == TL_GATE_LOCK ? TL_LOCK_OWNER_DIED : TL_RW_OWNER_DIED)) !=
         0;
}

static int32_t
il_owner_mask(int gate)
{
  return gate == TL_GATE_LOCK ? TL_LOCK_ID_MASK : TL_RW_WRITER | TL_RW_MASK;
}

/* lib/LockWord.js fast(): one compare-exchange on the word as it is now.
 * (LockWord.js tries first a compare-exchange from the free word it saw
 * last, `#seen`, deciding for that value: when it succeeds it is this step
 * for a word that held that value, and when it fails it changed nothing;
 * so this one step covers both. The same holds for unlock() below.)
 * Returns 1 when it took the word. `barge`: a lock word or a writer may
 * take a word without an owner while waiters are queued (RWLock: unless
 * the thread's own write request waits). Readers have no fast path: the
 * core counts them per thread (src/rwlock.c). */
static int
il_js_fast_acquire(il_thread_t *t, int gate, int barge)
{
  int32_t v = atomic_load(IL_WORD);

  if (gate == TL_GATE_READ)
    return 0;
  if (v == 0)
    return atomic_compare_exchange_strong(IL_WORD, &v, il_own(t, gate));
  if (barge && (v & il_owner_mask(gate)) == 0)
    return atomic_compare_exchange_strong(IL_WORD, &v, v | il_own(t, gate));
  return 0;
}

/* lib/LockWord.js #inSlice: counts a grant of the thread's slice; 0 once
 * it is over (`slice_over`: the script says so; a tick since the slice
 * began: POLICY_STARVING_NS is longer than POLICY_SLICE_NS). */
static int
il_in_slice(il_thread_t *t, int slice_over)
{
  if (t->slice_ticks < 0 && !slice_over) {
    t->slice_ticks = il.ticks;
    return 1;
  }
  if (!slice_over && t->slice_ticks == il.ticks)
    return 1;
  t->slice_ticks = -1;
  return 0;
}

/* lib/LockWord.js #noneStarves: the oldest waiter is known not to starve
 * yet, from what the last core release told (the clock is not advanced). */
static int
il_none_starves(const il_thread_t *t)
{
  return il_clock < t->starves_at;
}

/* The holder's shortcut, as lib/LockWord.js reads it: the same constants
 * (waiters.h, exported to JavaScript as binding.constants). */
static int32_t
il_shortcut_mask(int gate)
{
  return gate == TL_GATE_LOCK ? TL_LOCK_SHORTCUT_MASK : TL_WRITE_SHORTCUT_MASK;
}

/* lib/LockWord.js unlock(): the compare-exchange release of a word that is
 * exactly the thread's own id; or, within the slice, of a word with a
 * woken request on its way while nobody starves (what the core would do).
 * Returns 1 when it freed the word; otherwise 0 and the amount of the core
 * release that must follow (with LOCK_HANDOFF when the slice is over).
 * Readers always release through the core. */
static int
il_js_release(il_thread_t *t, int gate, int slice_over, uint32_t *amount)
{
  int32_t v = atomic_load(IL_WORD);
  int in_slice;

  if (gate == TL_GATE_READ) {
    *amount = 0;
    return 0;
  }
  if (v == il_own(t, gate)) {
    t->slice_ticks = -1;
    return atomic_compare_exchange_strong(IL_WORD, &v, 0);
  }
  in_slice = il_in_slice(t, slice_over);
  *amount = TL_LOCK_BARGE | (in_slice ? 0 : TL_LOCK_HANDOFF);
  if (in_slice && (v & il_shortcut_mask(gate)) == TL_SHORTCUT_IF &&
      il_none_starves(t)) {
    int starving = il_starving(t);
    if (atomic_compare_exchange_strong(IL_WORD, &v, v & ~il_owner_mask(gate))) {
      if (starving)
        il_violation("T%d freed the word with a compare-exchange while "
                     "another request had waited 1 ms",
                     t->n);
      return 1;
    }
  }
  return 0;
}

/* lib/Semaphore.js #fast: takes `k` permits with one compare-exchange
 * while they are available and not reserved, queued requests or not. */
static int
il_js_sem_acquire(int k)
{
  int32_t v = atomic_load(IL_WORD);

  if ((v & TL_SEM_RESERVED) || (v & TL_SEM_MASK) < k)
    return 0;
  return atomic_compare_exchange_strong(IL_WORD, &v, v - k);
}

static il_thread_t *il_sem_first(void);
static int il_sem_starving(const il_thread_t *t);

/* lib/Semaphore.js release(): one compare-exchange while nobody is queued
 * or woken, or while the first request is woken and on its way with
 * nothing reserved and nobody starving, as the core last told the thread
 * (src/sem.c, the woken shortcut, S6); otherwise the core. */
static int
il_js_sem_release(il_thread_t *t, int k)
{
  int32_t v = atomic_load(IL_WORD);
  il_thread_t *first;

  if ((v & (TL_GATE_WAITERS | TL_SEM_WOKEN)) &&
      ((v & (TL_SEM_WOKEN | TL_SEM_RESERVED)) != TL_SEM_WOKEN ||
       !il_none_starves(t)))
    return 0;
  first = il_sem_first();
  if (!atomic_compare_exchange_strong(IL_WORD, &v, v + k))
    return 0;
  if ((v & TL_GATE_WAITERS) && first != NULL && il_sem_starving(first))
    il_violation("T%d added %d permit(s) with a compare-exchange while T%d's "
                 "request had waited 1 ms",
                 t->n, k, first->n);
  return 1;
}

/* The amount of a core request: the permits of a semaphore request (`k`);
 * the default (barging) policy for locks and writers, except a writer whose
 * own write request waits (lib/RWLock.js #writeFlags). */
static uint32_t
il_request_amount(const il_thread_t *t, int gate, int k)
{
  if (gate == TL_GATE_SEM)
    return (uint32_t)k;
  if (gate == TL_GATE_READ)
    return 0;
  if (gate == TL_GATE_WRITE && t->req != IL_REQ_NONE &&
      t->req_gate == TL_GATE_WRITE)
    return 0;
  return TL_LOCK_BARGE;
}

/* Writer preference: a new read request (`before`: just before its core
 * call, to note whether another thread's write request waits; then after
 * it took a read lock) never passes a queued or woken writer. */
static void
il_check_new_reader(const il_thread_t *t, int gate, int before)
{
  static int writer_waits;

  if (gate != TL_GATE_READ)
    return;
  if (before) {
    writer_waits = 0;
    for (int i = 0; i < il.nthreads; i++) {
      const il_thread_t *o = &il.t[i];
      if (o != t && o->alive && o->req_gate == TL_GATE_WRITE &&
          (o->req == IL_REQ_QUEUED || il_woken(o)))
        writer_waits = o->n;
    }
    return;
  }
  if (writer_waits)
    il_violation("T%d's new read request took a read lock while T%d's write "
                 "request waited: no new reader passes a queued writer",
                 t->n, writer_waits);
}

/* The async request after a failed fast path: tl_gate_acquire_async. */
static void
il_core_request(il_thread_t *t, int gate, int k)
{
  uint32_t amount = il_request_amount(t, gate, k);
  int early = t->early; /* only its first request */
  int r;

  t->early = 0;
  t->bypassed = 0;
  tl_waiter_init_async(&t->w, il_settle);
  /* The core tells a parked thread's request from an event loop's by this
   * field alone (lock.c, I7); the checker delivers both when it likes. */
  t->w.on_loop = (uint8_t)!t->parked;
  t->came = 0;
  t->req = IL_REQ_CALLING;
  t->req_gate = gate;
  t->req_ticks = early ? 0 : il.ticks;
  t->starve_seen = 0;
  il_check_new_reader(t, gate, 1);
  r = tl_gate_acquire_async_at(&t->w, &il.word, gate, t->id, amount,
                               early ? il_clock - IL_CLOCK_START_NS : 0);
  if (r == TL_RESULT_ACQUIRED || r == TL_RESULT_OWNER_DIED)
    il_check_new_reader(t, gate, 0);
  il_note("core acquire_async%s -> %s", early ? " (made at the start)" : "",
          il_result_str(r));
  if (r == TL_RESULT_ACQUIRED || r == TL_RESULT_OWNER_DIED) {
    t->req = IL_REQ_NONE;
    il_hold(t, gate, r == TL_RESULT_OWNER_DIED, k, 0);
  } else if (r == TL_RESULT_PENDING) {
    /* The order of first arrival: a request made at the start comes
     * before every other (il.seq starts at 1). */
    t->req_seq = early ? 0 : il.seq++;
    if (t->req == IL_REQ_CALLING)
      t->req = IL_REQ_QUEUED;
  } else {
    t->req = IL_REQ_NONE;
    il_violation("T%d's %s request returned %s", t->n, il_gate_str(gate),
                 il_result_str(r));
  }
}

/* The settle reaches the thread (src/ready.c): a grant is the thread's; a
 * woken request competes (tl_gate_retry_async), which also finds a grant
 * that a release made to it while it was on its way. */
static void
il_core_deliver(il_thread_t *t)
{
  int r;

  if (t->w.granted) {
    il_note("granted %s%s", il_gate_str(t->req_gate),
            t->w.owner_died ? " (owner died)" : "");
    t->req = IL_REQ_NONE;
    il_hold(t, t->req_gate, t->w.owner_died, (int)t->w.amount, 1);
    return;
  }
  t->req = IL_REQ_CALLING;
  /* tl_gate_retry_async in its steps: a request that came, found the word
   * taken and is present now is watched by its thread, and other threads'
   * steps run before the watch ends (il_core_watch_end). */
  if (tl__retry_begin(&t->w, &r)) {
    il_note("woken: core retry_async -> present, watching");
    t->req = IL_REQ_QUEUED;
    t->came = 1;
    t->cont = IL_CONT_WATCH;
    return;
  }
  il_note("woken: core retry_async -> %s", il_result_str(r));
  if (r == TL_RESULT_ACQUIRED || r == TL_RESULT_OWNER_DIED) {
    t->req = IL_REQ_NONE;
    il_hold(t, t->req_gate, r == TL_RESULT_OWNER_DIED, (int)t->w.amount, 1);
  } else if (r == TL_RESULT_PENDING) {
    if (t->req == IL_REQ_CALLING) {
      t->req = IL_REQ_QUEUED;
      t->came = 1;
    }
  } else {
    t->req = IL_REQ_NONE;
    il_violation("T%d's retry returned %s", t->n, il_result_str(r));
  }
}

/* The end of a present request's watch (tl__retry_end): a grant that came
 * during it is taken up here (the settle callback left it to the watch,
 * src/ready.c), a wake competes once more, and a request still asleep
 * goes back to its loop, where the next settle reaches it. */
static void
il_core_watch_end(il_thread_t *t)
{
  int r = tl__retry_end(&t->w);

  il_note("T%d: the watch ends -> %s", t->n, il_result_str(r));
  if (r == TL_RESULT_ACQUIRED || r == TL_RESULT_OWNER_DIED) {
    t->req = IL_REQ_NONE;
    il_hold(t, t->req_gate, r == TL_RESULT_OWNER_DIED, (int)t->w.amount, 1);
  } else if (r == TL_RESULT_PENDING) {
    t->req = IL_REQ_QUEUED;
    t->came = t->w.present;
  } else {
    t->req = IL_REQ_NONE;
    il_violation("T%d's watch ended with %s", t->n, il_result_str(r));
  }
}

/* A timeout or an abort of the thread's request (src/ready.c's timer,
 * src/binding.c's abort): tl_cancel. A request that was not granted must be
 * withdrawn, and nothing may be granted to it later; a granted one stays
 * granted (a late abort is ignored, as Node's APIs do). */
static void
il_core_cancel(il_thread_t *t, tl_state_t why)
{
  const char *what = why == TL_TIMED_OUT ? "timeout" : "abort";
  il_req_t was = t->req;
  int granted = was == IL_REQ_SETTLED && t->w.granted;
  int r;

  if (was == IL_REQ_NONE) {
    il_note("no request in the core");
    return;
  }
  r = tl_cancel(&t->w, why);
  il_note("core cancel -> %d%s", r, r ? "" : granted ? ", too late" : "");
  if (r) {
    t->req = IL_REQ_NONE;
    if (granted)
      il_violation("tl_cancel withdrew T%d's request after granting it", t->n);
    return;
  }
  if (!granted)
    il_violation("the %s of T%d's %s request was ignored: tl_cancel "
                 "returned 0 though the request was %s, not granted, so it "
                 "will be retried and granted later",
                 what, t->n, il_gate_str(t->req_gate),
                 was == IL_REQ_SETTLED ? "woken" : "queued");
}

/* A sync request with timeout 0 (tryLock, tryAcquireWrite, or the probe of
 * a blocking acquire): tl_gate_acquire. While the thread's own request is
 * queued or woken on the word it must fail with EDEADLK, since a blocking
 * wait could only be ended by that very thread. */
static void
il_core_try(il_thread_t *t, int gate, int k)
{
  int own_waits = t->req == IL_REQ_QUEUED || il_woken(t);
  int r;

  il_check_new_reader(t, gate, 1);
  r = tl_gate_acquire(&il.word, gate, t->id, il_request_amount(t, gate, k), 0,
                      NULL);
  if (r == TL_RESULT_ACQUIRED || r == TL_RESULT_OWNER_DIED)
    il_check_new_reader(t, gate, 0);

  il_note("core acquire (sync, timeout 0) -> %s", il_result_str(r));
  if (r == TL_RESULT_ACQUIRED || r == TL_RESULT_OWNER_DIED)
    il_hold(t, gate, r == TL_RESULT_OWNER_DIED, k, 0);
  /* Permits have no owner: a thread's own queued request is no reason to
   * refuse it more. */
  if (gate == TL_GATE_SEM)
    return;
  if (own_waits && r != TL_EDEADLK)
    il_violation("a sync %s request of T%d returned %s while T%d's own %s "
                 "request is %s: expected EDEADLK",
                 il_gate_str(gate), t->n, il_result_str(r), t->n,
                 il_gate_str(t->req_gate),
                 t->req == IL_REQ_QUEUED ? "queued" : "woken");
}

/* Whether the thread of `o`'s request can take up a grant at once (lock.c,
 * I7): a parked thread's, or an event loop's that came to try and sleeps
 * again. An event loop's request asleep since it queued, or woken and on
 * its way, may not run for hundreds of milliseconds. */
static int
il_runs_at_once(const il_thread_t *o)
{
  return o->alive &&
         ((o->parked && (o->req == IL_REQ_QUEUED || il_woken(o))) ||
          (o->came && o->req == IL_REQ_QUEUED) ||
          (il.releasing && o == il.releaser && o->req == IL_REQ_QUEUED));
}

/* Whether another thread's request that a release must serve has waited
 * TL_POLICY_STARVING_NS: a tick passed since it queued, it is still queued
 * or woken, and its thread can take the lock up at once. */
static int
il_starving(const il_thread_t *t)
{
  for (int i = 0; i < il.nthreads; i++) {
    const il_thread_t *o = &il.t[i];
    if (o != t && il_runs_at_once(o) && o->req_ticks < il.ticks)
      return 1;
  }
  return 0;
}

/* A release handed the lock or write lock to `t` (inside the release, from
 * the settle callback). I7: never to an event loop's request that is not
 * there to take it up (its loop may be busy for long, and the lock would
 * sit held meanwhile); I5: to the oldest request that can take it up. */
static void
il_check_hand_off(const il_thread_t *t)
{
  if (!t->parked && !t->came && t != il.releaser)
    il_violation("a release handed the %s to T%d's event-loop request, "
                 "whose thread has not come to take it (woken and on its "
                 "way, or asleep since it queued): it would sit held for as "
                 "long as that loop is busy",
                 il_gate_str(t->req_gate), t->n);
  for (int i = 0; i < il.nthreads; i++) {
    const il_thread_t *o = &il.t[i];
    if (o != t && il_runs_at_once(o) && il_exclusive(o->req_gate) &&
        o->req_seq < t->req_seq)
      il_violation("a release handed the %s to T%d while T%d, queued "
                   "before it, could take it up at once: a hand-off goes "
                   "to the oldest (I5)",
                   il_gate_str(t->req_gate), t->n, o->n);
  }
}

/* `t` begins a hold (lock, write or read lock). Every other request that
 * had starved and could take the lock up is passed over once more, unless
 * `t`'s was granted from the queue and is older (I5): once starving, a
 * request is passed over at most once (a barger may take a word that was
 * free when it began to starve; the next release serves it). */
static void
il_check_bypass(const il_thread_t *t, int from_queue)
{
  for (int i = 0; i < il.nthreads; i++) {
    il_thread_t *o = &il.t[i];
    if (o == t || !il_runs_at_once(o) || !il_exclusive(o->req_gate) ||
        o->req_ticks >= il.ticks)
      continue;
    if (from_queue && t->req_seq < o->req_seq)
      continue;
    if (++o->bypassed > 1)
      il_violation("T%d's %s request had waited 1 ms and could take the "
                   "lock up, and was passed over %d times (T%d is the "
                   "last): once starving, at most once",
                   o->n, il_gate_str(o->req_gate), o->bypassed, t->n);
  }
}

/* The bound the README promises: a release (of the lock or a write lock,
 * also one that would keep it for the thread's own next request) while a
 * waiter starves hands the lock over; it never frees it or keeps it. */
static void
il_check_starving_release(il_thread_t *t, int gate, int starving, int kept)
{
  int32_t v = atomic_load(IL_WORD);
  int free = gate == TL_GATE_LOCK
                 ? (v & TL_LOCK_ID_MASK) == 0
                 : !(v & TL_RW_WRITER) && (v & TL_RW_MASK) == 0;

  if (starving && (kept || free))
    il_violation("T%d's release %s the lock while another request had "
                 "waited 1 ms: it must hand it over",
                 t->n, kept ? "kept" : "freed");
}

/* A semaphore release through the core (src/sem.c). When the first request
 * has starved, the release grants it or reserves the permits for it; from
 * then on no new request may take permits before it (il_sem_hold). */
static void
il_core_sem_release(il_thread_t *t, int k)
{
  il_thread_t *first = il_sem_first();
  int starving = first != NULL && il_sem_starving(first);
  int64_t left_ns = -1;
  int r = tl_sem_release_ex(&il.word, (uint32_t)k, &left_ns);
  char ws[96];

  t->starves_at = left_ns >= 0 ? il_clock + (uint64_t)left_ns : 0;
  il_note("core release -> %s", il_result_str(r));
  if (r != 0)
    il_violation("T%d's semaphore release returned %s", t->n, il_result_str(r));
  if (!starving)
    return;
  if (first->req == IL_REQ_SETTLED && first->w.granted)
    return;
  if (!(atomic_load(IL_WORD) & TL_SEM_RESERVED))
    il_violation("a release while T%d's request for %u starved neither "
                 "granted it nor reserved the permits for it (word %s)",
                 first->n, first->w.amount,
                 il_word_str(atomic_load(IL_WORD), ws, sizeof(ws)));
  first->starve_seen = 1;
}

static void
il_core_release(il_thread_t *t, int gate, uint32_t amount)
{
  int starving;

  if (gate == TL_GATE_SEM) {
    il_core_sem_release(t, (int)amount);
    return;
  }
  starving = gate != TL_GATE_READ && il_starving(t);
  int64_t left_ns = -1;
  int r;

  il.releasing = gate != TL_GATE_READ;
  il.releaser = t;
  r = gate == TL_GATE_READ
          ? tl_gate_release(&il.word, gate, t->id, amount)
          : tl_lock_release_ex(&il.word, gate, t->id, amount, &left_ns);
  il.releasing = 0;

  t->starves_at = left_ns >= 0 ? il_clock + (uint64_t)left_ns : 0;
  il_note("core release%s -> %s", amount & TL_LOCK_HANDOFF ? " (handoff)" : "",
          il_result_str(r));
  if (r != 0)
    il_violation("T%d's %s release returned %s", t->n, il_gate_str(gate),
                 il_result_str(r));
  il_check_starving_release(t, gate, starving, 0);
}

/* Thread death, as src/env.c tears an env down: each request is cancelled,
 * or abandoned if a notify reached it first; then the id is unregistered,
 * which hands a lock the thread still holds to its first waiter. */
static void
il_core_die(il_thread_t *t)
{
  if (t->req != IL_REQ_NONE) {
    int r = tl_cancel(&t->w, TL_CANCELLED);
    il_note("core cancel -> %d, ", r);
    if (!r) {
      tl_gate_abandon(&t->w);
      il_note("abandon, ");
    }
    t->req = IL_REQ_NONE;
  }
  t->alive = 0;
  /* Permits have no owner: those the thread held are lost. */
  il.lost += t->permits;
  t->permits = 0;
  /* The core gives a dead reader's read locks back (src/rwlock.c). */
  if (t->reads != 0)
    il.reader_died = 1;
  t->reads = 0;
  tl_thread_unregister(t->id);
  il.registered[t->id] = 0;
  il_note("unregister");
}

/* END OF THE PROTOCOL SECTION. */
/* ====================================================================== */

/* Whether the thread's semaphore request is linked in the core's queue:
 * asleep, or woken and not granted yet. */
static int
il_sem_linked(const il_thread_t *t)
{
  return t->req == IL_REQ_QUEUED || il_woken(t);
}

/* The first request in the semaphore's queue: the linked one that queued
 * first (a woken request that sleeps again keeps its place). */
static il_thread_t *
il_sem_first(void)
{
  il_thread_t *first = NULL;

  for (int i = 0; i < il.nthreads; i++) {
    il_thread_t *t = &il.t[i];
    if (il_sem_linked(t) && (first == NULL || t->req_seq < first->req_seq))
      first = t;
  }
  return first;
}

/* Whether the request has waited TL_POLICY_STARVING_NS: a tick since it
 * queued, or two half steps (by the core's clock, from when it queued:
 * every later reading of the clock is larger, so the core, which decides
 * after the checker looked, never sees it younger). */
static int
il_sem_starving(const il_thread_t *t)
{
  return t->req_ticks < il.ticks ||
         il_clock - t->w.since >= TL_POLICY_STARVING_NS;
}

/* Counts `k` permits the thread was just given. A new request (not
 * `from_queue`) must not take permits while a request that a release found
 * starving at the head still waits: they were reserved for it. */
static void
il_sem_hold(il_thread_t *t, int k, int from_queue)
{
  t->permits += k;
  if (from_queue)
    return;
  for (int i = 0; i < il.nthreads; i++) {
    il_thread_t *o = &il.t[i];
    if (o != t && il_sem_linked(o) && o->starve_seen)
      il_violation("T%d's new request took %d permit(s) ahead of T%d's "
                   "request for %u, which starved at the head when permits "
                   "were released",
                   t->n, k, o->n, o->w.amount);
  }
}

/* The semaphore's invariants, after every step (see the top of the file). */
static void
il_check_sem_state(void)
{
  int32_t v = atomic_load(IL_WORD);
  int avail = (int)(v & TL_SEM_MASK);
  int held = 0, linked = 0, woken = 0;
  il_thread_t *first = il_sem_first();
  char ws[96];

  il_word_str(v, ws, sizeof(ws));
  for (int i = 0; i < il.nthreads; i++) {
    il_thread_t *t = &il.t[i];
    held += t->permits;
    if (t->req == IL_REQ_SETTLED && t->w.granted)
      held += (int)t->w.amount;
    linked += il_sem_linked(t);
    woken += il_woken(t);
  }
  if (held + il.lost + avail != il.sc->permits)
    il_violation("%d permit(s) held, %d lost with dead threads and %d "
                 "available, of %d (%s)",
                 held, il.lost, avail, il.sc->permits, ws);
  if (woken > 1)
    il_violation("%d requests are woken at once", woken);
  if (woken == 0 && (v & TL_SEM_WOKEN))
    il_violation("SEM_WOKEN is set but no request is woken: the bit was "
                 "never given back, so releases wake nobody (%s)",
                 ws);
  if (woken > 0 && !(v & TL_SEM_WOKEN))
    il_violation("a request is woken but SEM_WOKEN is clear (%s)", ws);
  if (woken > 0 && !il_woken(first))
    il_violation("T%d's woken request is not the first in the queue (%s)",
                 first->n, ws);
  if ((linked > 0) != ((v & TL_GATE_WAITERS) != 0))
    il_violation("%d request(s) queued but GATE_WAITERS is %s (%s)", linked,
                 (v & TL_GATE_WAITERS) ? "set" : "clear", ws);
  if (first != NULL && first->req == IL_REQ_QUEUED &&
      avail >= (int)first->w.amount)
    il_violation("stall: T%d's request for %u sleeps first in the queue "
                 "while %d permit(s) are free and nobody is woken (%s)",
                 first->n, first->w.amount, avail, ws);
  if ((v & TL_SEM_RESERVED) && (first == NULL || !il_sem_starving(first) ||
                                avail >= (int)first->w.amount))
    il_violation("SEM_RESERVED is set without a starving first request that "
                 "does not fit (%s)",
                 ws);
}

/* The invariants, after every step (see the top of the file). */
static void
il_check_state(void)
{
  int32_t v = atomic_load(IL_WORD);
  int lock = il.sc->kind == IL_WORD_LOCK;
  uint32_t owner = lock                 ? (uint32_t)(v & TL_LOCK_ID_MASK)
                   : (v & TL_RW_WRITER) ? (uint32_t)(v & TL_RW_MASK)
                                        : 0;
  int word_readers = lock || (v & TL_RW_WRITER) ? 0 : (int)(v & TL_RW_MASK);
  il_thread_t *holder = NULL;
  int reads = 0, woken = 0, queued = 0;
  char a[32], ws[96];

  if (il.sc->kind == IL_WORD_SEM) {
    il_check_sem_state();
    return;
  }

  /* A dead holder stays in the word until somebody takes the lock over;
   * that must be said (OWNER_DIED to the new owner). A grant on its way to
   * a woken request says it in the request (no second settle). */
  for (int i = 0; i < il.nthreads; i++) {
    il_thread_t *t = &il.t[i];
    if (t->req == IL_REQ_SETTLED && t->w.granted && t->w.owner_died)
      il.dead_owner_reported = 1;
  }
  for (int i = 0; i < il.nthreads; i++) {
    il_thread_t *t = &il.t[i];
    if (!t->alive && t->excl && owner != t->id) {
      t->excl = 0;
      if (!il.dead_owner_reported)
        il_violation("T%d died holding the %s, and its hold was taken over "
                     "without OWNER_DIED (word %s)",
                     t->n, lock ? "lock" : "write lock",
                     il_word_str(v, ws, sizeof(ws)));
    }
  }
  for (int i = 0; i < il.nthreads; i++) {
    il_thread_t *t = &il.t[i];
    if (il_excl_of(t) > 1)
      il_violation("T%d holds the %s twice", t->n,
                   lock ? "lock" : "write lock");
    if (il_excl_of(t)) {
      if (holder != NULL)
        il_violation("two holders: T%d and T%d", holder->n, t->n);
      holder = t;
    }
    reads += il_reads_of(t);
    woken += il_woken(t);
    queued += t->req == IL_REQ_QUEUED;
  }
  il_word_str(v, ws, sizeof(ws));
  if (holder != NULL && reads != 0)
    il_violation("T%d holds the write lock beside %d reader(s)", holder->n,
                 reads);
  if (holder != NULL && owner != holder->id)
    il_violation("T%d holds the %s but the word says %s", holder->n,
                 lock ? "lock" : "write lock", ws);
  if (holder == NULL && owner != 0)
    il_violation("the word names %s as the owner, who does not hold it (%s)",
                 il_name(owner, a, sizeof(a)), ws);
  if (!lock && !(v & TL_RW_WRITER) && word_readers != reads)
    il_violation("%d reader(s) hold the lock but the word counts %d (%s)",
                 reads, word_readers, ws);
  if (woken == 0 && (v & TL_LOCK_WOKEN))
    il_violation("LOCK_WOKEN is set but no request is woken: the bit was "
                 "never given back, so releases wake nobody (%s)",
                 ws);
  if (woken > 0 && !(v & TL_LOCK_WOKEN))
    il_violation("a request is woken but LOCK_WOKEN is clear: the next "
                 "release will wake another waiter and the fast paths see "
                 "nobody on the way (%s)",
                 ws);
  if (woken > 1)
    il_violation("%d requests are woken at once", woken);
  /* A reader batch is let in together: no read request sleeps while no
   * writer holds the word and no write request queued before it waits. */
  if (!lock && !(v & TL_RW_WRITER)) {
    for (int i = 0; i < il.nthreads; i++) {
      const il_thread_t *r = &il.t[i];
      int writer_ahead = 0;
      if (!r->alive || r->req != IL_REQ_QUEUED || r->req_gate != TL_GATE_READ)
        continue;
      for (int j = 0; j < il.nthreads; j++) {
        const il_thread_t *o = &il.t[j];
        if (o->alive && o->req_gate == TL_GATE_WRITE &&
            (o->req == IL_REQ_QUEUED || il_woken(o)) && o->req_seq < r->req_seq)
          writer_ahead = 1;
      }
      if (!writer_ahead)
        il_violation("T%d's read request sleeps though no writer holds the "
                     "lock or waits before it (%s): the readers at the head "
                     "are let in together",
                     r->n, ws);
    }
  }
  if (owner == 0 && word_readers == 0 && queued > 0 && woken == 0)
    il_violation("the word is free, %d request(s) sleep on it and none is "
                 "woken to take it (%s)",
                 queued, ws);
}

/* At quiescence (no simulated thread can move): no request may still
 * sleep, since nobody is left to wake it. */
static void
il_check_quiescent(void)
{
  char ws[96];

  /* A semaphore request may wait for good for permits that died with a
   * thread, or that a thread keeps; a stall with free permits is caught at
   * every step. */
  if (il.sc->kind == IL_WORD_SEM) {
    int kept = il.lost;
    for (int i = 0; i < il.nthreads; i++)
      kept += il.t[i].alive ? il.t[i].permits : 0;
    if (kept > 0)
      return;
  }

  for (int i = 0; i < il.nthreads; i++) {
    il_thread_t *t = &il.t[i];
    if (t->req == IL_REQ_QUEUED) {
      il_violation("stall: T%d's %s request sleeps for good; nobody is left "
                   "to wake it (word %s)",
                   t->n, il_gate_str(t->req_gate),
                   il_word_str(atomic_load(IL_WORD), ws, sizeof(ws)));
      return;
    }
  }
}

/* ---------------------------------------------------------------------- */
/* Moves. */

static int
il_waits_for_request(il_op_kind_t k)
{
  return k == IL_ACQ || k == IL_REL || k == IL_REL_END || k == IL_REL_KEEP ||
         k == IL_TICK || k == IL_HALF;
}

/* Whether thread `t` has its next step enabled (not counting a delivery). */
static int
il_step_enabled(const il_thread_t *t)
{
  if (!t->alive)
    return 0;
  if (t->cont != IL_CONT_NONE)
    return 1;
  if (t->pc >= t->nops)
    return 0;
  return !il_waits_for_request((il_op_kind_t)t->ops[t->pc].kind) ||
         t->req == IL_REQ_NONE;
}

static int
il_deliver_enabled(const il_thread_t *t)
{
  return t->alive && t->cont == IL_CONT_NONE && t->req == IL_REQ_SETTLED;
}

static const char *
il_op_str(const il_op_t *op)
{
  static char buf[32];
  const char *g = op->gate == TL_GATE_READ    ? " read"
                  : op->gate == TL_GATE_WRITE ? " write"
                                              : "";
  char permits[8];

  if (op->gate == TL_GATE_SEM) {
    snprintf(permits, sizeof(permits), " %d", op->amount);
    g = permits;
  }

  switch ((il_op_kind_t)op->kind) {
  case IL_ACQ:
    snprintf(buf, sizeof(buf), "acquire%s", g);
    break;
  case IL_REL:
    snprintf(buf, sizeof(buf), "release%s", g);
    break;
  case IL_REL_END:
    snprintf(buf, sizeof(buf), "release%s (slice over)", g);
    break;
  case IL_REL_KEEP:
    snprintf(buf, sizeof(buf), "release%s to own request", g);
    break;
  case IL_TRY:
    snprintf(buf, sizeof(buf), "sync try%s", g);
    break;
  case IL_ABORT:
    return "abort";
  case IL_TIMEOUT:
    return "timeout";
  case IL_DIE:
    return "dies";
  case IL_TICK:
    return "waits 1 ms";
  case IL_HALF:
    return "waits 0.5 ms";
  }
  return buf;
}

/* The first half of a semaphore operation (lib/Semaphore.js): acquire and
 * try through the fast path, release through its compare-exchange; the
 * core half follows as for the other words. Returns 0 for the operations
 * that every word shares (abort, timeout, death, tick). */
static int
il_sem_step(il_thread_t *t, const il_op_t *op)
{
  int k = op->amount;

  switch ((il_op_kind_t)op->kind) {
  case IL_ACQ:
  case IL_TRY:
    if (il_js_sem_acquire(k)) {
      il_note("fast path takes %d", k);
      il_hold(t, TL_GATE_SEM, 0, k, 0);
      t->pc++;
    } else {
      il_note("fast path fails");
      t->cont = op->kind == IL_ACQ ? IL_CONT_ACQ : IL_CONT_TRY;
    }
    return 1;
  case IL_REL:
    if (t->permits < k) {
      il_note("holds %d, skipped", t->permits);
      t->pc++;
    } else if (il_js_sem_release(t, k)) {
      il_note("compare-exchange returns %d", k);
      t->permits -= k;
      t->pc++;
    } else {
      il_note("compare-exchange does not apply");
      t->cont = IL_CONT_RELEASE;
      t->cont_arg = (uint32_t)k;
    }
    return 1;
  default:
    return 0;
  }
}

/* Runs the next step of `t`: an operation, or the core half of one. */
static void
il_step(il_thread_t *t)
{
  const il_op_t *op = &t->ops[t->pc];
  int gate = op->gate;
  uint32_t amount = 0;

  if (t->cont == IL_CONT_WATCH) {
    t->cont = IL_CONT_NONE;
    il_core_watch_end(t);
    return;
  }
  il_note("T%d %s: ", t->n, il_op_str(op));
  switch (t->cont) {
  case IL_CONT_ACQ:
    t->cont = IL_CONT_NONE;
    t->pc++;
    il_core_request(t, gate, op->amount);
    return;
  case IL_CONT_TRY:
    t->cont = IL_CONT_NONE;
    t->pc++;
    il_core_try(t, gate, op->amount);
    return;
  case IL_CONT_RELEASE:
    t->cont = IL_CONT_NONE;
    t->pc++;
    if (gate == TL_GATE_SEM)
      t->permits -= (int)t->cont_arg;
    else if (il_exclusive(gate))
      t->excl--;
    else
      t->reads--;
    il_core_release(t, gate, t->cont_arg);
    return;
  case IL_CONT_KEEP:
    /* lib/AsyncLock.js unlock(): the core decides, so the thread's next
     * request goes there first, while it holds the lock (it takes its place
     * by its arrival); the release follows, which passes the lock to it
     * while no hand-off is due (lock.c). */
    il_core_request(t, gate, 0);
    t->cont = IL_CONT_RELEASE;
    t->cont_arg = TL_LOCK_BARGE | (il_in_slice(t, 0) ? 0 : TL_LOCK_HANDOFF);
    return;
  case IL_CONT_WATCH: /* handled above */
  case IL_CONT_NONE:
    break;
  }
  if (gate == TL_GATE_SEM && il_sem_step(t, op))
    return;
  switch ((il_op_kind_t)op->kind) {
  case IL_ACQ:
    if (t->early) {
      /* It waited in its thread's queue: AsyncLock sends it to the core. */
      il_note("made at the start: to the core");
      t->cont = IL_CONT_ACQ;
      return;
    }
    if (il_js_fast_acquire(t, gate, 1)) {
      il_note("fast path takes it");
      /* LockWord.ownerDied: the word's bit, kept while held. */
      il_hold(t, gate, il_word_died(gate), 0, 0);
      t->pc++;
    } else {
      il_note("fast path fails");
      t->cont = IL_CONT_ACQ;
    }
    return;
  case IL_TRY:
    /* A thread with a request of its own waiting does not barge: RWLock
     * for its writes (#writeFlags); AsyncLock does not even try (its
     * ThreadQueue), and its core probe must then fail on its own. */
    if (il_js_fast_acquire(
            t, gate,
            t->req == IL_REQ_NONE ||
                (gate == TL_GATE_WRITE && t->req_gate != TL_GATE_WRITE))) {
      il_note("fast path takes it");
      il_hold(t, gate, il_word_died(gate), 0, 0);
      t->pc++;
      /* The word must show a queued or woken request (its bits), so that
       * this compare-exchange cannot succeed beside it. */
      if (t->req == IL_REQ_QUEUED || il_woken(t))
        il_violation("a sync %s request of T%d took the word on the fast "
                     "path while T%d's own %s request is %s: expected "
                     "EDEADLK",
                     il_gate_str(gate), t->n, t->n, il_gate_str(t->req_gate),
                     t->req == IL_REQ_QUEUED ? "queued" : "woken");
    } else {
      il_note("fast path fails");
      t->cont = IL_CONT_TRY;
    }
    return;
  case IL_REL:
  case IL_REL_END:
    if (il_exclusive(gate) ? t->excl == 0 : t->reads == 0) {
      il_note("holds nothing, skipped");
      t->pc++;
      return;
    }
    if (il_js_release(t, gate, op->kind == IL_REL_END, &amount)) {
      il_note("compare-exchange frees it");
      if (il_exclusive(gate))
        t->excl--;
      else
        t->reads--;
      t->pc++;
    } else {
      il_note("compare-exchange does not apply");
      t->cont = IL_CONT_RELEASE;
      t->cont_arg = amount;
    }
    return;
  case IL_REL_KEEP:
    if (t->excl == 0) {
      il_note("holds nothing, skipped");
      t->pc++;
      return;
    }
    if (atomic_load(IL_WORD) == il_own(t, gate)) {
      il_note("nobody waits: kept");
      t->pc++;
      return;
    }
    /* LockWord.keep: within the slice, nobody starving: what the core
     * would answer. (The release through the core counts the slice's
     * grant otherwise.) */
    if ((atomic_load(IL_WORD) & il_shortcut_mask(gate)) == TL_SHORTCUT_IF &&
        t->slice_ticks >= 0 && t->slice_ticks == il.ticks &&
        il_none_starves(t)) {
      if (il_starving(t))
        il_violation("T%d kept the lock for its own request while another "
                     "request had waited 1 ms",
                     t->n);
      il_note("nobody starves: kept");
      t->pc++;
      return;
    }
    il_note("somebody waits: ask the core");
    t->cont = IL_CONT_KEEP;
    return;
  case IL_ABORT:
  case IL_TIMEOUT:
    t->pc++;
    il_core_cancel(t, op->kind == IL_ABORT ? TL_CANCELLED : TL_TIMED_OUT);
    return;
  case IL_DIE:
    t->pc++;
    /* Whoever takes over a lock it dies holding must be told; so must the
     * next holder after a grant that told it and that it never used. */
    if (t->excl)
      il.dead_owner_reported = 0;
    if (t->req == IL_REQ_SETTLED && t->w.granted && t->w.owner_died &&
        (t->w.gate == TL_GATE_LOCK || t->w.gate == TL_GATE_WRITE))
      il.news_owed = 1;
    il_core_die(t);
    return;
  case IL_TICK:
    t->pc++;
    il.ticks++;
    il_clock += TL_POLICY_STARVING_NS;
    il_note("the clock moves on");
    return;
  case IL_HALF:
    t->pc++;
    il_clock += TL_POLICY_STARVING_NS / 2;
    il_note("the clock moves on by half");
    return;
  }
}

/* The enabled moves, the last mover's first (choosing it is no
 * preemption). Moves of other threads while the last mover could go on are
 * preemptions; beyond the bound they are left out. */
static int
il_moves(il_move_t *moves, int last, int preemptions)
{
  int n = 0;
  int last_enabled = last >= 0 && (il_step_enabled(&il.t[last]) ||
                                   il_deliver_enabled(&il.t[last]));

  for (int k = 0; k < il.nthreads; k++) {
    int i = last >= 0 ? (last + k) % il.nthreads : k;
    il_thread_t *t = &il.t[i];
    if (i != last && last_enabled && preemptions >= il.preemption_bound)
      continue;
    if (il_deliver_enabled(t))
      moves[n++] = (il_move_t){ i, 1 };
    if (il_step_enabled(t))
      moves[n++] = (il_move_t){ i, 0 };
  }
  return n;
}

/* ---------------------------------------------------------------------- */
/* Executions. */

static void
il_parse(const il_scenario_t *sc)
{
  const char *p = sc->script;
  int n = 0;

  memset(il.t, 0, sizeof(il.t));
  il.t[0].n = 1;
  while (*p != '\0') {
    char tok[16];
    int len = 0;
    il_op_t op = { 0, TL_GATE_LOCK, 0 };

    while (*p == ' ')
      p++;
    if (*p == '|') {
      n++;
      ASSERT_LT(n, IL_MAX_THREADS);
      il.t[n].n = n + 1;
      p++;
      continue;
    }
    if (*p == '\0')
      break;
    while (*p != '\0' && *p != ' ' && *p != '|' && len < 15)
      tok[len++] = *p++;
    tok[len] = '\0';
    if (len > 1 && (tok[len - 1] == 'W' || tok[len - 1] == 'R')) {
      op.gate = tok[len - 1] == 'W' ? TL_GATE_WRITE : TL_GATE_READ;
      tok[--len] = '\0';
    } else if (len > 1 && tok[len - 1] >= '1' && tok[len - 1] <= '9') {
      op.gate = TL_GATE_SEM;
      op.amount = (uint8_t)(tok[len - 1] - '0');
      tok[--len] = '\0';
    }
    if (strcmp(tok, "park") == 0) {
      il.t[n].parked = 1;
      continue;
    }
    if (strcmp(tok, "early") == 0) {
      il.t[n].early = 1;
      continue;
    }
    if (strcmp(tok, "acq") == 0)
      op.kind = IL_ACQ;
    else if (strcmp(tok, "rel") == 0)
      op.kind = IL_REL;
    else if (strcmp(tok, "relh") == 0)
      op.kind = IL_REL_END;
    else if (strcmp(tok, "relk") == 0)
      op.kind = IL_REL_KEEP;
    else if (strcmp(tok, "try") == 0)
      op.kind = IL_TRY;
    else if (strcmp(tok, "abort") == 0)
      op.kind = IL_ABORT;
    else if (strcmp(tok, "tmo") == 0)
      op.kind = IL_TIMEOUT;
    else if (strcmp(tok, "die") == 0)
      op.kind = IL_DIE;
    else if (strcmp(tok, "tick") == 0)
      op.kind = IL_TICK;
    else if (strcmp(tok, "half") == 0)
      op.kind = IL_HALF;
    else
      TL_TEST_FAIL("scenario %s: unknown operation %s", sc->name, tok);
    ASSERT(((sc->kind == IL_WORD_LOCK) == (op.gate == TL_GATE_LOCK) &&
            (sc->kind == IL_WORD_SEM) == (op.gate == TL_GATE_SEM)) ||
           !il_waits_for_request((il_op_kind_t)op.kind) || op.kind == IL_TICK ||
           op.kind == IL_HALF);
    ASSERT(op.gate != TL_GATE_SEM || op.kind != IL_REL_KEEP);
    ASSERT_LT(il.t[n].nops, IL_MAX_OPS);
    il.t[n].ops[il.t[n].nops++] = op;
  }
  il.nthreads = n + 1;
  for (int i = 0; i < il.nthreads; i++)
    il.t[i].slice_ticks = -1;
}

/* The semaphore's part of il_drain: the permits that live threads hold
 * and those lost with dead ones go back through the core; with `check`
 * the word must then show every permit and no waiter. */
static void
il_drain_sem(int check)
{
  char ws[96];
  int32_t v;

  for (int i = 0; i < il.nthreads; i++) {
    il_thread_t *t = &il.t[i];
    if (t->permits > 0 &&
        tl_gate_release(&il.word, TL_GATE_SEM, t->id, (uint32_t)t->permits))
      il_violation("T%d could not return its permits at the end", t->n);
    t->permits = 0;
  }
  if (il.lost > 0 &&
      tl_gate_release(&il.word, TL_GATE_SEM, IL_JANITOR, (uint32_t)il.lost))
    il_violation("the lost permits could not be returned at the end");
  v = atomic_load(IL_WORD);
  if (check && !il.violated &&
      (v != il.sc->permits || tl_waiter_count(&il.word) != 0))
    il_violation("the execution ended with the word at %s and %zu "
                 "waiter(s) on it, not %d free permits",
                 il_word_str(v, ws, sizeof(ws)), tl_waiter_count(&il.word),
                 il.sc->permits);
  ASSERT_EQ(tl_waiter_count(&il.word), 0);
}

/* Gives back whatever an execution left: requests still in the core, holds
 * of live threads (released through the core), a dead owner's word (taken
 * over and released by a janitor thread), the ids. With `check`, the word
 * must end at 0 with no waiter left. */
static void
il_drain(int check)
{
  char ws[96];

  for (int i = 0; i < il.nthreads; i++) {
    il_thread_t *t = &il.t[i];
    if (t->req != IL_REQ_NONE && !tl_cancel(&t->w, TL_CANCELLED))
      tl_gate_abandon(&t->w);
    t->req = IL_REQ_NONE;
  }
  if (il.sc->kind == IL_WORD_SEM) {
    il_drain_sem(check);
    return;
  }
  for (int i = 0; i < il.nthreads && check; i++) {
    il_thread_t *t = &il.t[i];
    int gate = il.sc->kind == IL_WORD_LOCK ? TL_GATE_LOCK : TL_GATE_WRITE;
    for (; t->alive && t->excl > 0; t->excl--)
      if (tl_gate_release(&il.word, gate, t->id, TL_LOCK_BARGE) != 0)
        il_violation("T%d could not release its hold at the end", t->n);
    for (; t->alive && t->reads > 0; t->reads--)
      if (tl_gate_release(&il.word, TL_GATE_READ, t->id, 0) != 0)
        il_violation("T%d could not release its read hold at the end", t->n);
  }
  if (check && !il.violated) {
    int32_t v = atomic_load(IL_WORD);
    int gate = il.sc->kind == IL_WORD_LOCK ? TL_GATE_LOCK : TL_GATE_WRITE;
    uint32_t janitor = IL_JANITOR;
    if (v != 0) {
      int r;
      if (!il.registered[janitor])
        ASSERT_OK(tl_thread_register(janitor));
      il.registered[janitor] = 1;
      r = tl_gate_acquire(&il.word, gate, janitor, TL_LOCK_BARGE, 0, NULL);
      if (r == TL_RESULT_OWNER_DIED)
        r = tl_gate_release(&il.word, gate, janitor, TL_LOCK_BARGE);
      else
        il_violation("the execution ended with the word at %s, and a new "
                     "thread's acquire returned %s, not OWNER_DIED",
                     il_word_str(v, ws, sizeof(ws)), il_result_str(r));
    }
    v = atomic_load(IL_WORD);
    if (!il.violated && (v != 0 || tl_waiter_count(&il.word) != 0))
      il_violation("the execution ended with the word at %s and %zu "
                   "waiter(s) on it",
                   il_word_str(v, ws, sizeof(ws)), tl_waiter_count(&il.word));
  }
  /* After a violation the word may hold anything; the next execution
   * starts from 0 again, and nothing may wait on it then. */
  ASSERT_EQ(tl_waiter_count(&il.word), 0);
}

/* Runs one execution: the first `prefix` choices from the stack, then the
 * first enabled move at every new depth. Returns the number of steps. */
static int
il_execute(int prefix)
{
  int last = -1, preemptions = 0, steps = 0;
  char ws[96];

  il_parse(il.sc);
  il.word = il.sc->kind == IL_WORD_SEM ? il.sc->permits : 0;
  il.lost = 0;
  il.seq = 1;
  il_clock = IL_CLOCK_START_NS;
  il.ticks = 0;
  il.releasing = 0;
  il.reader_died = 0;
  il.violated = 0;
  il.dead_owner_reported = 0;
  il.news_owed = 0;
  ASSERT_EQ(tl_waiter_count(&il.word), 0);
  for (int i = 0; i < il.nthreads; i++) {
    il.t[i].id = (uint32_t)(i + 1);
    il.t[i].alive = 1;
    if (!il.registered[il.t[i].id])
      ASSERT_OK(tl_thread_register(il.t[i].id));
    il.registered[il.t[i].id] = 1;
  }
  for (;;) {
    il_move_t moves[2 * IL_MAX_THREADS];
    int n = il_moves(moves, last, preemptions);
    int c;
    il_thread_t *t;

    if (n == 0) {
      il_check_quiescent();
      break;
    }
    if (steps >= il.depth_bound) {
      il.truncated++;
      break;
    }
    if (steps < prefix) {
      if (il.stack[steps].n != n)
        TL_TEST_FAIL("scenario %s: the replay differs at step %d (%d moves, "
                     "%d before): the model is not deterministic",
                     il.sc->name, steps + 1, n, il.stack[steps].n);
      c = il.stack[steps].c;
    } else {
      il.stack[steps] = (il_choice_t){ (uint16_t)n, 0 };
      c = 0;
    }
    t = &il.t[moves[c].thread];
    if (last >= 0 && moves[c].thread != last &&
        (il_step_enabled(&il.t[last]) || il_deliver_enabled(&il.t[last])))
      preemptions++;
    last = moves[c].thread;
    il.note_len = il.events_len = 0;
    il.note[0] = il.events[0] = '\0';
    if (moves[c].deliver) {
      il_note("T%d: ", t->n);
      il_core_deliver(t);
    } else {
      il_step(t);
    }
    steps++;
    il_check_state();
    if (il.verbose)
      printf("    %2d. %s%s\n          word %s\n", steps, il.note, il.events,
             il_word_str(atomic_load(IL_WORD), ws, sizeof(ws)));
    if (il.violated)
      break;
  }
  il_drain(!il.violated);
  il.executions++;
  return steps;
}

/* Explores every schedule of the current scenario within the bounds, depth
 * first; keeps the shortest violating one. */
static void
il_explore(void)
{
  int prefix = 0;

  il.executions = 0;
  il.truncated = 0;
  il.violations = 0;
  il.nfound = 0;
  for (;;) {
    int len = il_execute(prefix);

    if (il.violated) {
      int k = 0;
      il.violations++;
      while (k < il.nfound && il.found[k].kind != il.violation_kind)
        k++;
      if (k == il.nfound && k < IL_MAX_KINDS) {
        il.nfound++;
        il.found[k].kind = il.violation_kind;
        il.found[k].len = IL_MAX_DEPTH + 1;
      }
      if (k < il.nfound && len < il.found[k].len) {
        il.found[k].len = len;
        memcpy(il.found[k].schedule, il.stack,
               sizeof(il.stack[0]) * (size_t)len);
      }
    }
    while (len > 0 && il.stack[len - 1].c + 1 >= il.stack[len - 1].n)
      len--;
    if (len == 0)
      return;
    il.stack[len - 1].c++;
    prefix = len;
  }
}

/* Replays the shortest violating schedule of kind `k`, printing every
 * step. */
static void
il_print_counterexample(int k)
{
  int len = il.found[k].len;

  memcpy(il.stack, il.found[k].schedule, sizeof(il.stack[0]) * (size_t)len);
  il.verbose = 1;
  printf("  counterexample (%d steps; scripts: %s):\n", len, il.sc->script);
  il_execute(len);
  il.verbose = 0;
  printf("  violation: %s\n",
         il.violated ? il.violation : "(not reproduced on replay)");
}

static int
il_selected(const char *list, const char *name)
{
  size_t len = strlen(name);

  if (list == NULL || *list == '\0')
    return 1;
  for (const char *p = list; *p != '\0';) {
    const char *end = strchr(p, ',');
    size_t k = end != NULL ? (size_t)(end - p) : strlen(p);
    if (k == len && strncmp(p, name, k) == 0)
      return 1;
    if (end == NULL)
      break;
    p = end + 1;
  }
  return 0;
}

int
main(int argc, char **argv)
{
  const char *only = getenv("TL_SCENARIO");
  int expect_bug = tl_test_setting(0, NULL, 0, "TL_EXPECT_BUG", 0) != 0;
  int ran = 0, failed = 0;
  struct timespec t0, t1;

  (void)argc;
  (void)argv;
  il.preemption_bound = (int)tl_test_setting(
      0, NULL, 0, "TL_INTERLEAVE_PREEMPTIONS", IL_DEFAULT_PREEMPTIONS);
  il.depth_bound =
      (int)tl_test_setting(0, NULL, 0, "TL_INTERLEAVE_DEPTH", IL_DEFAULT_DEPTH);
  if (il.depth_bound > IL_MAX_DEPTH)
    il.depth_bound = IL_MAX_DEPTH;
  /* The checker drives the core from one OS thread; a sync request never
   * blocks (timeout 0), so no spinning either. */
  tl_set_spin(0);
  if (il.preemption_bound >= IL_UNBOUNDED)
    printf("interleave: no preemption bound, depth bound %d%s\n",
           il.depth_bound, expect_bug ? ", expecting violations" : "");
  else
    printf("interleave: preemption bound %d, depth bound %d%s\n",
           il.preemption_bound, il.depth_bound,
           expect_bug ? ", expecting violations" : "");
  for (size_t i = 0; i < IL_SCENARIO_COUNT; i++) {
    const il_scenario_t *sc = &il_scenarios[i];
    double secs;

    if (!il_selected(only, sc->name))
      continue;
    ran++;
    il.sc = sc;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    il_explore();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ASSERT_EQ(tl_waiter_total(), 0);
    secs = (double)(t1.tv_sec - t0.tv_sec) +
           (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%s %-17s %8lu executions%s %6.2fs  %s\n",
           il.nfound == 0 ? "ok  " : "FAIL", sc->name, il.executions,
           il.truncated ? " (some cut at the depth bound)" : "", secs,
           sc->what);
    if (il.nfound > 0) {
      failed++;
      printf("  %lu of the executions break the protocol, in %d way(s); "
             "the shortest of each:\n",
             il.violations, il.nfound);
      for (int k = 0; k < il.nfound; k++)
        il_print_counterexample(k);
    }
    fflush(stdout);
  }
  if (ran == 0)
    TL_TEST_FAIL("no scenario matches TL_SCENARIO=%s", only);
  printf("interleave: %d scenario(s), %d with violations\n", ran, failed);
  if (expect_bug)
    return failed == ran ? 0 : 1;
  return failed == 0 ? 0 : 1;
}
