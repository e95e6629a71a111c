/* Allocation failure, the SQLite way: for n = 1, 2, 3... a fresh child
 * process makes its nth allocation fail and runs a scenario that allocates
 * in every allocating part of the core (owner registry, name table, heap).
 * Every step must either succeed or fail cleanly with TL_ENOMEM and leave
 * everything as it was; at the end no waiter, name or block may be left
 * (LeakSanitizer checks the child too in the ASan build). The loop ends
 * with the first n that the scenario never reaches.
 *
 * Built, like every C test, with TL_FAULT_INJECTION (test/c/run.sh).
 */
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "heap.h"
#include "names.h"
#include "test.h"

#define EXIT_NOT_REACHED 3
#define NIDS 40
#define NNAMES 12
#define NHEAP 200

static void
on_event(tl_named_t *r, int event)
{
  (void)r;
  (void)event;
}

static void
scenario_registry(void)
{
  for (uint32_t id = 1; id <= NIDS; id++) {
    int r = tl_thread_register(id);
    if (r == TL_ENOMEM) {
      ASSERT_EQ(tl_thread_alive(id), 0);
    } else {
      ASSERT_EQ(r, 0);
      ASSERT_EQ(tl_thread_alive(id), 1);
    }
  }
  for (uint32_t id = 1; id <= NIDS; id++)
    tl_thread_unregister(id);
  for (uint32_t id = 1; id <= NIDS; id++)
    ASSERT_EQ(tl_thread_alive(id), 0);
}

static void
scenario_names(void)
{
  tl_named_t held[NNAMES], queued[NNAMES];
  int held_ok[NNAMES], queued_ok[NNAMES];

  for (int i = 0; i < NNAMES; i++) {
    uint16_t name[2] = { 'n', (uint16_t)i };
    size_t before = tl_named_count();
    int phase = tl_named_request(&held[i], name, 2, 1, 0, 0, 1, on_event);

    held_ok[i] = phase != TL_NAMED_ENOMEM;
    if (!held_ok[i]) {
      ASSERT_EQ(tl_named_count(), before);
      queued_ok[i] = 0;
      continue;
    }
    ASSERT_EQ(phase, TL_NAMED_HELD);
    /* The record exists now, so a second request allocates nothing. */
    phase = tl_named_request(&queued[i], name, 2, 1, 0, 0, 2, on_event);
    ASSERT_EQ(phase, TL_NAMED_QUEUED);
    queued_ok[i] = 1;
  }
  for (int i = 0; i < NNAMES; i++) {
    if (held_ok[i])
      ASSERT_EQ(tl_named_release(&held[i]), TL_NAMED_HELD);
    if (queued_ok[i])
      ASSERT_EQ(tl_named_release(&queued[i]), TL_NAMED_HELD);
  }
  ASSERT_EQ(tl_named_count(), 0);
}

static void
scenario_heap(void)
{
  static tl_heap_node_t nodes[NHEAP];
  tl_heap_t h = { NULL, 0, 0 };
  uint32_t pushed = 0;

  for (uint32_t i = 0; i < NHEAP; i++) {
    tl_heap_node_init(&nodes[i]);
    nodes[i].deadline = (i * 7919u) % NHEAP;
    if (tl_heap_push(&h, &nodes[i]) == TL_ENOMEM) {
      ASSERT_EQ(nodes[i].index, TL_HEAP_NONE);
      ASSERT_EQ(h.len, pushed);
    } else {
      pushed++;
    }
  }
  /* Whatever went in comes out in deadline order. */
  for (uint64_t last = 0; h.len > 0;) {
    tl_heap_node_t *m = tl_heap_min(&h);
    ASSERT_GE(m->deadline, last);
    last = m->deadline;
    tl_heap_remove(&h, m);
    pushed--;
  }
  ASSERT_EQ(pushed, 0);
  tl_heap_free(&h);
}

/* Runs in the child: returns its exit status. */
static int
run(uint64_t n)
{
  tl_fault_arm(n, NULL, NULL);
  scenario_registry();
  scenario_names();
  scenario_heap();
  ASSERT_EQ(tl_waiter_total(), 0);
  /* Only the registry's array may stay: it is kept for the process. */
  ASSERT_LE(tl_alloc_live(), 1);
  return tl_fault_fired() ? 0 : EXIT_NOT_REACHED;
}

int
main(void)
{
  uint64_t n;

  for (n = 1;; n++) {
    pid_t pid;
    int status;

    fflush(stdout);
    pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0)
      exit(run(n));
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status))
      TL_TEST_FAIL("n=%" PRIu64 ": the child died of signal %d", n,
                   WTERMSIG(status));
    if (WEXITSTATUS(status) == EXIT_NOT_REACHED)
      break;
    if (WEXITSTATUS(status) != 0)
      TL_TEST_FAIL("n=%" PRIu64 ": the child exited with %d", n,
                   WEXITSTATUS(status));
  }
  /* Every allocating part must have been reached at least once. */
  ASSERT_GT(n, 8);
  printf("alloc_fail: ok (%" PRIu64 " allocations failed in turn)\n", n - 1);
  return 0;
}
