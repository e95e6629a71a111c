/* Node-API glue of threadlock/host (lib/host/): one attachment to a table
 * per LockManager, and the helper thread that turns doorbells into calls
 * on the event loops.
 *
 * One helper thread per process serves every attachment of every env
 * (the main thread and the workers): it sleeps on all their doorbell
 * words at once with futex_waitv, plus a process-local word that is
 * bumped whenever the set changes, and queues a call on the threadsafe
 * function of each attachment whose doorbell rang, so each event loop
 * hears only of its own requests. It starts with the first attachment
 * and is joined when the last one leaves. Where futex_waitv is missing
 * (Linux before 5.16, a seccomp filter, or THREADLOCK_HOST_TEST_NO_WAITV
 * in the tests), and for the attachments beyond the first
 * TL_HP_WAITV_MAX - 1 of a process, an attachment gets a helper thread of
 * its own that sleeps on its one doorbell, as before.
 *
 * Arguments arrive checked by lib/host/; errors of the core come back as
 * negative numbers, which lib/host/ words (one place for the messages).
 * On platforms without a host core (TL_HOST_SUPPORTED undefined) only
 * `hostSupported: false` is exported, so that the module loads and
 * createLockManager() can say why it cannot work.
 */
#include <node_api.h>

#include "../env.h"

napi_value tl__host_exports(napi_env env, napi_value exports);

#ifdef TL_HOST_SUPPORTED

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bell.h"
#include "host.h"
#include "platform.h"

/* One attachment as JavaScript holds it (an external). */
typedef struct tl_hostref_s tl_hostref_t;
typedef struct tl_op_s tl_op_t;
struct tl_hostref_s {
  /* Set at attach, cleared by close on the JS thread, which first takes
   * the attachment away from its helper (tl__proc_remove): from then on
   * no other thread reads it. */
  tl_host_t *h;
  napi_env env;
  /* Called by the helper that serves the attachment; released only after
   * the attachment left that helper, so never called after release. */
  napi_threadsafe_function tsfn;
  /* The fallback: this attachment's own helper thread (NULL when the
   * process helper serves it). Started and joined on the JS thread, or
   * joined by the exit path with the process lock held. */
  tl_hp_thread_t *helper;
  _Atomic int queued; /* a doorbell call waits to run on the event loop */
  int closed;         /* JS thread only */
  /* Protected by the process lock (tl__hp_process_lock). */
  int shared;         /* served by the process helper */
  int broken;         /* its table can no longer be read: left out */
  uint32_t seen;      /* the doorbell value the process helper acted on */
  tl_hostref_t *next; /* in tl__proc.list */
  /* The worker (see hostDefer): started and joined on the JS thread. The
   * queues and `worker_stop` are protected by `ops_lock`; `ops_word` is
   * the worker's futex word, bumped when `todo` grows or it must stop. */
  tl_hp_thread_t *worker;
  tl_hp_mutex_t *ops_lock;
  tl_op_t *todo, **todo_tail, *done, **done_tail;
  int worker_stop;
  _Atomic uint32_t ops_word;
  /* THREADLOCK_HOST_TEST_WORKER_DELAY_MS, read when the worker starts
   * (JS thread, before the thread): the tests widen the window between a
   * request made by the worker and its result reaching the JS thread. */
  int test_delay_ms;
};

/* The process's attachments and its helper thread. Everything here is
 * protected by the process lock. Invariants:
 * - tl__proc.list holds every attachment between a successful attach and
 *   its close (any env, any thread); only tl__proc_add and
 *   tl__proc_remove change it, on the attachment's JS thread.
 * - The process helper reads an attachment (its table, `seen`, its tsfn)
 *   only while it holds the process lock and finds it in the list; it lets
 *   the lock go only to sleep, and re-reads the list after every wake. So
 *   once tl__proc_remove returned, no helper touches the attachment, and
 *   close may detach and free it. The words the helper sleeps on may be
 *   unmapped during its sleep: the kernel keys shared futexes by file and
 *   offset and reads no memory once asleep, and a wait that starts after
 *   an unmap faults or sees `change` moved, and the helper re-reads.
 * - `thread` runs while `shared` > 0. A helper runs as long as `gen`
 *   equals the generation it started with: retiring it bumps `gen`, so a
 *   new helper started before the old one was joined never makes the old
 *   one stay.
 * - Lock order: the process lock, then (in tl_host_doorbell_check) the
 *   attachment's own locks; no thread holding those takes the process
 *   lock.
 * - Doorbells are rung with a wake of every sleeper (doorbell.c): a helper
 *   woken through one word stays queued on the others until it runs, and
 *   must not swallow a wake meant for the helper now in charge. */
static struct {
  tl_hostref_t *list;
  tl_bell_t *bells;       /* the other doorbells (bell.h), as `list` */
  unsigned shared;        /* attachments and bells served by `thread` */
  tl_hp_thread_t *thread; /* the process helper, or NULL */
  uint32_t gen;
  _Atomic uint32_t change; /* futex word, bumped at every change of the set */
  int hooked;              /* tl__proc_exit registered with atexit */
} tl__proc;

static void
tl__host_ring(tl_hostref_t *r)
{
  if (!atomic_exchange(&r->queued, 1))
    napi_call_threadsafe_function(r->tsfn, NULL, napi_tsfn_nonblocking);
}

/* Tells the process helper that the set changed. Process lock held. */
static void
tl__proc_changed(void)
{
  atomic_fetch_add(&tl__proc.change, 1);
  tl__hp_wake_local((uint32_t *)&tl__proc.change);
}

/* The process helper: checks every doorbell of the set, queues one call
 * on the event loop of each attachment whose doorbell rang, then sleeps
 * on all of them (and `change`), for at most the shortest slice of its
 * bells (tl_bell_t's `slice_ms`; none: no timeout). */
