/* Node-API glue for the waiter list.
 *
 * Converts already-validated arguments (lib/ does the spec's checks and
 * coercions) and owns the per-thread state: the threadsafe function that
 * resolves waitAsync promises, the timer for async deadlines, the list of
 * pending async waiters and the cleanup hook that tears them down. The list
 * logic itself lives in the core (table.c, gates.c, owners.c).
 */
#include <node_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "platform.h"
#include "singleton.h"
#include "waiters.h"

#define TL_NAPI_CALL(env, call)                                                \
  do {                                                                         \
    if ((call) != napi_ok) {                                                   \
      tl__throw_last((env), #call);                                            \
      return NULL;                                                             \
    }                                                                          \
  } while (0)

/* For callbacks that cannot throw (tsfn, timers, finalizers, hooks). */
#define TL_NAPI_FATAL(call)                                                    \
  do {                                                                         \
    if ((call) != napi_ok)                                                     \
      napi_fatal_error("threadlock", NAPI_AUTO_LENGTH, #call,                  \
                       NAPI_AUTO_LENGTH);                                      \
  } while (0)

#define TL_GET_ARGS(env, info, n, argv)                                        \
  do {                                                                         \
    size_t argc_ = (n);                                                        \
    TL_NAPI_CALL(env, napi_get_cb_info(env, info, &argc_, argv, NULL, NULL));  \
  } while (0)

/* How often a sync waiter checks whether its thread is being terminated. */
#define TL_PROBE_SLICE_NS (10 * 1000 * 1000)

#define TL_NO_HEAP UINT32_MAX

typedef struct tl_env_s tl_env_t;

/* What an async node stands for. */
enum {
  TL_NODE_WAIT = 0, /* a plain waitAsync */
  TL_NODE_GATE = 1, /* a lock, semaphore or read-write lock request */
  TL_NODE_NAMED = 2 /* a named lock request, then the held lock */
};

/* An async waiter. Allocated and freed on its env's thread. While enqueued
 * it belongs to the waiter table; a notify hands it to the env's ready
 * queue; the env's thread takes it from there, resolves it and frees it. */
typedef struct tl_async_s {
  tl_waiter_t w;                  /* must stay first */
  tl_env_t *env;                  /* immutable */
  struct tl_async_s *ready_next;  /* protected by env->ready_lock */
  struct tl_async_s *drain_next;  /* env thread: the batch being resolved */
  struct tl_async_s *prev, *next; /* env->pending; env thread only */
  napi_deferred deferred;         /* env thread only */
  const void *keep;    /* env thread: the buffer kept alive (tl__keep) */
  uint64_t deadline;   /* env thread; UINT64_MAX when there is none */
  uint32_t heap_index; /* env thread; TL_NO_HEAP when not in the heap */
  uint8_t ref;         /* keeps the event loop alive while pending */
  uint8_t kind;        /* TL_NODE_*; immutable */
  uint8_t events;      /* named nodes: TL_NAMED_EVENT_* bits; ready_lock */
  uint8_t in_ready;    /* named nodes: queued for call_js; ready_lock */
  uint8_t done_events; /* named nodes: the events being delivered */
  uint8_t has_token;   /* a cancel token (external) exists and frees it */
  uint8_t done;        /* resolved; env thread only */
} tl_async_t;

/* A named lock request; once granted, the held lock. Lives in its env's
 * pending list from the request until release, cancel or teardown. */
typedef struct tl_named_node_s {
  tl_async_t a; /* must stay first */
  tl_named_t r; /* linked into the names table */
  uint32_t id;  /* reported to JS when the lock is stolen */
} tl_named_node_t;

/* One reference per buffer with pending waiters of a thread, counted: a
 * freed buffer's address could be reused, so its memory must outlive every
 * waiter on it, but one reference per waiter would cost a handle each. */
#define TL_KEEP_BUCKETS 64
typedef struct tl_keep_s {
  struct tl_keep_s *next; /* hash chain; env thread only */
  const void *base;       /* the buffer's data; immutable */
  napi_ref ref;           /* a typed array over it; immutable */
  size_t count;           /* pending waiters on it; env thread only */
} tl_keep_t;

struct tl_env_s {
  napi_env env;
  napi_threadsafe_function tsfn;
  uv_timer_t *timer; /* freed by its close callback */
  tl_mutex_t ready_lock;
  tl_async_t *ready_head; /* protected by ready_lock */
  tl_async_t *ready_tail; /* protected by ready_lock */
  tl_async_t *pending;    /* env thread: not yet resolved */
  tl_async_t **heap;      /* env thread: min-heap by deadline */
  uint32_t heap_len;
  uint32_t heap_cap;
  size_t refs;            /* env thread: pending waiters with ref */
  uint32_t lock_id;       /* 0 until registered */
  uint32_t next_named_id; /* env thread */
  napi_ref noop;          /* a native no-op, called by the probe */
  napi_ref on_stolen;     /* JS function told the id of a stolen lock */
  napi_ref results;       /* ["ok", "timed-out"], made once per thread */
  tl_keep_t *keeps[TL_KEEP_BUCKETS]; /* env thread: buffers kept alive */
  int closing;                       /* env thread */
};

static void
tl__throw_last(napi_env env, const char *what)
{
  const napi_extended_error_info *info = NULL;
  bool pending = false;

  napi_is_exception_pending(env, &pending);
  if (pending)
    return;
  napi_get_last_error_info(env, &info);
  napi_throw_error(
      env, NULL,
      info != NULL && info->error_message != NULL ? info->error_message : what);
}

/* The deadline heap. Env thread only. */

static int
tl__heap_less(tl_env_t *e, uint32_t a, uint32_t b)
{
  return e->heap[a]->deadline < e->heap[b]->deadline;
}

static void
tl__heap_swap(tl_env_t *e, uint32_t a, uint32_t b)
{
  tl_async_t *t = e->heap[a];
  e->heap[a] = e->heap[b];
  e->heap[b] = t;
  e->heap[a]->heap_index = a;
  e->heap[b]->heap_index = b;
}

static void
tl__heap_fix(tl_env_t *e, uint32_t i)
{
  while (i > 0 && tl__heap_less(e, i, (i - 1) / 2)) {
    tl__heap_swap(e, i, (i - 1) / 2);
    i = (i - 1) / 2;
  }
  for (;;) {
    uint32_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < e->heap_len && tl__heap_less(e, l, m))
      m = l;
    if (r < e->heap_len && tl__heap_less(e, r, m))
      m = r;
    if (m == i)
      break;
    tl__heap_swap(e, i, m);
    i = m;
  }
}

