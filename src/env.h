/* Per-env (per-thread) state of the Node-API glue, and what the glue files
 * (binding.c, binding_names.c, env.c) share: the error handling, the async
 * node that stands for a pending request, and the functions that book,
 * settle and retire such nodes.
 *
 * Lock order (see tl_internal.h): a bucket lock or the names lock may be
 * held while taking an env's ready_lock, never the other way round.
 */
#ifndef TL_ENV_H_
#define TL_ENV_H_

#include <node_api.h>
#include <stdbool.h>
#include <stdint.h>

#include "alloc.h"
#include "heap.h"
#include "names.h"
#include "platform.h"
#include "queue.h"
#include "waiters.h"

/* The one check of a Node-API call that may throw: on failure, throws the
 * call's last error (unless an exception is already pending) and returns
 * `ret` from the calling function. TL_NAPI_CALL returns NULL, as a Node-API
 * callback does. */
#define TL_NAPI_CALL_RET(env, call, ret)                                       \
  do {                                                                         \
    if ((call) != napi_ok) {                                                   \
      tl__throw_last((env), #call);                                            \
      return ret;                                                              \
    }                                                                          \
  } while (0)
#define TL_NAPI_CALL(env, call) TL_NAPI_CALL_RET(env, call, NULL)

/* The check where throwing is impossible (threadsafe-function callback,
 * timer, finalizers, cleanup hook): a failure there means the runtime is
 * broken beyond repair. */
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

typedef struct tl_env_s tl_env_t;

/* What an async node stands for. */
enum {
  TL_NODE_WAIT = 0, /* a plain waitAsync */
  TL_NODE_GATE = 1, /* a lock, semaphore or read-write lock request */
  TL_NODE_NAMED = 2 /* a named lock request, then the held lock */
};

/* An async request. Allocated and freed on its env's thread. While enqueued
 * its waiter belongs to the waiter table; a notify hands it to the env's
 * ready queue; the env's thread takes it from there, resolves it and
 * retires it. */
typedef struct tl_async_s {
  tl_waiter_t w;          /* must stay first */
  tl_env_t *env;          /* immutable */
  tl_queue_t ready;       /* in env->ready; protected by env->ready_lock */
  tl_queue_t pending;     /* in env->pending while booked; env thread */
  tl_heap_node_t timeout; /* in env->heap while it has a deadline */
  napi_deferred deferred; /* env thread */
  const void *keep;       /* env thread: the buffer kept alive, if any */
  uint8_t ref;            /* keeps the loop alive while booked */
  uint8_t kind;           /* TL_NODE_*; immutable */
  uint8_t events;         /* named nodes: TL_NAMED_EVENT_*; ready_lock */
  uint8_t in_ready;       /* named nodes: queued for call_js; ready_lock */
  uint8_t done_events;    /* named nodes: the events being delivered */
  uint8_t has_token;      /* a cancel token (external) exists and frees it */
  uint8_t done;           /* retired; env thread only */
} tl_async_t;

/* A named lock request; once granted, the held lock. Booked in its env's
 * pending list from the request until release, cancel or teardown. */
typedef struct tl_named_node_s tl_named_node_t;
struct tl_named_node_s {
  tl_async_t a; /* must stay first */
  tl_named_t r; /* linked into the names table */
  uint32_t id;  /* reported to JS when the lock is stolen */
  /* Delivers its events on the env thread (binding_names.c); set once. */
  void (*deliver)(napi_env env, tl_env_t *e, tl_named_node_t *nn);
};

/* One reference per buffer with pending waiters of a thread, counted: a
 * freed buffer's address could be reused, so its memory must outlive every
 * waiter on it, but one reference per waiter would cost a handle each. */
#define TL_KEEP_BITS 6
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
  tl_queue_t ready;       /* woken nodes; protected by ready_lock */
  uint8_t draining;       /* the env thread is draining `ready` and looks
                             again before it clears this, so a push need
                             not call the tsfn; written under ready_lock by
                             the env thread only */
  tl_queue_t pending;     /* env thread: booked, not yet retired */
  tl_heap_t heap;         /* env thread: booked nodes with a deadline */
  size_t refs;            /* env thread: booked nodes with ref */
  uint32_t lock_id;       /* 0 until registered */
  uint32_t next_named_id; /* env thread */
  napi_ref noop;          /* a native no-op, called by the probe */
  napi_ref on_stolen;     /* JS function told the id of a stolen lock */
  napi_ref results;       /* ["ok", "timed-out"], made once per thread */
  tl_keep_t *keeps[1 << TL_KEEP_BITS]; /* env thread: buffers kept alive */
};