static void *
tl__proc_helper(void *arg)
{
  uint32_t gen = (uint32_t)(uintptr_t)arg;
  tl_hp_waitv_t set[TL_HP_WAITV_MAX];

  tl__hp_cancel_point(0);
  tl__hp_process_lock();
  while (tl__proc.gen == gen) {
    unsigned n = 0;
    int64_t slice = -1;
    set[n++] = (tl_hp_waitv_t){ (uint32_t *)&tl__proc.change,
                                atomic_load(&tl__proc.change), 0 };
    for (tl_hostref_t *r = tl__proc.list; r != NULL; r = r->next) {
      if (!r->shared || r->broken)
        continue;
      int c = tl_host_doorbell_check(r->h, &r->seen);
      if (c != 0)
        tl__host_ring(r);
      if (c < 0) {
        /* The file shrank or was rebuilt: its event loop hears of it
         * once (its poll fails), and the helper no longer sleeps on a
         * word whose futex wait would fail at once. */
        r->broken = 1;
        continue;
      }
      set[n++] = (tl_hp_waitv_t){ tl_host_doorbell(r->h), r->seen, 1 };
    }
    for (tl_bell_t *b = tl__proc.bells; b != NULL; b = b->next) {
      if (!b->shared || b->broken)
        continue;
      int c = b->check(b, &b->seen);
      if (c != 0)
        b->ring(b);
      if (c < 0) {
        b->broken = 1;
        continue;
      }
      set[n++] = (tl_hp_waitv_t){ b->word, b->seen, 1 };
      if (b->slice_ms > 0 && (slice < 0 || b->slice_ms < slice))
        slice = b->slice_ms;
    }
    tl__hp_process_unlock();
    tl__hp_waitv(set, n, slice);
    tl__hp_process_lock();
  }
  tl__hp_process_unlock();
  return NULL;
}

/* The fallback helper of one attachment: sleeps on its doorbell, without
 * a timeout, and queues one call on the event loop per batch of rings. */
static void *
tl__host_helper(void *data)
{
  tl_hostref_t *r = data;
  uint32_t seen = 0;
  int c;

  tl__hp_cancel_point(0);

  while ((c = tl_host_doorbell_wait(r->h, &seen)) == 0)
    tl__host_ring(r);
  if (c == -2)
    tl__host_ring(r); /* the table can no longer be read: say so once */
  return NULL;
}

static void tl__proc_exit(void);
static void tl__worker_stop(tl_hostref_t *r);

/* Puts a new attachment in the list and gives it a helper: the process
 * helper (started now if there is none), or its own thread. JS thread.
 * Returns -1 when no thread could be started. */
static int
tl__proc_add(tl_hostref_t *r)
{
  int rc = 0;

  tl__hp_process_lock();
  if (!tl__proc.hooked && tl__hp_at_exit(tl__proc_exit) == 0)
    tl__proc.hooked = 1;
  /* futex_waitv takes TL_HP_WAITV_MAX words, one of which is `change`. */
  r->shared = tl__hp_waitv_supported() && tl__proc.shared < TL_HP_WAITV_MAX - 1;
  if (r->shared) {
    if (tl__proc.thread == NULL) {
      tl__proc.gen++;
      tl__proc.thread = tl__hp_thread_start(
          tl__proc_helper, (void *)(uintptr_t)tl__proc.gen, "tl-host-helper");
    }
    if (tl__proc.thread == NULL) {
      rc = -1;
      goto out;
    }
    /* From the current value on: nothing of a new attachment has rung. */
    r->seen = 0;
    tl_host_doorbell_check(r->h, &r->seen);
    tl__proc.shared++;
  } else {
    r->helper = tl__hp_thread_start(tl__host_helper, r, "tl-host-helper");
    if (r->helper == NULL) {
      rc = -1;
      goto out;
    }
  }
  r->next = tl__proc.list;
  tl__proc.list = r;
  tl__proc_changed();
out:
  tl__hp_process_unlock();
  return rc;
}

/* Called with the process lock, which it lets go: an attachment or bell
 * whose flag `shared` says the process helper serves it no longer needs
 * it; the helper, if this was the last one it served, is retired and
 * joined (it needs the process lock to see that it must end, so it is
 * joined with the lock let go). */
static void
tl__proc_unshare(int *shared)
{
  tl_hp_thread_t *retired = NULL;

  if (*shared && --tl__proc.shared == 0 && tl__proc.thread != NULL) {
    retired = tl__proc.thread;
    tl__proc.thread = NULL;
    tl__proc.gen++;
  }
  *shared = 0;
  tl__proc_changed();
  tl__hp_process_unlock();
  if (retired != NULL)
    tl__hp_thread_join(retired);
}

/* Takes an attachment out of the list; its helper (its own, or the
 * process helper if it was the last one served) is joined before this
 * returns. JS thread; the attachment is in the list. */
static void
tl__proc_remove(tl_hostref_t *r)
{
  tl__hp_process_lock();
  for (tl_hostref_t **p = &tl__proc.list; *p != NULL; p = &(*p)->next) {
    if (*p == r) {
      *p = r->next;
      break;
    }
  }
  r->next = NULL;
  tl__proc_unshare(&r->shared);
  if (r->helper != NULL) {
    tl_host_doorbell_stop(r->h);
    tl__hp_thread_join(r->helper);
    r->helper = NULL;
  }
}

/* The fallback helper of one bell (no futex_waitv, or beyond the process
 * helper's TL_HP_WAITV_MAX words). */
static void *
tl__bell_helper(void *data)
{
  tl_bell_t *b = data;
  uint32_t seen = 0;

  /* From 0: the first check calls `ring` unless the word is 0 (a
   * spurious poll at worst), so no ring between the bell's adding and
   * this thread's first look is missed. */
  tl__hp_cancel_point(0);
  while (!atomic_load(&b->stopping)) {
    int c = b->check(b, &seen);
    if (c != 0)
      b->ring(b);
    if (c < 0)
      break;
    if (c == 0)
      tl__hp_wait(b->word, seen, b->slice_ms > 0 ? b->slice_ms : -1);
  }
  return NULL;
}

/* Stops and joins a bell's own thread. The word is bumped so that a
 * thread between its check of `stopping` and its sleep does not sleep. */
static void
tl__bell_stop(tl_bell_t *b)
{
  if (b->helper == NULL)
    return;
  atomic_store(&b->stopping, 1);
  atomic_fetch_add((_Atomic uint32_t *)b->word, 1);
  tl__hp_wake(b->word, 1 << 30);
  tl__hp_thread_join(b->helper);
  b->helper = NULL;
}