static int
tl__heap_push(tl_env_t *e, tl_async_t *n)
{
  if (e->heap_len == e->heap_cap) {
    uint32_t cap = e->heap_cap ? e->heap_cap * 2 : 64;
    tl_async_t **grown = realloc(e->heap, cap * sizeof(*grown));
    if (grown == NULL)
      return -1;
    e->heap = grown;
    e->heap_cap = cap;
  }
  n->heap_index = e->heap_len;
  e->heap[e->heap_len++] = n;
  tl__heap_fix(e, n->heap_index);
  return 0;
}

static void
tl__heap_remove(tl_env_t *e, tl_async_t *n)
{
  uint32_t i = n->heap_index;

  if (i == TL_NO_HEAP)
    return;
  n->heap_index = TL_NO_HEAP;
  e->heap_len--;
  if (i != e->heap_len) {
    e->heap[i] = e->heap[e->heap_len];
    e->heap[i]->heap_index = i;
    tl__heap_fix(e, i);
  }
}

/* Buffers kept alive. Env thread only. */

static tl_keep_t **
tl__keep_slot(tl_env_t *e, const void *base)
{
  uint64_t h = (uint64_t)(uintptr_t)base * UINT64_C(0x9E3779B97F4A7C15);
  tl_keep_t **p = &e->keeps[h >> 58];

  while (*p != NULL && (*p)->base != base)
    p = &(*p)->next;
  return p;
}

/* Keeps the buffer under `ta` alive until the matching tl__unkeep; sets
 * *base to what tl__unkeep takes. */
static int
tl__keep(napi_env env, tl_env_t *e, napi_value ta, const void **base)
{
  void *data;
  size_t offset;
  tl_keep_t **p, *k;

  if (napi_get_typedarray_info(env, ta, NULL, NULL, &data, NULL, &offset) !=
      napi_ok)
    return -1;
  *base = (const char *)data - offset;
  p = tl__keep_slot(e, *base);
  if (*p != NULL) {
    (*p)->count++;
    return 0;
  }
  k = malloc(sizeof(*k));
  if (k == NULL)
    return -1;
  if (napi_create_reference(env, ta, 1, &k->ref) != napi_ok) {
    free(k);
    return -1;
  }
  k->next = NULL;
  k->base = *base;
  k->count = 1;
  *p = k;
  return 0;
}

static void
tl__unkeep(tl_env_t *e, const void *base)
{
  tl_keep_t **p = tl__keep_slot(e, base), *k = *p;

  if (k == NULL || --k->count > 0)
    return;
  *p = k->next;
  napi_delete_reference(e->env, k->ref);
  free(k);
}

/* Ready queue. */

/* Appends `n`; returns whether the queue was empty. Expects ready_lock. */
static int
tl__ready_append(tl_env_t *e, tl_async_t *n)
{
  int was_empty = e->ready_head == NULL;

  n->ready_next = NULL;
  if (was_empty)
    e->ready_head = n;
  else
    e->ready_tail->ready_next = n;
  e->ready_tail = n;
  return was_empty;
}

/* After an append that found the queue empty, asks the env's thread to
 * drain it. A closing function refuses the call, which is fine: teardown
 * frees the nodes either way. */
static void
tl__ready_kick(tl_env_t *e, int was_empty)
{
  if (was_empty)
    napi_call_threadsafe_function(e->tsfn, NULL, napi_tsfn_nonblocking);
}

/* Runs on any thread: the notifier's (under the bucket lock, through the
 * settle callback) or the env's own timer. Takes ownership of `n`. One
 * threadsafe call is made per batch: only when the queue was empty. */
static void
tl__make_ready(tl_async_t *n)
{
  tl_env_t *e = n->env;
  int was_empty;

  tl_mutex_lock(&e->ready_lock);
  was_empty = tl__ready_append(e, n);
  tl_mutex_unlock(&e->ready_lock);
  tl__ready_kick(e, was_empty);
}

static void
tl__settle(tl_waiter_t *w)
{
  tl__make_ready((tl_async_t *)w);
}

static void tl__arm_timer(tl_env_t *e);

/* Env thread, from the event loop. Moves expired waiters to the ready
 * queue; a waiter that a notify took first is already on its way there. */
static void
tl__on_timer(uv_timer_t *timer)
{
  tl_env_t *e = timer->data;
  uint64_t now = tl_now_ns();

  while (e->heap_len > 0 && e->heap[0]->deadline <= now) {
    tl_async_t *n = e->heap[0];
    tl__heap_remove(e, n);
    if (tl_cancel(&n->w, TL_TIMED_OUT))
      tl__make_ready(n);
  }
  tl__arm_timer(e);
}

/* Env thread. Points the single timer at the earliest deadline. */
static void
tl__arm_timer(tl_env_t *e)
{
  uint64_t now, ms;

  if (e->heap_len == 0) {
    uv_timer_stop(e->timer);
    return;
  }
  now = tl_now_ns();
  /* Round up so that the timer never fires before the deadline; if the
   * loop's clock still runs it early, the callback re-arms. */
  ms = e->heap[0]->deadline > now
           ? (e->heap[0]->deadline - now + 999999) / 1000000
           : 0;
  uv_timer_start(e->timer, tl__on_timer, ms, 0);
}

/* Env thread. Keeps the loop alive while ref'd waiters are pending. */
static void
tl__ref(tl_env_t *e, tl_async_t *n, int delta)
{
  if (!n->ref)
    return;
  if (delta > 0 && e->refs++ == 0)
    TL_NAPI_FATAL(napi_ref_threadsafe_function(e->env, e->tsfn));
  if (delta < 0 && --e->refs == 0)
    TL_NAPI_FATAL(napi_unref_threadsafe_function(e->env, e->tsfn));
}

/* Env thread. Frees a retired node once nothing refers to it: no token
 * (whose finalizer frees it otherwise) and, for a named node, no event on
 * its way through the ready queue (tl__call_js frees it then). A retired
 * node is out of every shared table, so only this thread still writes
 * in_ready and no lock is needed; nor is the env, which may be gone when a
 * token's finalizer runs at teardown. */
static void
tl__maybe_free(tl_async_t *n)
{
  if (n->done && !n->has_token && !n->in_ready)
    free(n);
}