/* Throws the last Node-API error unless an exception is pending already;
 * `what` names the call when Node-API has no message. */
void tl__throw_last(napi_env env, const char *what);

/* Throws an Error with code "ENOMEM". */
void tl__throw_enomem(napi_env env);

/* This thread's state, made by tl__env_new when the addon is loaded. */
tl_env_t *tl__env(napi_env env);
tl_env_t *tl__env_new(napi_env env, napi_threadsafe_function_call_js call_js);

/* A zeroed node of `size` bytes (at least a tl_async_t) for env `e`, with
 * the deadline `timeout` milliseconds from now, whose waiter reports to
 * `settle`; NULL with ENOMEM thrown when memory ran out. */
tl_async_t *tl__new_async(napi_env env, tl_env_t *e, double timeout, int ref,
                          int kind, size_t size, tl_settle_cb settle);

/* The sync waits' termination probe of env `e`. */
void tl__probe_init(tl_env_t *e, tl_probe_t *probe);

/* Keeps the buffer under the typed array `ta` alive until tl__unkeep;
 * sets *base to what tl__unkeep takes. Returns 0, or -1 with an
 * exception pending and nothing kept. Env thread. */
int tl__keep(napi_env env, tl_env_t *e, napi_value ta, const void **base);
void tl__unkeep(tl_env_t *e, const void *base);

/* One more count on a buffer kept already (a pending read request that was
 * granted keeps it for as long as the read lock is held), and one less on
 * the buffer under `ta`. A read lock keeps its buffer alive so that a
 * thread that dies holding it can give it back (rwlock.c). Env thread. */
void tl__keep_more(tl_env_t *e, const void *base);
void tl__unkeep_ta(napi_env env, tl_env_t *e, napi_value ta);

/* ready.c. Any thread; takes ownership of `n` and queues it for its env's
 * thread (one threadsafe call per batch). Expects no ready_lock. */
void tl__make_ready(tl_async_t *n);

/* ready.c: the settle callback of every async waiter. Runs on the notifying
 * thread, under the bucket lock: it only queues. */
void tl__settle(tl_waiter_t *w);

/* ready.c, env thread: points the env's one timer at the earliest deadline
 * of its heap. */
void tl__arm_timer(tl_env_t *e);

/* ready.c, env thread: the threadsafe function's callback; resolves every
 * ready node, and those that become ready while it runs (a chain of
 * grants), in one call. */
void tl__call_js(napi_env env, napi_value js_cb, void *context, void *data);

/* ready.c, env thread, inside a JavaScript call: a release that may wake a
 * request of this very thread drains the ready queue before it returns,
 * instead of a turn of the event loop per grant. tl__drain_begin marks
 * the queue as being drained (returns 0 if it is already, by a caller
 * further up this thread's stack, which then drains it); tl__drain_now,
 * called only after it returned 1, drains it, leaving named nodes (whose
 * delivery calls JavaScript) to the threadsafe function. */
int tl__drain_begin(tl_env_t *e);
void tl__drain_now(napi_env env, tl_env_t *e);

/* Env thread: frees a retired node once neither a cancel token nor a
 * queued event refers to it. */
void tl__maybe_free(tl_async_t *n);

/* Env thread: books `n` in the env's pending list, which takes its loop
 * reference and puts its deadline in the heap (whose room the caller
 * reserved). Teardown then finds it. Returns 1 when its deadline is now
 * the env's earliest: the caller then arms the timer (tl__arm_timer). */
int tl__book(tl_env_t *e, tl_async_t *n);

/* Env thread: a booked node that stops keeping the loop alive early (a
 * named request once granted). */
void tl__drop_ref(tl_env_t *e, tl_async_t *n);

/* Env thread: takes `n` off the env's books (only what it took) and frees
 * it unless a cancel token or a queued event still points at it. */
void tl__retire(tl_env_t *e, tl_async_t *n);

/* Env thread: ends a request that JavaScript withdrew, settling its
 * still-pending promise with `value`, and retires it. */
void tl__withdraw(napi_env env, tl_async_t *n, napi_value value);

/* Env thread: a cancel token for `n`; its finalizer frees the node once
 * the env is done with it too. */
napi_status tl__token_new(napi_env env, tl_async_t *n, napi_value *token);

/* The name table's event callback: any thread, under the names lock. */
void tl__named_event(tl_named_t *r, int event);

#endif /* TL_ENV_H_ */