int
tl__bell_add(tl_bell_t *b)
{
  int rc = 0;

  tl__hp_process_lock();
  if (!tl__proc.hooked && tl__hp_at_exit(tl__proc_exit) == 0)
    tl__proc.hooked = 1;
  b->broken = 0;
  atomic_store(&b->stopping, 0);
  b->shared = tl__hp_waitv_supported() && tl__proc.shared < TL_HP_WAITV_MAX - 1;
  if (b->shared) {
    if (tl__proc.thread == NULL) {
      tl__proc.gen++;
      tl__proc.thread = tl__hp_thread_start(
          tl__proc_helper, (void *)(uintptr_t)tl__proc.gen, "tl-host-helper");
    }
    if (tl__proc.thread == NULL) {
      b->shared = 0;
      rc = -1;
      goto out;
    }
    /* From the current value on: nothing of a new bell has rung. */
    b->seen = 0;
    b->check(b, &b->seen);
    tl__proc.shared++;
  } else {
    b->helper = tl__hp_thread_start(tl__bell_helper, b, "tl-host-helper");
    if (b->helper == NULL) {
      rc = -1;
      goto out;
    }
  }
  b->next = tl__proc.bells;
  tl__proc.bells = b;
  tl__proc_changed();
out:
  tl__hp_process_unlock();
  return rc;
}

void
tl__bell_remove(tl_bell_t *b)
{
  tl__hp_process_lock();
  for (tl_bell_t **p = &tl__proc.bells; *p != NULL; p = &(*p)->next) {
    if (*p == b) {
      *p = b->next;
      break;
    }
  }
  b->next = NULL;
  tl__proc_unshare(&b->shared);
  tl__bell_stop(b);
}

/* Run by exit(), which process.exit() and an uncaught exception reach
 * without the env cleanup hooks: every thread of the module ends and is
 * joined (the helpers, the watchers of every attachment still open). The
 * attachments stay attached; the kernel drops their byte locks as the
 * process ends, and the other processes recover their slots. A natural
 * end of the process closed every attachment before (cleanup hooks). */
static void
tl__proc_exit(void)
{
  tl_hp_thread_t *retired;

  tl__hp_process_lock();
  retired = tl__proc.thread;
  tl__proc.thread = NULL;
  tl__proc.gen++;
  tl__proc_changed();
  tl__hp_process_unlock();
  if (retired != NULL)
    tl__hp_thread_join(retired);
  tl__hp_process_lock();
  tl__proc.shared = 0;
  for (tl_hostref_t *r = tl__proc.list; r != NULL; r = r->next) {
    r->shared = 0;
    if (r->helper != NULL) {
      tl_host_doorbell_stop(r->h);
      tl__hp_thread_join(r->helper);
      r->helper = NULL;
    }
    tl__worker_stop(r);
    tl_host_stop_watchers(r->h);
  }
  for (tl_bell_t *b = tl__proc.bells; b != NULL; b = b->next) {
    b->shared = 0;
    tl__bell_stop(b);
  }
  tl__hp_process_unlock();
}

/* Runs on the JS thread (env NULL during teardown): the JS side polls. */
static void
tl__host_call_js(napi_env env, napi_value fn, void *context, void *data)
{
  tl_hostref_t *r = context;
  napi_value undefined;

  (void)data;
  if (env == NULL || fn == NULL)
    return;
  atomic_store(&r->queued, 0);
  TL_NAPI_FATAL(napi_get_undefined(env, &undefined));
  /* An exception of the handler is the script's own, reported as
   * uncaught by Node. */
  napi_call_function(env, undefined, fn, 0, NULL, NULL);
}

static void tl__host_cleanup(void *arg);

/* Ends an attachment: on close(), at env teardown, or when collected. */
static void
tl__host_close(tl_hostref_t *r, int remove_hook)
{
  if (r->closed)
    return;
  r->closed = 1;
  /* After this no helper thread reads r or r->h. */
  tl__proc_remove(r);
  tl__worker_stop(r);
  tl_host_detach(r->h);
  r->h = NULL;
  napi_release_threadsafe_function(r->tsfn, napi_tsfn_abort);
  if (remove_hook)
    napi_remove_env_cleanup_hook(r->env, tl__host_cleanup, r);
}

static void
tl__hostref_free(tl_hostref_t *r)
{
  if (r->ops_lock != NULL)
    tl__hp_mutex_free(r->ops_lock);
  free(r);
}

static void
tl__host_cleanup(void *arg)
{
  tl__host_close(arg, 0);
}

static void
tl__host_finalize(napi_env env, void *data, void *hint)
{
  tl_hostref_t *r = data;
  (void)env;
  (void)hint;
  tl__host_close(r, 1);
  tl__hostref_free(r);
}

static tl_hostref_t *
tl__host_ref(napi_env env, napi_value v)
{
  void *p = NULL;
  if (napi_get_value_external(env, v, &p) != napi_ok || p == NULL) {
    napi_throw_type_error(env, NULL, "threadlock/host: bad handle");
    return NULL;
  }
  tl_hostref_t *r = p;
  if (r->closed) {
    napi_throw_error(env, "ECLOSED", "threadlock/host: the manager is closed");
    return NULL;
  }
  return r;
}

static napi_value
tl__int(napi_env env, int64_t v)
{
  napi_value out;
  TL_NAPI_CALL(env, napi_create_int64(env, v, &out));
  return out;
}

static napi_value
tl__big(napi_env env, uint64_t v)
{
  napi_value out;
  TL_NAPI_CALL(env, napi_create_bigint_uint64(env, v, &out));
  return out;
}

static napi_value
tl__array(napi_env env, napi_value *items, size_t n)
{
  napi_value a;
  TL_NAPI_CALL(env, napi_create_array_with_length(env, n, &a));
  for (size_t i = 0; i < n; i++)
    TL_NAPI_CALL(env, napi_set_element(env, a, (uint32_t)i, items[i]));
  return a;
}

/* hostAttach(dir, onDoorbell) -> handle, or [code, errno, message] saying
 * why not (code: a TL_HOST_E* constant; errno: the OS call's, for
 * TL_HOST_ESYS). */