/* Env thread. Takes `n` off the env's books; frees it unless a cancel
 * token or a queued event still points at it. */
static void
tl__retire(tl_env_t *e, tl_async_t *n)
{
  tl__heap_remove(e, n);
  if (n->prev != NULL)
    n->prev->next = n->next;
  else
    e->pending = n->next;
  if (n->next != NULL)
    n->next->prev = n->prev;
  n->prev = n->next = NULL;
  tl__ref(e, n, -1);
  if (n->keep != NULL) {
    tl__unkeep(e, n->keep);
    n->keep = NULL;
  }
  n->done = 1;
  tl__maybe_free(n);
}

/* Env thread: ends a request that JavaScript withdrew. Its promise, still
 * pending, is settled with `value` anyway, since nobody listens any more
 * but its handle must be released; then the node is retired. */
static void
tl__withdraw(napi_env env, tl_async_t *n, napi_value value)
{
  if (n->deferred != NULL && value != NULL)
    napi_resolve_deferred(env, n->deferred, value);
  n->deferred = NULL;
  tl__retire(n->env, n);
}

/* Any thread, under the names table lock: a grant or steal for `r`. The
 * node is queued for its env's thread once; events that come before that
 * thread runs are merged. */
static void
tl__named_event(tl_named_t *r, int event)
{
  tl_named_node_t *nn =
      (tl_named_node_t *)((char *)r - offsetof(tl_named_node_t, r));
  tl_async_t *n = &nn->a;
  tl_env_t *e = n->env;
  int was_empty = 0;

  tl_mutex_lock(&e->ready_lock);
  n->events |= (uint8_t)event;
  if (!n->in_ready) {
    n->in_ready = 1;
    was_empty = tl__ready_append(e, n);
  }
  tl_mutex_unlock(&e->ready_lock);
  tl__ready_kick(e, was_empty);
}

/* Env thread: a queued request was granted (its promise resolves to true
 * and it stops keeping the loop alive), and/or a held lock was stolen (JS
 * hears its id). The node stays booked until its holder releases it. */
static void
tl__named_deliver(napi_env env, tl_env_t *e, tl_named_node_t *nn)
{
  tl_async_t *n = &nn->a;
  napi_handle_scope scope;
  napi_value v, fn, recv;

  TL_NAPI_FATAL(napi_open_handle_scope(env, &scope));
  if ((n->done_events & TL_NAMED_EVENT_GRANTED) && n->deferred != NULL) {
    TL_NAPI_FATAL(napi_get_boolean(env, true, &v));
    napi_resolve_deferred(env, n->deferred, v);
    n->deferred = NULL;
    tl__ref(e, n, -1);
    n->ref = 0;
  }
  if ((n->done_events & TL_NAMED_EVENT_STOLEN) && e->on_stolen != NULL &&
      napi_get_reference_value(env, e->on_stolen, &fn) == napi_ok &&
      fn != NULL) {
    TL_NAPI_FATAL(napi_get_undefined(env, &recv));
    TL_NAPI_FATAL(napi_create_uint32(env, nn->id, &v));
    /* A throwing handler is the JS layer's bug; Node reports it. */
    napi_call_function(env, recv, fn, 1, &v, NULL);
  }
  n->done_events = 0;
  napi_close_handle_scope(env, scope);
}

/* Env thread: a barging-mode release woke the lock request `n` without
 * handing it the lock. Competes for it again; returns 1 if the request went
 * back to the front of the queue (still pending), else 0 with *state set
 * for the resolution. Past its deadline it only tries once. */
static int
tl__gate_retry(tl_env_t *e, tl_async_t *n, int *state)
{
  int r;

  r = tl_gate_retry_async(&n->w);
  if (r == TL_RESULT_PENDING) {
    /* Past its deadline it only tries once. It was woken, so it must try
     * (that hands the word's woken bit back) before it may leave. */
    if (n->deadline != UINT64_MAX && tl_now_ns() >= n->deadline &&
        tl_cancel(&n->w, TL_TIMED_OUT)) {
      *state = TL_TIMED_OUT;
      return 0;
    }
    if (n->deadline != UINT64_MAX && n->heap_index == TL_NO_HEAP &&
        tl__heap_push(e, n) == 0 && n->heap_index == 0)
      tl__arm_timer(e);
    return 1;
  }
  if (r == TL_RESULT_ACQUIRED || r == TL_RESULT_OWNER_DIED) {
    n->w.owner_died = r == TL_RESULT_OWNER_DIED;
    *state = TL_NOTIFIED;
  } else {
    *state = TL_TIMED_OUT;
  }
  return 0;
}

/* Env thread, from the threadsafe function: resolves every ready waiter in
 * one pass. `env` is NULL while the function is being torn down; teardown
 * frees the nodes then. */
static void
tl__call_js(napi_env env, napi_value js_cb, void *context, void *data)
{
  tl_env_t *e = context;
  tl_async_t *n, *next;
  napi_value results, ok, timed_out;

  (void)js_cb;
  (void)data;
  if (env == NULL)
    return;
  /* The two result strings are made once per thread, and read once per
   * batch, into the scope of this call. Reading fails only once the thread
   * can no longer run JavaScript; teardown then frees the queued nodes. */
  if (napi_get_reference_value(env, e->results, &results) != napi_ok ||
      napi_get_element(env, results, 0, &ok) != napi_ok ||
      napi_get_element(env, results, 1, &timed_out) != napi_ok)
    return;

  /* Take the batch. A named node may get another event once it left the
   * queue, which relinks ready_next; the batch runs on drain_next. */
  tl_mutex_lock(&e->ready_lock);
  for (n = e->ready_head; n != NULL; n = n->ready_next) {
    /* A named node stays marked in_ready until it was handled below, so
     * that neither a release nor its token's finalizer frees it first. */
    n->drain_next = n->ready_next;
    n->done_events = n->events;
    n->events = 0;
  }
  n = e->ready_head;
  e->ready_head = e->ready_tail = NULL;
  tl_mutex_unlock(&e->ready_lock);

  for (; n != NULL; n = next) {
    napi_handle_scope scope;
    napi_value result;
    int state = atomic_load(&n->w.state);

    next = n->drain_next;
    if (n->kind == TL_NODE_NAMED) {
      int was_empty = 0;
      if (!n->done)
        tl__named_deliver(env, e, (tl_named_node_t *)n);
      /* Events that came while it was handled go around once more. */
      tl_mutex_lock(&e->ready_lock);
      n->in_ready = 0;
      if (n->events != 0) {
        n->in_ready = 1;
        was_empty = tl__ready_append(e, n);
      }
      tl_mutex_unlock(&e->ready_lock);
      tl__ready_kick(e, was_empty);
      tl__maybe_free(n);
      continue;
    }
    if (n->kind == TL_NODE_GATE && state == TL_NOTIFIED && !n->w.granted &&
        tl__gate_retry(e, n, &state))
      continue;
    TL_NAPI_FATAL(napi_open_handle_scope(env, &scope));
    if (n->kind == TL_NODE_GATE) {
      int code = state == TL_NOTIFIED ? (n->w.owner_died ? TL_RESULT_OWNER_DIED
                                                         : TL_RESULT_ACQUIRED)
                                      : TL_RESULT_TIMED_OUT;
      TL_NAPI_FATAL(napi_create_int32(env, code, &result));
    } else {
      result = state == TL_NOTIFIED ? ok : timed_out;
    }
    /* Resolving can only fail when the thread is going away; teardown
     * then reclaims the node. */
    napi_resolve_deferred(env, n->deferred, result);
    n->deferred = NULL;
    napi_close_handle_scope(env, scope);
    tl__retire(e, n);
  }
  tl__arm_timer(e);
}

