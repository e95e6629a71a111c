/* The visited set of the systematic checkers (test/c/shm_handoff.c,
 * shm_sem.c, shm_poke.c): each explores every interleaving of its
 * actors' steps depth first and skips a state it met before. A state is
 * a plain struct with no padding left uninitialised (the checkers memset
 * it first), hashed bytewise (FNV-1a) into an open-addressing table of
 * 2^bits hashes. Two states with one hash are taken as one: with 64-bit
 * hashes and a few million states the chance is negligible, and it can
 * only hide an execution, never report a false one.
 */
#ifndef TL_TEST_MODEL_H_
#define TL_TEST_MODEL_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t *model_visited;
static size_t model_stored;
static unsigned model_bits;
/* The scenario being explored: its name, the states explored and met
 * again, and the failures found (a checker stops at the first). */
static const char *scenario_name;
static unsigned long explored, pruned;
static int failures;

/* The execution being explored, for a failure's report: the actor and its
 * program counter at each step (an actor number of 200 and more: that
 * actor minus 200 died there). Inline, so that the checkers that keep
 * their own trail build without warnings. */
#define MODEL_TRAIL 512
typedef struct {
  int steps[MODEL_TRAIL][2];
  int len;
} model_trail_t;

static inline model_trail_t *
model_trail(void)
{
  static model_trail_t trail;
  return &trail;
}

/* Records step `depth` of the execution; 0 when it is too long (a
 * livelock, or a model that needs a longer trail). */
static inline int
model_push(int depth, int who, int pc)
{
  model_trail_t *t = model_trail();
  if (depth >= MODEL_TRAIL)
    return 0;
  t->steps[depth][0] = who;
  t->steps[depth][1] = pc;
  t->len = depth + 1;
  return 1;
}

/* Reports the first failure of a scenario with the execution that led to
 * it (`names`: the actors'), and counts every failure. */
static inline void
model_fail(const char *const *names, const char *what)
{
  model_trail_t *t = model_trail();
  if (failures == 0) {
    fprintf(stderr, "%s: the execution:\n", scenario_name);
    for (int i = 0; i < t->len; i++) {
      int a = t->steps[i][0], pc = t->steps[i][1];
      if (a >= 200)
        fprintf(stderr, "  %s dies (at pc %d)\n", names[a - 200], pc);
      else
        fprintf(stderr, "  %s at pc %d\n", names[a], pc);
    }
    fprintf(stderr, "%s: %s\n", scenario_name, what);
  }
  failures++;
}

/* Makes the table (once per program): 2^bits entries. 0, or -1 without
 * memory (said on stderr). */
static int
model_init(unsigned bits)
{
  model_bits = bits;
  model_stored = 0;
  model_visited = calloc((size_t)1 << bits, sizeof(uint64_t));
  if (model_visited == NULL) {
    fprintf(stderr, "out of memory\n");
    return -1;
  }
  return 0;
}

/* Empties it for the next scenario. */
static void
model_reset(void)
{
  memset(model_visited, 0, sizeof(uint64_t) << model_bits);
  model_stored = 0;
}

static void
model_free(void)
{
  free(model_visited);
  model_visited = NULL;
}

/* Whether the state of `size` bytes at `state` was met before; records it
 * if not. Exits (2) when the table is 90% full. */
static int
model_seen(const void *state, size_t size)
{
  const unsigned char *p = state;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; i++) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  h |= 1; /* 0 marks an empty entry */
  size_t mask = ((size_t)1 << model_bits) - 1;
  for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
    if (model_visited[i] == h)
      return 1;
    if (model_visited[i] == 0) {
      if (++model_stored > ((size_t)1 << model_bits) / 10 * 9) {
        fprintf(stderr, "more states than the visited set holds\n");
        exit(2);
      }
      model_visited[i] = h;
      return 0;
    }
  }
}

/* Whether the state is new (counted as explored); one met before is
 * counted as such and not explored again. */
static inline int
model_visit(const void *state, size_t size)
{
  if (model_seen(state, size)) {
    pruned++;
    return 0;
  }
  explored++;
  return 1;
}

/* Starts the scenario `name`: an empty table, nothing counted. */
static void
model_begin(const char *name)
{
  model_reset();
  scenario_name = name;
  failures = 0;
  explored = pruned = 0;
}

/* Whether the scenario `name` runs: all, or those named in TL_SCENARIO. */
static int
model_wanted(const char *name)
{
  const char *only = getenv("TL_SCENARIO");
  return only == NULL || strstr(only, name) != NULL;
}

/* A scenario's line of the report. */
static void
model_report(const char *name, int width, int failures, unsigned long explored,
             unsigned long pruned)
{
  printf("%-*s %s  %lu states (%lu met again)\n", width, name,
         failures ? "FAIL" : "ok  ", explored, pruned);
}

/* The exit status: 0 when every scenario that ran passed (and one ran);
 * with TL_EXPECT_BUG set (a bug built in, test/c/run.sh), 0 when one
 * failed. */
static int
model_exit(int failed, int ran)
{
  if (getenv("TL_EXPECT_BUG") != NULL)
    return failed > 0 ? 0 : 1;
  return failed == 0 && ran > 0 ? 0 : 1;
}

#endif