static napi_value
tl_napi_host_attach(napi_env env, napi_callback_info info)
{
  napi_value argv[2], result, name, items[3];
  char dir[4096];
  tl_host_error_t err;
  size_t len;
  tl_hostref_t *r;

  TL_GET_ARGS(env, info, 2, argv);
  TL_NAPI_CALL(
      env, napi_get_value_string_utf8(env, argv[0], dir, sizeof(dir), &len));
  if (len >= sizeof(dir) - 1) {
    napi_throw_range_error(env, NULL, "threadlock/host: path too long");
    return NULL;
  }
  memset(&err, 0, sizeof(err));
  tl_host_t *h = tl_host_attach(dir, &err);
  if (h == NULL) {
    items[0] = tl__int(env, err.code);
    items[1] = tl__int(env, err.sys);
    TL_NAPI_CALL(env, napi_create_string_utf8(env, err.message,
                                              NAPI_AUTO_LENGTH, &items[2]));
    return tl__array(env, items, 3);
  }
  r = calloc(1, sizeof(*r));
  if (r == NULL) {
    tl_host_detach(h);
    napi_throw_error(env, NULL, "threadlock/host: out of memory");
    return NULL;
  }
  r->h = h;
  r->env = env;
  r->todo_tail = &r->todo;
  r->done_tail = &r->done;
  r->ops_lock = tl__hp_mutex_new();
  if (r->ops_lock == NULL) {
    tl_host_detach(h);
    free(r);
    napi_throw_error(env, NULL, "threadlock/host: out of memory");
    return NULL;
  }
  TL_NAPI_CALL(env, napi_create_string_utf8(env, "threadlock/host",
                                            NAPI_AUTO_LENGTH, &name));
  if (napi_create_threadsafe_function(env, argv[1], NULL, name, 0, 1, NULL,
                                      NULL, r, tl__host_call_js,
                                      &r->tsfn) != napi_ok) {
    tl_host_detach(h);
    tl__hostref_free(r);
    napi_throw_error(env, NULL, "threadlock/host: cannot create the callback");
    return NULL;
  }
  /* Only pending requests keep the event loop alive (hostRef). */
  napi_unref_threadsafe_function(env, r->tsfn);
  if (tl__proc_add(r) != 0) {
    napi_release_threadsafe_function(r->tsfn, napi_tsfn_abort);
    tl_host_detach(h);
    tl__hostref_free(r);
    items[0] = tl__int(env, TL_HOST_ESYS);
    items[1] = tl__int(env, EAGAIN);
    TL_NAPI_CALL(env, napi_create_string_utf8(
                          env,
                          "cannot start the helper thread (the process or user "
                          "reached its limit of threads)",
                          NAPI_AUTO_LENGTH, &items[2]));
    return tl__array(env, items, 3);
  }
  napi_add_env_cleanup_hook(env, tl__host_cleanup, r);
  TL_NAPI_CALL(env,
               napi_create_external(env, r, tl__host_finalize, NULL, &result));
  return result;
}

/* What poll and query collect under the table's lock, converted after
 * (on the JS thread, or later when the worker collected them). */
typedef struct {
  uint32_t node;
  int state;
  uint64_t token;
  int died;
} tl_poll_item_t;

typedef struct {
  tl_poll_item_t *items;
  size_t n, cap;
  int oom;
} tl_poll_list_t;

typedef struct {
  uint16_t name[TL_HOST_NAME_MAX];
  size_t len;
  int exclusive, held;
  uint64_t client;
  uint32_t pid;
} tl_query_item_t;

typedef struct {
  tl_query_item_t *items;
  size_t n, cap;
  int oom;
} tl_query_list_t;

/* Grows a list of `size`-byte items by one; NULL when out of memory. */
static void *
tl__list_push(void **items, size_t *n, size_t *cap, size_t size, int *oom)
{
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 16;
    void *p = realloc(*items, c * size);
    if (p == NULL) {
      *oom = 1;
      return NULL;
    }
    *items = p;
    *cap = c;
  }
  return (char *)*items + (*n)++ * size;
}

static void
tl__poll_visit(void *data, uint32_t node, int state, uint64_t token,
               int owner_died)
{
  tl_poll_list_t *l = data;
  tl_poll_item_t *it =
      tl__list_push((void **)&l->items, &l->n, &l->cap, sizeof(*it), &l->oom);
  if (it != NULL)
    *it = (tl_poll_item_t){ node, state, token, owner_died };
}

static void
tl__query_visit(void *data, const uint16_t *name, size_t len, int exclusive,
                int held, uint64_t client, uint32_t pid)
{
  tl_query_list_t *q = data;
  tl_query_item_t *it =
      tl__list_push((void **)&q->items, &q->n, &q->cap, sizeof(*it), &q->oom);
  if (it == NULL)
    return;
  if (len > TL_HOST_NAME_MAX)
    len = TL_HOST_NAME_MAX;
  memcpy(it->name, name, len * sizeof(uint16_t));
  it->len = len;
  it->exclusive = exclusive;
  it->held = held;
  it->client = client;
  it->pid = pid;
}

/* [state, node, token, ownerDied], or the negative error. */
static napi_value
tl__request_result(napi_env env, int st, uint32_t node, uint64_t token,
                   int died)
{
  napi_value items[4];

  if (st < 0)
    return tl__int(env, st);
  items[0] = tl__int(env, st);
  items[1] = tl__int(env, node);
  items[2] = tl__big(env, token);
  TL_NAPI_CALL(env, napi_get_boolean(env, died != 0, &items[3]));
  return tl__array(env, items, 4);
}

/* [[node, state, token, ownerDied], ...], or the negative error. */
static napi_value
tl__poll_result(napi_env env, int st, tl_poll_list_t *l)
{
  napi_value out, items[4], entry;

  if (st < 0)
    return tl__int(env, st);
  if (l->oom) {
    napi_throw_error(env, NULL, "threadlock/host: out of memory");
    return NULL;
  }
  TL_NAPI_CALL(env, napi_create_array_with_length(env, l->n, &out));
  for (size_t i = 0; i < l->n; i++) {
    items[0] = tl__int(env, l->items[i].node);
    items[1] = tl__int(env, l->items[i].state);
    items[2] = tl__big(env, l->items[i].token);
    TL_NAPI_CALL(env, napi_get_boolean(env, l->items[i].died != 0, &items[3]));
    entry = tl__array(env, items, 4);
    if (entry == NULL)
      return NULL;
    TL_NAPI_CALL(env, napi_set_element(env, out, (uint32_t)i, entry));
  }
  return out;
}