static void
tl__timer_closed(uv_handle_t *handle)
{
  free(handle);
}

/* Env thread, while the env is torn down (worker exit, terminate(), main
 * thread exit). After the cancels below no other thread can reach a node of
 * this env: every one is either cancelled or already on the ready queue,
 * and every settle callback ran to its end under a bucket lock that
 * tl_cancel took. Only then is the id given up, so that locks the thread
 * still holds pass to their waiters. */
static void
tl__env_cleanup(void *arg)
{
  tl_env_t *e = arg;
  tl_async_t *n, *next;

  e->closing = 1;
  for (n = e->pending; n != NULL; n = n->next) {
    if (n->kind == TL_NODE_NAMED)
      tl_named_release(&((tl_named_node_t *)n)->r);
    else if (!tl_cancel(&n->w, TL_CANCELLED) && n->kind == TL_NODE_GATE)
      tl_gate_abandon(&n->w); /* granted or woken, but never delivered */
  }
  if (e->lock_id != 0)
    tl_thread_unregister(e->lock_id);

  for (n = e->pending; n != NULL; n = next) {
    next = n->next;
    n->ready_next = NULL;
    n->heap_index = TL_NO_HEAP;
    n->prev = NULL;
    e->pending = next;
    n->keep = NULL;
    n->done = 1;
    if (!n->has_token)
      free(n);
  }
  e->ready_head = e->ready_tail = NULL;
  for (size_t i = 0; i < TL_KEEP_BUCKETS; i++) {
    tl_keep_t *k, *knext;
    for (k = e->keeps[i]; k != NULL; k = knext) {
      knext = k->next;
      napi_delete_reference(e->env, k->ref);
      free(k);
    }
    e->keeps[i] = NULL;
  }
  free(e->heap);
  e->heap = NULL;
  e->heap_len = e->heap_cap = 0;
  uv_close((uv_handle_t *)e->timer, tl__timer_closed);
  if (e->noop != NULL)
    napi_delete_reference(e->env, e->noop);
  e->noop = NULL;
  if (e->on_stolen != NULL)
    napi_delete_reference(e->env, e->on_stolen);
  e->on_stolen = NULL;
  if (e->results != NULL)
    napi_delete_reference(e->env, e->results);
  e->results = NULL;
  napi_release_threadsafe_function(e->tsfn, napi_tsfn_abort);
}

/* Runs when the threadsafe function is gone; nothing refers to `e` after. */
static void
tl__tsfn_finalize(napi_env env, void *data, void *hint)
{
  tl_env_t *e = data;

  (void)env;
  (void)hint;
  tl_mutex_destroy(&e->ready_lock);
  free(e);
}

/* Termination probe: a call into JS fails once the env is stopping, which
 * is how a sync waiter notices worker.terminate() or process exit. */
static int
tl__probe(void *data)
{
  tl_env_t *e = data;
  napi_handle_scope scope;
  napi_value fn, recv;
  napi_status status;

  if (napi_open_handle_scope(e->env, &scope) != napi_ok)
    return 1;
  status = napi_get_reference_value(e->env, e->noop, &fn);
  if (status == napi_ok)
    status = napi_get_undefined(e->env, &recv);
  if (status == napi_ok)
    status = napi_call_function(e->env, recv, fn, 0, NULL, NULL);
  napi_close_handle_scope(e->env, scope);
  return status != napi_ok;
}

static napi_value
tl__noop(napi_env env, napi_callback_info info)
{
  (void)env;
  (void)info;
  return NULL;
}

static tl_env_t *
tl__env(napi_env env)
{
  void *data = NULL;
  napi_get_instance_data(env, &data);
  return data;
}

/* Reads the typed array and element index: the address and element size. */
static int
tl__element(napi_env env, napi_value ta, napi_value index, void **addr,
            int *width)
{
  napi_typedarray_type type;
  size_t length;
  void *data;
  int64_t i;

  if (napi_get_typedarray_info(env, ta, &type, &length, &data, NULL, NULL) !=
          napi_ok ||
      napi_get_value_int64(env, index, &i) != napi_ok)
    return -1;
  *width = type == napi_bigint64_array ? 8 : 4;
  if (type != napi_bigint64_array && type != napi_int32_array) {
    napi_throw_type_error(env, NULL, "expected an Int32Array or BigInt64Array");
    return -1;
  }
  if (i < 0 || (uint64_t)i >= length) {
    napi_throw_range_error(env, NULL, "index out of range");
    return -1;
  }
  *addr = (char *)data + (size_t)i * (size_t)*width;
  return 0;
}

static int
tl__expected(napi_env env, napi_value v, int width, int64_t *out)
{
  if (width == 8) {
    bool lossless;
    return napi_get_value_bigint_int64(env, v, out, &lossless) == napi_ok ? 0
                                                                          : -1;
  }
  int32_t i32;
  if (napi_get_value_int32(env, v, &i32) != napi_ok)
    return -1;
  *out = i32;
  return 0;
}