/* [[name, exclusive, held, clientId, pid], ...], or the negative error. */
static napi_value
tl__query_result(napi_env env, int st, tl_query_list_t *q)
{
  napi_value out, items[5], entry;
  char id[24];

  if (st < 0)
    return tl__int(env, st);
  if (q->oom) {
    napi_throw_error(env, NULL, "threadlock/host: out of memory");
    return NULL;
  }
  TL_NAPI_CALL(env, napi_create_array_with_length(env, q->n, &out));
  for (size_t i = 0; i < q->n; i++) {
    tl_query_item_t *it = &q->items[i];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)it->client);
    TL_NAPI_CALL(env, napi_create_string_utf16(env, (const char16_t *)it->name,
                                               it->len, &items[0]));
    TL_NAPI_CALL(env, napi_get_boolean(env, it->exclusive, &items[1]));
    TL_NAPI_CALL(env, napi_get_boolean(env, it->held, &items[2]));
    TL_NAPI_CALL(env,
                 napi_create_string_utf8(env, id, NAPI_AUTO_LENGTH, &items[3]));
    TL_NAPI_CALL(env, napi_create_uint32(env, it->pid, &items[4]));
    entry = tl__array(env, items, 5);
    if (entry == NULL)
      return NULL;
    TL_NAPI_CALL(env, napi_set_element(env, out, (uint32_t)i, entry));
  }
  return out;
}

/* Reads a name argument into `name` (room for TL_HOST_NAME_MAX + 2 code
 * units with its NUL) as UTF-16, JavaScript's own code units; `*len`
 * exceeds TL_HOST_NAME_MAX when it is too long. */
static int
tl__name_arg(napi_env env, napi_value v, uint16_t *name, size_t *len)
{
  return napi_get_value_string_utf16(env, v, (char16_t *)name,
                                     TL_HOST_NAME_MAX + 2, len) == napi_ok
             ? 0
             : -1;
}

/* Writes `token` into out[0] when `out` is a Float64Array and the token
 * is exact in a double (below 2^53: tokens start from the clock's µs and
 * grow by one per grant, so they stay there). Returns whether it did. */
static int
tl__out_token(napi_env env, napi_value out, uint64_t token)
{
  napi_valuetype t;
  napi_typedarray_type type;
  size_t length;
  void *data;

  if (token >= (uint64_t)1 << 53 || napi_typeof(env, out, &t) != napi_ok ||
      t != napi_object ||
      napi_get_typedarray_info(env, out, &type, &length, &data, NULL, NULL) !=
          napi_ok ||
      type != napi_float64_array || length < 1 || data == NULL)
    return 0;
  ((double *)data)[0] = (double)token;
  return 1;
}

/* hostRequest(handle, name, flags, critMs[, out]) -> [state, node, token,
 * ownerDied], or a negative error number (TL_HOST_EAGAIN: critMs was 0
 * and another process holds the table's critical section). With `out`, a
 * Float64Array, the answer is one number instead, state | ownerDied << 3
 * | node << 4, with the token in out[0] (building the array cost 8% of an
 * uncontended request + release); the array still comes when the token
 * does not fit. */
static napi_value
tl_napi_host_request(napi_env env, napi_callback_info info)
{
  napi_value argv[5];
  uint16_t name[TL_HOST_NAME_MAX + 2];
  size_t len;
  int32_t flags;
  int64_t crit;
  uint32_t node = 0;
  uint64_t token = 0;
  int died = 0;

  TL_GET_ARGS(env, info, 5, argv);
  tl_hostref_t *r = tl__host_ref(env, argv[0]);
  if (r == NULL)
    return NULL;
  if (tl__name_arg(env, argv[1], name, &len) != 0)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_int32(env, argv[2], &flags));
  TL_NAPI_CALL(env, napi_get_value_int64(env, argv[3], &crit));
  if (len > TL_HOST_NAME_MAX)
    return tl__int(env, TL_HOST_ENAMES);
  int st = tl_host_request(r->h, name, len, flags, crit, &node, &token, &died);
  if (st >= 0 && tl__out_token(env, argv[4], token))
    return tl__int(env, (int64_t)st | (int64_t)(died != 0) << 3 |
                            (int64_t)node << 4);
  return tl__request_result(env, st, node, token, died);
}

/* hostWait(handle, node, timeoutMs, probe) -> [state, token, ownerDied] or
 * a negative error number. Blocks the calling thread; with `probe` (worker
 * threads) it asks between slices whether the thread is being terminated,
 * through the probe of threadlock's own blocking waits (env.c). */
static napi_value
tl_napi_host_wait(napi_env env, napi_callback_info info)
{
  napi_value argv[4], items[3];
  uint32_t node;
  int64_t timeout;
  uint64_t token = 0;
  int died = 0;
  bool probe;
  tl_probe_t p;
  tl_host_stop_t stop;

  TL_GET_ARGS(env, info, 4, argv);
  tl_hostref_t *r = tl__host_ref(env, argv[0]);
  if (r == NULL)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_uint32(env, argv[1], &node));
  TL_NAPI_CALL(env, napi_get_value_int64(env, argv[2], &timeout));
  TL_NAPI_CALL(env, napi_get_value_bool(env, argv[3], &probe));
  if (probe) {
    tl__probe_init(tl__env(env), &p);
    stop.fn = p.fn;
    stop.data = p.data;
    stop.slice_ms = (int64_t)(p.slice_ns / 1000000u);
    if (stop.slice_ms < 1)
      stop.slice_ms = 1;
  }
  int st =
      tl_host_wait(r->h, node, timeout, probe ? &stop : NULL, &token, &died);
  if (st < 0)
    return tl__int(env, st);
  items[0] = tl__int(env, st);
  items[1] = tl__big(env, token);
  TL_NAPI_CALL(env, napi_get_boolean(env, died != 0, &items[2]));
  return tl__array(env, items, 3);
}

/* hostRelease(handle, node, critMs) -> the state the node had, or a
 * negative error number. */
static napi_value
tl_napi_host_release(napi_env env, napi_callback_info info)
{
  napi_value argv[3];
  uint32_t node;
  int64_t crit;

  TL_GET_ARGS(env, info, 3, argv);
  tl_hostref_t *r = tl__host_ref(env, argv[0]);
  if (r == NULL)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_uint32(env, argv[1], &node));
  TL_NAPI_CALL(env, napi_get_value_int64(env, argv[2], &crit));
  return tl__int(env, tl_host_release(r->h, node, crit));
}

/* hostPoll(handle, critMs) -> [[node, state, token, ownerDied], ...], or a
 * negative error number. */
static napi_value
tl_napi_host_poll(napi_env env, napi_callback_info info)
{
  napi_value argv[2], out;
  tl_poll_list_t l = { 0 };
  int64_t crit;

  TL_GET_ARGS(env, info, 2, argv);
  tl_hostref_t *r = tl__host_ref(env, argv[0]);
  if (r == NULL)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_int64(env, argv[1], &crit));
  int st = tl_host_poll(r->h, tl__poll_visit, &l, crit);
  out = tl__poll_result(env, st, &l);
  free(l.items);
  return out;
}

/* hostClaim(handle, age, critMs) -> as hostPoll: the waiting requests
 * take their names when free (tl_host_claim). */
static napi_value
tl_napi_host_claim(napi_env env, napi_callback_info info)
{
  napi_value argv[3], out;
  tl_poll_list_t l = { 0 };
  int32_t age;
  int64_t crit;

  TL_GET_ARGS(env, info, 3, argv);
  tl_hostref_t *r = tl__host_ref(env, argv[0]);
  if (r == NULL)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_int32(env, argv[1], &age));
  TL_NAPI_CALL(env, napi_get_value_int64(env, argv[2], &crit));
  int st = tl_host_claim(r->h, age != 0, tl__poll_visit, &l, crit);
  out = tl__poll_result(env, st, &l);
  free(l.items);
  return out;
}

/* hostQuery(handle, critMs) -> [[name, exclusive, held, clientId, pid],
 * ...] or a negative error number. */
static napi_value
tl_napi_host_query(napi_env env, napi_callback_info info)
{
  napi_value argv[2], out;
  tl_query_list_t q = { 0 };
  int64_t crit;

  TL_GET_ARGS(env, info, 2, argv);
  tl_hostref_t *r = tl__host_ref(env, argv[0]);
  if (r == NULL)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_int64(env, argv[1], &crit));
  int st = tl_host_query(r->h, tl__query_visit, &q, crit);
  out = tl__query_result(env, st, &q);
  free(q.items);
  return out;
}

/* hostPrune(handle) -> 1 while watcher threads remain (call again
 * later), else 0. */
static napi_value
tl_napi_host_prune(napi_env env, napi_callback_info info)
{
  napi_value argv[1];

  TL_GET_ARGS(env, info, 1, argv);
  tl_hostref_t *r = tl__host_ref(env, argv[0]);
  if (r == NULL)
    return NULL;
  return tl__int(env, tl_host_prune(r->h));
}

/* hostRewatch(handle, critMs) -> 0 or a negative error number. */
static napi_value
tl_napi_host_rewatch(napi_env env, napi_callback_info info)
{
  napi_value argv[2];
  int64_t crit;

  TL_GET_ARGS(env, info, 2, argv);
  tl_hostref_t *r = tl__host_ref(env, argv[0]);
  if (r == NULL)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_int64(env, argv[1], &crit));
  return tl__int(env, tl_host_rewatch(r->h, crit));
}

/* ---- the worker: calls that may wait for another process --------------
 *
 * An event loop never waits for the table's critical section: its calls
 * pass critMs 0, and when another process holds the section (it may be
 * stopped there for ever) the call is handed here, to the attachment's
 * worker thread, which waits as long as it takes and hands the result
 * back through the doorbell's threadsafe function (hostTake). The worker
 * starts with the first call handed to it and is joined at close. Calls
 * run in the order they were handed over; lib/host/ hands over every
 * later request too while any waits here, so that a manager's requests
 * keep their order. */

enum {
  TL_OP_REQUEST = 1,
  TL_OP_RELEASE = 2,
  TL_OP_POLL = 3,
  TL_OP_QUERY = 4,
  TL_OP_REWATCH = 5,
  TL_OP_CLAIM = 6 /* flags: age */
};

/* The worker re-checks `stop` this often while it waits for the
 * section. */
#define TL_WORKER_SLICE_MS 100

struct tl_op_s {
  tl_op_t *next;
  int kind;
  int32_t id; /* lib/host/'s, given back with the result */
  int32_t flags;
  uint32_t node;
  size_t len;
  uint16_t name[TL_HOST_NAME_MAX];
  /* The result, written by the worker before the op moves to `done`. */
  int rc;
  uint64_t token;
  int died;
  tl_poll_list_t poll;
  tl_query_list_t query;
};

static void
tl__op_free(tl_op_t *op)
{
  free(op->poll.items);
  free(op->query.items);
  free(op);
}

static void
tl__op_run(tl_hostref_t *r, tl_op_t *op)
{
  for (;;) {
    switch (op->kind) {
    case TL_OP_REQUEST:
      op->rc =
          tl_host_request(r->h, op->name, op->len, op->flags,
                          TL_WORKER_SLICE_MS, &op->node, &op->token, &op->died);
      break;
    case TL_OP_RELEASE:
      op->rc = tl_host_release(r->h, op->node, TL_WORKER_SLICE_MS);
      break;
    case TL_OP_POLL:
      op->poll.n = 0;
      op->rc =
          tl_host_poll(r->h, tl__poll_visit, &op->poll, TL_WORKER_SLICE_MS);
      break;
    case TL_OP_QUERY:
      op->query.n = 0;
      op->rc =
          tl_host_query(r->h, tl__query_visit, &op->query, TL_WORKER_SLICE_MS);
      break;
    case TL_OP_CLAIM:
      op->poll.n = 0;
      op->rc = tl_host_claim(r->h, op->flags != 0, tl__poll_visit, &op->poll,
                             TL_WORKER_SLICE_MS);
      break;
    default:
      op->rc = tl_host_rewatch(r->h, TL_WORKER_SLICE_MS);
      break;
    }
    if (op->rc != TL_HOST_ETIMEDOUT)
      return;
    tl__hp_mutex_lock(r->ops_lock);
    int stop = r->worker_stop;
    tl__hp_mutex_unlock(r->ops_lock);
    if (stop) {
      op->rc = TL_HOST_ECLOSED;
      return;
    }
  }
}