static napi_value
tl__int(napi_env env, int64_t v)
{
  napi_value r;
  if (napi_create_int64(env, v, &r) != napi_ok)
    return NULL;
  return r;
}

/* wait(ta, index, value, timeoutMs) -> result code. */
static napi_value
tl_napi_wait(napi_env env, napi_callback_info info)
{
  napi_value argv[4];
  tl_env_t *e = tl__env(env);
  tl_probe_t probe = { tl__probe, e, TL_PROBE_SLICE_NS };
  void *addr;
  int width;
  int64_t expected;
  double timeout;

  TL_GET_ARGS(env, info, 4, argv);
  if (tl__element(env, argv[0], argv[1], &addr, &width) != 0 ||
      tl__expected(env, argv[2], width, &expected) != 0)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_double(env, argv[3], &timeout));
  return tl__int(env, tl_wait(addr, width, expected, timeout, &probe));
}

/* notify(ta, index, count) -> woken; count is +Infinity or an integer. */
static napi_value
tl_napi_notify(napi_env env, napi_callback_info info)
{
  napi_value argv[3];
  void *addr;
  int width;
  double count;

  TL_GET_ARGS(env, info, 3, argv);
  if (tl__element(env, argv[0], argv[1], &addr, &width) != 0)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_double(env, argv[2], &count));
  return tl__int(
      env, tl_notify(addr, count >= 9007199254740992.0 ? -1 : (int64_t)count));
}

/* Creates a pending node for the calling env; NULL with an exception. */
static tl_async_t *
tl__new_async(napi_env env, tl_env_t *e, double timeout, int ref, int kind)
{
  tl_async_t *n = calloc(1, sizeof(*n));

  if (n == NULL) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  tl_waiter_init_async(&n->w, tl__settle);
  n->env = e;
  n->heap_index = TL_NO_HEAP;
  n->ref = (uint8_t)(ref != 0);
  n->kind = (uint8_t)kind;
  n->deadline = UINT64_MAX;
  if (timeout >= 0 && timeout < 1e15) {
    uint64_t ns = (uint64_t)(timeout * 1e6);
    if ((double)ns < timeout * 1e6)
      ns++;
    n->deadline = tl_now_ns() + ns;
  }
  return n;
}

/* Env thread: `n` was enqueued; book it and return its promise. */
static napi_value
tl__track(napi_env env, tl_env_t *e, tl_async_t *n, napi_value ta)
{
  napi_value promise;

  /* The typed array is alive in this call, so the buffer cannot go away
   * before the keep is taken, even if a notify already took the node. */
  if (tl__keep(env, e, ta, &n->keep) != 0 ||
      napi_create_promise(env, &n->deferred, &promise) != napi_ok ||
      (n->deadline != UINT64_MAX && tl__heap_push(e, n) != 0)) {
    /* Undo the enqueue; nobody else has seen the node unless a notify
     * already took it, in which case it resolves through the queue. */
    if (tl_cancel(&n->w, TL_CANCELLED)) {
      if (n->keep != NULL)
        tl__unkeep(e, n->keep);
      free(n);
    }
    tl__throw_last(env, "napi_create_promise");
    return NULL;
  }
  n->next = e->pending;
  if (e->pending != NULL)
    e->pending->prev = n;
  e->pending = n;
  tl__ref(e, n, +1);
  if (n->heap_index == 0)
    tl__arm_timer(e);
  return promise;
}

/* waiterCount(ta, index) -> waiters enqueued on that element. */
static napi_value
tl_napi_waiter_count(napi_env env, napi_callback_info info)
{
  napi_value argv[2];
  void *addr;
  int width;

  TL_GET_ARGS(env, info, 2, argv);
  if (tl__element(env, argv[0], argv[1], &addr, &width) != 0)
    return NULL;
  return tl__int(env, (int64_t)tl_waiter_count(addr));
}

static napi_value
tl_napi_total_waiters(napi_env env, napi_callback_info info)
{
  (void)info;
  return tl__int(env, (int64_t)tl_waiter_total());
}

/* Reads the gate arguments shared by the acquire and release functions:
 * (i32, index, gate, id, amount) starting at argv[0]. */
static int
tl__gate_args(napi_env env, napi_value *argv, void **addr, int32_t *gate,
              uint32_t *id, uint32_t *amount)
{
  int width;

  if (tl__element(env, argv[0], argv[1], addr, &width) != 0)
    return -1;
  if (width != 4) {
    napi_throw_type_error(env, NULL, "a gate word must be an Int32Array");
    return -1;
  }
  if (napi_get_value_int32(env, argv[2], gate) != napi_ok ||
      napi_get_value_uint32(env, argv[3], id) != napi_ok ||
      napi_get_value_uint32(env, argv[4], amount) != napi_ok) {
    tl__throw_last(env, "gate arguments");
    return -1;
  }
  return 0;
}

/* gateAcquire(i32, index, gate, id, amount, timeoutMs) -> code. */
static napi_value
tl_napi_gate_acquire(napi_env env, napi_callback_info info)
{
  napi_value argv[6];
  tl_env_t *e = tl__env(env);
  tl_probe_t probe = { tl__probe, e, TL_PROBE_SLICE_NS };
  void *addr;
  int32_t gate;
  uint32_t id, amount;
  double timeout;

  TL_GET_ARGS(env, info, 6, argv);
  if (tl__gate_args(env, argv, &addr, &gate, &id, &amount) != 0)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_double(env, argv[5], &timeout));
  return tl__int(env, tl_gate_acquire(addr, gate, id, amount, timeout, &probe));
}

/* gateRelease(i32, index, gate, id, amount) -> 0 or a TL_E* code. */
static napi_value
tl_napi_gate_release(napi_env env, napi_callback_info info)
{
  napi_value argv[5];
  void *addr;
  int32_t gate;
  uint32_t id, amount;

  TL_GET_ARGS(env, info, 5, argv);
  if (tl__gate_args(env, argv, &addr, &gate, &id, &amount) != 0)
    return NULL;
  return tl__int(env, tl_gate_release(addr, gate, id, amount));
}

static void
tl__token_finalize(napi_env env, void *data, void *hint)
{
  tl_async_t *n = data;

  (void)env;
  (void)hint;
  n->has_token = 0;
  tl__maybe_free(n);
}

/* Returns [promise, token] for a request whose node `n` can be cancelled
 * from JavaScript; the token's finalizer frees the node once both are done
 * with it. */
static napi_value
tl__with_token(napi_env env, tl_async_t *n, napi_value promise)
{
  napi_value token, pair;

  n->has_token = 1;
  TL_NAPI_CALL(env,
               napi_create_external(env, n, tl__token_finalize, NULL, &token));
  TL_NAPI_CALL(env, napi_create_array_with_length(env, 2, &pair));
  TL_NAPI_CALL(env, napi_set_element(env, pair, 0, promise));
  TL_NAPI_CALL(env, napi_set_element(env, pair, 1, token));
  return pair;
}

/* Starts an async gate request and returns its code, or a Promise of a
 * code, or [Promise, token] when `with_token` is set. */
static napi_value
tl__gate_async(napi_env env, napi_value ta, void *addr, int32_t gate,
               uint32_t id, uint32_t amount, double timeout, bool ref,
               bool with_token)
{
  napi_value promise;
  tl_env_t *e = tl__env(env);
  tl_async_t *n;
  int r;

  n = tl__new_async(env, e, timeout, ref, TL_NODE_GATE);
  if (n == NULL)
    return NULL;
  r = tl_gate_acquire_async(&n->w, addr, gate, id, amount);
  if (r != TL_RESULT_PENDING) {
    free(n);
    return tl__int(env, r);
  }
  promise = tl__track(env, e, n, ta);
  if (promise == NULL || !with_token)
    return promise;
  return tl__with_token(env, n, promise);
}

/* gateAcquireAsync(i32, index, gate, id, amount, timeoutMs, ref, withToken)
 * -> see tl__gate_async. */
static napi_value
tl_napi_gate_acquire_async(napi_env env, napi_callback_info info)
{
  napi_value argv[8];
  void *addr;
  int32_t gate;
  uint32_t id, amount;
  double timeout;
  bool ref, with_token;

  TL_GET_ARGS(env, info, 8, argv);
  if (tl__gate_args(env, argv, &addr, &gate, &id, &amount) != 0)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_double(env, argv[5], &timeout));
  TL_NAPI_CALL(env, napi_get_value_bool(env, argv[6], &ref));
  TL_NAPI_CALL(env, napi_get_value_bool(env, argv[7], &with_token));
  return tl__gate_async(env, argv[0], addr, gate, id, amount, timeout, ref,
                        with_token);
}

/* waitAsync(ta, index, value, timeoutMs, ref, withToken) -> code, or a
 * Promise, or [Promise, token] when withToken is set. */
static napi_value
tl_napi_wait_async(napi_env env, napi_callback_info info)
{
  napi_value argv[6], promise;
  tl_env_t *e = tl__env(env);
  tl_async_t *n;
  void *addr;
  int width, r;
  int64_t expected;
  double timeout;
  bool ref, with_token;

  TL_GET_ARGS(env, info, 6, argv);
  if (tl__element(env, argv[0], argv[1], &addr, &width) != 0 ||
      tl__expected(env, argv[2], width, &expected) != 0)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_double(env, argv[3], &timeout));
  TL_NAPI_CALL(env, napi_get_value_bool(env, argv[4], &ref));
  TL_NAPI_CALL(env, napi_coerce_to_bool(env, argv[5], &argv[5]));
  TL_NAPI_CALL(env, napi_get_value_bool(env, argv[5], &with_token));
  n = tl__new_async(env, e, timeout, ref, TL_NODE_WAIT);
  if (n == NULL)
    return NULL;
  r = tl_wait_async(&n->w, addr, width, expected, timeout == 0);
  if (r != TL_RESULT_PENDING) {
    free(n);
    return tl__int(env, r);
  }
  /* The waiter is in the table now and may be notified at any moment; the
   * node still belongs to this thread until it is resolved here. */
  promise = tl__track(env, e, n, argv[0]);
  if (promise == NULL || !with_token)
    return promise;
  return tl__with_token(env, n, promise);
}

/* cancel(token) -> true if the request (a wait or a gate request) was
 * withdrawn before a notify or grant; its promise then resolves with
 * TL_RESULT_INTERRUPTED, which the caller ignores. */
static napi_value
tl_napi_cancel(napi_env env, napi_callback_info info)
{
  napi_value argv[1], result;
  tl_async_t *n;
  bool removed = false;

  TL_GET_ARGS(env, info, 1, argv);
  TL_NAPI_CALL(env, napi_get_value_external(env, argv[0], (void **)&n));
  if (!n->done && tl_cancel(&n->w, TL_CANCELLED)) {
    napi_value code = NULL;
    removed = true;
    napi_create_int32(env, TL_RESULT_INTERRUPTED, &code);
    tl__withdraw(env, n, code);
  }
  TL_NAPI_CALL(env, napi_get_boolean(env, removed, &result));
  return result;
}

/* register(id): this thread's lock owner id, registered as alive until the
 * env is torn down. Once per env. */
static napi_value
tl_napi_register(napi_env env, napi_callback_info info)
{
  napi_value argv[1];
  tl_env_t *e = tl__env(env);
  uint32_t id;

  TL_GET_ARGS(env, info, 1, argv);
  TL_NAPI_CALL(env, napi_get_value_uint32(env, argv[0], &id));
  if (id == 0 || id > TL_LOCK_ID_MASK ||
      (e->lock_id != 0 && e->lock_id != id)) {
    napi_throw_range_error(env, NULL, "invalid thread id for locks");
    return NULL;
  }
  if (e->lock_id == id)
    return NULL;
  e->lock_id = id;
  tl_thread_register(id);
  return NULL;
}

/* isDetached(arrayBuffer) -> boolean. */
static napi_value
tl_napi_is_detached(napi_env env, napi_callback_info info)
{
  napi_value argv[1], result;
  bool detached = false;

  TL_GET_ARGS(env, info, 1, argv);
  TL_NAPI_CALL(env, napi_is_detached_arraybuffer(env, argv[0], &detached));
  TL_NAPI_CALL(env, napi_get_boolean(env, detached, &result));
  return result;
}

/* setSpin(iterations): how long a sync waiter spins before it sleeps. */
static napi_value
tl_napi_set_spin(napi_env env, napi_callback_info info)
{
  napi_value argv[1];
  uint32_t n;

  TL_GET_ARGS(env, info, 1, argv);
  TL_NAPI_CALL(env, napi_get_value_uint32(env, argv[0], &n));
  tl_set_spin(n);
  return NULL;
}