static void *
tl__host_worker(void *data)
{
  tl_hostref_t *r = data;

  tl__hp_cancel_point(0);
  for (;;) {
    uint32_t w = atomic_load(&r->ops_word);
    tl__hp_mutex_lock(r->ops_lock);
    int stop = r->worker_stop;
    tl_op_t *op = stop ? NULL : r->todo;
    if (op != NULL) {
      r->todo = op->next;
      if (r->todo == NULL)
        r->todo_tail = &r->todo;
    }
    tl__hp_mutex_unlock(r->ops_lock);
    if (stop)
      break;
    if (op == NULL) {
      tl__hp_wait((uint32_t *)&r->ops_word, w, -1);
      continue;
    }
    op->next = NULL;
    tl__op_run(r, op);
    if (r->test_delay_ms > 0 && op->kind == TL_OP_REQUEST) {
      uint32_t idle = 0;
      tl__hp_wait(&idle, 0, r->test_delay_ms);
    }
    tl__hp_mutex_lock(r->ops_lock);
    *r->done_tail = op;
    r->done_tail = &op->next;
    tl__hp_mutex_unlock(r->ops_lock);
    tl__host_ring(r);
  }
  return NULL;
}

/* Stops and joins the worker and frees every op. JS thread, at close. */
static void
tl__worker_stop(tl_hostref_t *r)
{
  if (r->worker != NULL) {
    tl__hp_mutex_lock(r->ops_lock);
    r->worker_stop = 1;
    tl__hp_mutex_unlock(r->ops_lock);
    atomic_fetch_add(&r->ops_word, 1);
    tl__hp_wake((uint32_t *)&r->ops_word, 1);
    tl__hp_thread_join(r->worker);
    r->worker = NULL;
  }
  for (int list = 0; list < 2; list++) {
    tl_op_t *op = list == 0 ? r->todo : r->done;
    while (op != NULL) {
      tl_op_t *next = op->next;
      tl__op_free(op);
      op = next;
    }
  }
  r->todo = r->done = NULL;
  r->todo_tail = &r->todo;
  r->done_tail = &r->done;
}

/* hostDefer(handle, kind, id, nameOrNode, flags) -> 0, or TL_HOST_ETHREAD
 * when the worker thread cannot start (the caller reports it). */
static napi_value
tl_napi_host_defer(napi_env env, napi_callback_info info)
{
  napi_value argv[5];
  int32_t kind, id, flags;

  TL_GET_ARGS(env, info, 5, argv);
  tl_hostref_t *r = tl__host_ref(env, argv[0]);
  if (r == NULL)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_int32(env, argv[1], &kind));
  TL_NAPI_CALL(env, napi_get_value_int32(env, argv[2], &id));
  TL_NAPI_CALL(env, napi_get_value_int32(env, argv[4], &flags));
  tl_op_t *op = calloc(1, sizeof(*op));
  if (op == NULL) {
    napi_throw_error(env, NULL, "threadlock/host: out of memory");
    return NULL;
  }
  op->kind = kind;
  op->id = id;
  op->flags = flags;
  if (kind == TL_OP_REQUEST) {
    uint16_t name[TL_HOST_NAME_MAX + 2];
    if (tl__name_arg(env, argv[3], name, &op->len) != 0 ||
        op->len > TL_HOST_NAME_MAX) {
      free(op);
      napi_throw_range_error(env, NULL, "threadlock/host: bad name");
      return NULL;
    }
    memcpy(op->name, name, op->len * sizeof(uint16_t));
  } else if (kind == TL_OP_RELEASE) {
    TL_NAPI_CALL(env, napi_get_value_uint32(env, argv[3], &op->node));
  }
  if (r->worker == NULL) {
    const char *delay = getenv("THREADLOCK_HOST_TEST_WORKER_DELAY_MS");
    r->test_delay_ms = delay != NULL ? atoi(delay) : 0;
    r->worker_stop = 0;
    r->worker = tl__hp_thread_start(tl__host_worker, r, "tl-host-worker");
    if (r->worker == NULL) {
      free(op);
      return tl__int(env, TL_HOST_ETHREAD);
    }
  }
  tl__hp_mutex_lock(r->ops_lock);
  *r->todo_tail = op;
  r->todo_tail = &op->next;
  tl__hp_mutex_unlock(r->ops_lock);
  atomic_fetch_add(&r->ops_word, 1);
  tl__hp_wake((uint32_t *)&r->ops_word, 1);
  return tl__int(env, 0);
}

/* hostTake(handle) -> [[id, kind, result], ...]: the results of the calls
 * the worker finished, in order; each result as the direct call returns
 * it. */
static napi_value
tl_napi_host_take(napi_env env, napi_callback_info info)
{
  napi_value argv[1], out, items[3], entry;
  uint32_t n = 0;

  TL_GET_ARGS(env, info, 1, argv);
  tl_hostref_t *r = tl__host_ref(env, argv[0]);
  if (r == NULL)
    return NULL;
  tl__hp_mutex_lock(r->ops_lock);
  tl_op_t *op = r->done;
  r->done = NULL;
  r->done_tail = &r->done;
  tl__hp_mutex_unlock(r->ops_lock);
  TL_NAPI_CALL(env, napi_create_array(env, &out));
  while (op != NULL) {
    tl_op_t *next = op->next;
    items[0] = tl__int(env, op->id);
    items[1] = tl__int(env, op->kind);
    switch (op->kind) {
    case TL_OP_REQUEST:
      items[2] = tl__request_result(env, op->rc, op->node, op->token, op->died);
      break;
    case TL_OP_POLL:
    case TL_OP_CLAIM:
      items[2] = tl__poll_result(env, op->rc, &op->poll);
      break;
    case TL_OP_QUERY:
      items[2] = tl__query_result(env, op->rc, &op->query);
      break;
    default:
      items[2] = tl__int(env, op->rc);
      break;
    }
    tl__op_free(op);
    op = next;
    if (items[2] == NULL || (entry = tl__array(env, items, 3)) == NULL ||
        napi_set_element(env, out, n++, entry) != napi_ok) {
      while (op != NULL) {
        next = op->next;
        tl__op_free(op);
        op = next;
      }
      return NULL;
    }
  }
  return out;
}