/* namedInit(onStolen): the function told the id of each stolen lock. */
static napi_value
tl_napi_named_init(napi_env env, napi_callback_info info)
{
  napi_value argv[1];
  tl_env_t *e = tl__env(env);

  TL_GET_ARGS(env, info, 1, argv);
  if (e->on_stolen != NULL)
    napi_delete_reference(env, e->on_stolen);
  e->on_stolen = NULL;
  TL_NAPI_CALL(env, napi_create_reference(env, argv[0], 1, &e->on_stolen));
  return NULL;
}

/* namedRequest(name, exclusive, ifAvailable, steal, ref) ->
 * [phase, token, id, promise]: phase is TL_NAMED_HELD (granted now),
 * TL_NAMED_QUEUED (the promise resolves to true on the grant) or
 * TL_NAMED_UNAVAILABLE (no token). The token releases or withdraws it. */
static napi_value
tl_napi_named_request(napi_env env, napi_callback_info info)
{
  napi_value argv[5], out, v, promise = NULL;
  tl_env_t *e = tl__env(env);
  tl_named_node_t *nn;
  tl_async_t *n;
  bool exclusive, if_available, steal, ref;
  uint16_t stack_name[64], *name = stack_name;
  size_t len;
  int phase;

  TL_GET_ARGS(env, info, 5, argv);
  TL_NAPI_CALL(env, napi_get_value_string_utf16(env, argv[0], NULL, 0, &len));
  if (len >= sizeof(stack_name) / sizeof(stack_name[0])) {
    name = malloc((len + 1) * sizeof(*name));
    if (name == NULL) {
      napi_throw_error(env, NULL, "out of memory");
      return NULL;
    }
  }
  if (napi_get_value_string_utf16(env, argv[0], (char16_t *)name, len + 1,
                                  &len) != napi_ok ||
      napi_get_value_bool(env, argv[1], &exclusive) != napi_ok ||
      napi_get_value_bool(env, argv[2], &if_available) != napi_ok ||
      napi_get_value_bool(env, argv[3], &steal) != napi_ok ||
      napi_get_value_bool(env, argv[4], &ref) != napi_ok ||
      (nn = calloc(1, sizeof(*nn))) == NULL) {
    if (name != stack_name)
      free(name);
    tl__throw_last(env, "namedRequest arguments");
    return NULL;
  }
  n = &nn->a;
  n->env = e;
  n->kind = TL_NODE_NAMED;
  n->heap_index = TL_NO_HEAP;
  n->deadline = UINT64_MAX;
  nn->id = ++e->next_named_id;
  phase = tl_named_request(&nn->r, name, len, exclusive, if_available, steal,
                           e->lock_id, tl__named_event);
  if (name != stack_name)
    free(name);
  if (phase < 0 || phase == TL_NAMED_UNAVAILABLE) {
    free(nn);
    if (phase < 0) {
      napi_throw_error(env, NULL, "out of memory");
      return NULL;
    }
    TL_NAPI_CALL(env, napi_create_array_with_length(env, 1, &out));
    TL_NAPI_CALL(env, napi_create_int32(env, phase, &v));
    TL_NAPI_CALL(env, napi_set_element(env, out, 0, v));
    return out;
  }
  /* Booked in the pending list so that teardown releases it. A queued
   * request keeps the loop alive (if `ref`) until it is granted. */
  n->next = e->pending;
  if (e->pending != NULL)
    e->pending->prev = n;
  e->pending = n;
  if (phase == TL_NAMED_QUEUED) {
    n->ref = (uint8_t)ref;
    tl__ref(e, n, +1);
    TL_NAPI_CALL(env, napi_create_promise(env, &n->deferred, &promise));
  }
  n->has_token = 1;
  TL_NAPI_CALL(env, napi_create_array_with_length(env, 4, &out));
  TL_NAPI_CALL(env, napi_create_int32(env, phase, &v));
  TL_NAPI_CALL(env, napi_set_element(env, out, 0, v));
  TL_NAPI_CALL(env, napi_create_external(env, n, tl__token_finalize, NULL, &v));
  TL_NAPI_CALL(env, napi_set_element(env, out, 1, v));
  TL_NAPI_CALL(env, napi_create_uint32(env, nn->id, &v));
  TL_NAPI_CALL(env, napi_set_element(env, out, 2, v));
  if (promise != NULL)
    TL_NAPI_CALL(env, napi_set_element(env, out, 3, promise));
  return out;
}

/* namedRelease(token) -> the phase the request or lock had: HELD (now
 * released), QUEUED (now withdrawn; its promise resolves to false), STOLEN,
 * or 0 when it was released before. */
static napi_value
tl_napi_named_release(napi_env env, napi_callback_info info)
{
  napi_value argv[1], v;
  tl_async_t *n;
  int phase = 0;

  TL_GET_ARGS(env, info, 1, argv);
  TL_NAPI_CALL(env, napi_get_value_external(env, argv[0], (void **)&n));
  if (n->kind != TL_NODE_NAMED) {
    napi_throw_type_error(env, NULL, "not a named lock token");
    return NULL;
  }
  if (!n->done) {
    napi_value no = NULL;
    phase = tl_named_release(&((tl_named_node_t *)n)->r);
    napi_get_boolean(env, false, &no);
    tl__withdraw(env, n, no);
  }
  TL_NAPI_CALL(env, napi_create_int32(env, phase, &v));
  return v;
}

/* namedCancel(token) -> true if a queued request was withdrawn before its
 * grant (its promise then resolves to false); false once granted. */
static napi_value
tl_napi_named_cancel(napi_env env, napi_callback_info info)
{
  napi_value argv[1], v;
  tl_async_t *n;
  bool removed = false;

  TL_GET_ARGS(env, info, 1, argv);
  TL_NAPI_CALL(env, napi_get_value_external(env, argv[0], (void **)&n));
  if (n->kind != TL_NODE_NAMED) {
    napi_throw_type_error(env, NULL, "not a named lock token");
    return NULL;
  }
  if (!n->done && tl_named_cancel(&((tl_named_node_t *)n)->r)) {
    napi_value no = NULL;
    removed = true;
    napi_get_boolean(env, false, &no);
    tl__withdraw(env, n, no);
  }
  TL_NAPI_CALL(env, napi_get_boolean(env, removed, &v));
  return v;
}

typedef struct tl_query_s {
  napi_env env;
  napi_value out;
  uint32_t count;
  int failed;
} tl_query_t;