/* hostRef(handle, keepAlive): whether the doorbell keeps the loop alive. */
static napi_value
tl_napi_host_ref(napi_env env, napi_callback_info info)
{
  napi_value argv[2];
  bool keep;

  TL_GET_ARGS(env, info, 2, argv);
  tl_hostref_t *r = tl__host_ref(env, argv[0]);
  if (r == NULL)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_bool(env, argv[1], &keep));
  if (keep)
    TL_NAPI_CALL(env, napi_ref_threadsafe_function(env, r->tsfn));
  else
    TL_NAPI_CALL(env, napi_unref_threadsafe_function(env, r->tsfn));
  return NULL;
}

static napi_value
tl_napi_host_close(napi_env env, napi_callback_info info)
{
  napi_value argv[1];
  void *p = NULL;

  TL_GET_ARGS(env, info, 1, argv);
  TL_NAPI_CALL(env, napi_get_value_external(env, argv[0], &p));
  tl__host_close(p, 1);
  return NULL;
}

/* hostStats(handle) -> [slot, nodes in use, slots attached, names,
 * walked], or a negative error number. */
static napi_value
tl_napi_host_stats(napi_env env, napi_callback_info info)
{
  napi_value argv[1], items[5];
  uint32_t v[4];
  uint64_t walked = 0;

  TL_GET_ARGS(env, info, 1, argv);
  tl_hostref_t *r = tl__host_ref(env, argv[0]);
  if (r == NULL)
    return NULL;
  int st = tl_host_stats(r->h, &v[0], &v[1], &v[2], &v[3], &walked);
  if (st < 0)
    return tl__int(env, st);
  for (int i = 0; i < 4; i++)
    items[i] = tl__int(env, v[i]);
  items[4] = tl__int(env, (int64_t)walked);
  return tl__array(env, items, 5);
}

napi_value
tl__host_exports(napi_env env, napi_value exports)
{
  static const struct {
    const char *name;
    napi_callback cb;
  } fns[] = {
    { "hostAttach", tl_napi_host_attach },
    { "hostRequest", tl_napi_host_request },
    { "hostWait", tl_napi_host_wait },
    { "hostRelease", tl_napi_host_release },
    { "hostPoll", tl_napi_host_poll },
    { "hostQuery", tl_napi_host_query },
    { "hostRewatch", tl_napi_host_rewatch },
    { "hostClaim", tl_napi_host_claim },
    { "hostPrune", tl_napi_host_prune },
    { "hostDefer", tl_napi_host_defer },
    { "hostTake", tl_napi_host_take },
    { "hostRef", tl_napi_host_ref },
    { "hostClose", tl_napi_host_close },
    { "hostStats", tl_napi_host_stats },
  };
  napi_value v;

  for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
    TL_NAPI_CALL(env, napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH,
                                           fns[i].cb, NULL, &v));
    TL_NAPI_CALL(env, napi_set_named_property(env, exports, fns[i].name, v));
  }
  /* Flags, states and errors, written once here and frozen for lib/. */
  static const struct {
    const char *name;
    int value;
  } constants[] = {
    { "EXCLUSIVE", TL_HOST_EXCLUSIVE },
    { "SYNC", TL_HOST_SYNC },
    { "IF_AVAILABLE", TL_HOST_IF_AVAILABLE },
    { "STEAL", TL_HOST_STEAL },
    { "NO_BARGE", TL_HOST_NO_BARGE },
    { "WAITING", TL_HOST_WAITING },
    { "HELD", TL_HOST_HELD },
    { "STOLEN", TL_HOST_STOLEN },
    { "UNAVAILABLE", TL_HOST_UNAVAILABLE },
    { "OFFERED", TL_HOST_OFFERED },
    { "REWATCH", TL_HOST_REWATCH },
    { "ECORRUPT", TL_HOST_ECORRUPT },
    { "ENAMES", TL_HOST_ENAMES },
    { "ENODES", TL_HOST_ENODES },
    { "ETIMEDOUT", TL_HOST_ETIMEDOUT },
    { "EINTR", TL_HOST_EINTR },
    { "ENOTMINE", TL_HOST_ENOTMINE },
    { "EAGAIN", TL_HOST_EAGAIN },
    { "ETHREAD", TL_HOST_ETHREAD },
    { "ECLOSED", TL_HOST_ECLOSED },
    { "OP_REQUEST", TL_OP_REQUEST },
    { "OP_RELEASE", TL_OP_RELEASE },
    { "OP_POLL", TL_OP_POLL },
    { "OP_QUERY", TL_OP_QUERY },
    { "OP_REWATCH", TL_OP_REWATCH },
    { "OP_CLAIM", TL_OP_CLAIM },
    { "ESYS", TL_HOST_ESYS },
    { "EFSTYPE", TL_HOST_EFSTYPE },
    { "EUNSAFE", TL_HOST_EUNSAFE },
    { "EVERSION", TL_HOST_EVERSION },
    { "EATTACH", TL_HOST_EATTACH },
    { "NAME_MAX", TL_HOST_NAME_MAX },
    { "SLOTS", TL_HOST_SLOTS },
    { "NODES", TL_HOST_NODES },
    { "NAMES", TL_HOST_NAMES },
  };
  napi_value table, c;

  TL_NAPI_CALL(env, napi_create_object(env, &table));
  for (size_t i = 0; i < sizeof(constants) / sizeof(constants[0]); i++) {
    TL_NAPI_CALL(env, napi_create_int32(env, constants[i].value, &c));
    TL_NAPI_CALL(env,
                 napi_set_named_property(env, table, constants[i].name, c));
  }
  /* Whether the process helper serves the managers (futex_waitv), for
   * the tests, which count the helper threads. */
  TL_NAPI_CALL(env, napi_create_int32(env, tl__hp_waitv_supported(), &c));
  TL_NAPI_CALL(env, napi_set_named_property(env, table, "WAITV", c));
  TL_NAPI_CALL(env, napi_object_freeze(env, table));
  TL_NAPI_CALL(env,
               napi_set_named_property(env, exports, "hostConstants", table));
  TL_NAPI_CALL(env, napi_get_boolean(env, true, &v));
  TL_NAPI_CALL(env, napi_set_named_property(env, exports, "hostSupported", v));
  return exports;
}

#else

napi_value
tl__host_exports(napi_env env, napi_value exports)
{
  napi_value v;
  TL_NAPI_CALL(env, napi_get_boolean(env, false, &v));
  TL_NAPI_CALL(env, napi_set_named_property(env, exports, "hostSupported", v));
  return exports;
}

#endif