/* Copies one entry of the names table into the result. Runs under the
 * table lock but only creates JS values, which never calls back into
 * threadlock. */
static void
tl__query_visit(void *data, const uint16_t *name, size_t len, int exclusive,
                uint32_t client, int held)
{
  tl_query_t *q = data;
  napi_value entry, v;
  napi_env env = q->env;

  if (q->failed)
    return;
  if (napi_create_array_with_length(env, 4, &entry) != napi_ok ||
      napi_create_string_utf16(env, (const char16_t *)name, len, &v) !=
          napi_ok ||
      napi_set_element(env, entry, 0, v) != napi_ok ||
      napi_get_boolean(env, exclusive, &v) != napi_ok ||
      napi_set_element(env, entry, 1, v) != napi_ok ||
      napi_create_uint32(env, client, &v) != napi_ok ||
      napi_set_element(env, entry, 2, v) != napi_ok ||
      napi_get_boolean(env, held, &v) != napi_ok ||
      napi_set_element(env, entry, 3, v) != napi_ok ||
      napi_set_element(env, q->out, q->count++, entry) != napi_ok)
    q->failed = 1;
}

/* namedQuery() -> [[name, exclusive, clientId, held], ...], held first. */
static napi_value
tl_napi_named_query(napi_env env, napi_callback_info info)
{
  tl_query_t q = { env, NULL, 0, 0 };

  (void)info;
  TL_NAPI_CALL(env, napi_create_array(env, &q.out));
  tl_named_query(tl__query_visit, &q);
  if (q.failed) {
    tl__throw_last(env, "namedQuery");
    return NULL;
  }
  return q.out;
}

static napi_value
tl_napi_named_count(napi_env env, napi_callback_info info)
{
  (void)info;
  return tl__int(env, (int64_t)tl_named_count());
}

/* Sets up this thread's state: the threadsafe function (unref'd until a
 * ref'd waiter is pending), the deadline timer and the cleanup hook, which
 * is added last so that it runs before the function's own teardown. */
static tl_env_t *
tl__env_new(napi_env env)
{
  tl_env_t *e = calloc(1, sizeof(*e));
  napi_value name, noop, results, ok, timed_out;
  uv_loop_t *loop;

  if (e == NULL)
    return NULL;
  e->env = env;
  tl_mutex_init(&e->ready_lock);
  e->timer = malloc(sizeof(*e->timer));
  if (e->timer == NULL || napi_get_uv_event_loop(env, &loop) != napi_ok ||
      uv_timer_init(loop, e->timer) != 0)
    goto fail;
  e->timer->data = e;
  uv_unref((uv_handle_t *)e->timer);
  if (napi_create_string_utf8(env, "threadlock", NAPI_AUTO_LENGTH, &name) !=
          napi_ok ||
      napi_create_function(env, "noop", NAPI_AUTO_LENGTH, tl__noop, NULL,
                           &noop) != napi_ok ||
      napi_create_reference(env, noop, 1, &e->noop) != napi_ok ||
      napi_create_array_with_length(env, 2, &results) != napi_ok ||
      napi_create_string_latin1(env, "ok", 2, &ok) != napi_ok ||
      napi_create_string_latin1(env, "timed-out", 9, &timed_out) != napi_ok ||
      napi_set_element(env, results, 0, ok) != napi_ok ||
      napi_set_element(env, results, 1, timed_out) != napi_ok ||
      napi_create_reference(env, results, 1, &e->results) != napi_ok ||
      napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, e,
                                      tl__tsfn_finalize, e, tl__call_js,
                                      &e->tsfn) != napi_ok)
    goto fail_timer;
  napi_unref_threadsafe_function(env, e->tsfn);
  if (napi_add_env_cleanup_hook(env, tl__env_cleanup, e) != napi_ok ||
      napi_set_instance_data(env, e, NULL, NULL) != napi_ok)
    napi_fatal_error("threadlock", NAPI_AUTO_LENGTH,
                     "cannot register the thread's cleanup", NAPI_AUTO_LENGTH);
  return e;

fail_timer:
  if (e->noop != NULL)
    napi_delete_reference(env, e->noop);
  if (e->results != NULL)
    napi_delete_reference(env, e->results);
  uv_close((uv_handle_t *)e->timer, tl__timer_closed);
  tl_mutex_destroy(&e->ready_lock);
  free(e);
  return NULL;
fail:
  free(e->timer);
  tl_mutex_destroy(&e->ready_lock);
  free(e);
  return NULL;
}

NAPI_MODULE_INIT()
{
  static const struct {
    const char *name;
    napi_callback cb;
  } fns[] = {
    { "wait", tl_napi_wait },
    { "notify", tl_napi_notify },
    { "waitAsync", tl_napi_wait_async },
    { "waiterCount", tl_napi_waiter_count },
    { "totalWaiters", tl_napi_total_waiters },
    { "cancel", tl_napi_cancel },
    { "gateAcquire", tl_napi_gate_acquire },
    { "gateAcquireAsync", tl_napi_gate_acquire_async },
    { "gateRelease", tl_napi_gate_release },
    { "register", tl_napi_register },
    { "isDetached", tl_napi_is_detached },
    { "setSpin", tl_napi_set_spin },
    { "namedInit", tl_napi_named_init },
    { "namedRequest", tl_napi_named_request },
    { "namedRelease", tl_napi_named_release },
    { "namedCancel", tl_napi_named_cancel },
    { "namedQuery", tl_napi_named_query },
    { "namedCount", tl_napi_named_count },
  };

  void *existing = NULL;
  char *refusal = NULL;

  /* A second copy of threadlock in the process refuses to load. */
  if (tl_singleton_claim(&refusal) != 0) {
    napi_throw_error(env, "ERR_THREADLOCK_DUPLICATE",
                     refusal ? refusal : "threadlock: another copy is loaded");
    free(refusal);
    return NULL;
  }
  /* Loading the same file again in one thread reuses that thread's state. */
  napi_get_instance_data(env, &existing);
  if (existing == NULL && tl__env_new(env) == NULL) {
    napi_throw_error(env, NULL, "threadlock: cannot set up this thread");
    return NULL;
  }
  for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
    napi_value fn;
    TL_NAPI_CALL(env, napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH,
                                           fns[i].cb, NULL, &fn));
    TL_NAPI_CALL(env, napi_set_named_property(env, exports, fns[i].name, fn));
  }
  return exports;
}
