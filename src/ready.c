/* How a woken or expired request gets back to its own thread: the env's
 * ready queue, drained in batches by its threadsafe function, and the one
 * deadline timer per env. Any thread may queue a node; only the env's
 * thread drains the queue and runs the timer.
 */
#include "env.h"

/* The ready queue. */

/* Appends `n` unless a named node is queued already, merging `events` into
 * it; then, if the queue was empty, asks the env's thread to drain it,
 * unless that thread is draining it now and looks again before it stops
 * (e->draining). A closing function refuses the call, which is fine:
 * teardown frees the nodes either way. Any thread; takes and releases
 * ready_lock. */
static void
tl__ready_push(tl_async_t *n, int events)
{
  tl_env_t *e = n->env;
  int was_empty = 0;

  tl_mutex_lock(&e->ready_lock);
  n->events |= (uint8_t)events;
  if (!n->in_ready) {
    n->in_ready = 1;
    was_empty = tl_queue_empty(&e->ready) && !e->draining;
    tl_queue_insert_tail(&e->ready, &n->ready);
  }
  tl_mutex_unlock(&e->ready_lock);
  if (was_empty)
    napi_call_threadsafe_function(e->tsfn, NULL, napi_tsfn_nonblocking);
}

void
tl__make_ready(tl_async_t *n)
{
  tl__ready_push(n, 0);
}

void
tl__settle(tl_waiter_t *w)
{
  /* A request that its own thread watches right now (the present watch of
   * tl_gate_retry_async, lock.c) is taken up there, when the watch ends:
   * no turn of the event loop. */
  if (w->watching)
    return;
  tl__make_ready((tl_async_t *)w);
}

/* Any thread, under the names table lock: a grant or steal for `r`. The
 * node is queued for its env's thread once; events that come before that
 * thread runs are merged. */
void
tl__named_event(tl_named_t *r, int event)
{
  tl_named_node_t *nn = tl_queue_data(r, tl_named_node_t, r);

  tl__ready_push(&nn->a, event);
}

/* The deadline timer. Env thread only. */

/* From the event loop: moves expired waiters to the ready queue; a waiter
 * that a notify took first is already on its way there. */
static void
tl__on_timer(uv_timer_t *timer)
{
  tl_env_t *e = timer->data;
  uint64_t now = tl_now_ns();
  tl_heap_node_t *t;

  while ((t = tl_heap_min(&e->heap)) != NULL && t->deadline <= now) {
    tl_async_t *n = tl_queue_data(t, tl_async_t, timeout);
    tl_heap_remove(&e->heap, t);
    /* A woken request is on the ready queue already, where its drain
     * finds it timed out. */
    if (tl_cancel(&n->w, TL_TIMED_OUT) == TL_CANCEL_WAITING)
      tl__make_ready(n);
  }
  tl__arm_timer(e);
}

void
tl__arm_timer(tl_env_t *e)
{
  tl_heap_node_t *t = tl_heap_min(&e->heap);
  uint64_t now, ms;

  if (t == NULL) {
    uv_timer_stop(e->timer);
    return;
  }
  now = tl_now_ns();
  /* Round up so that the timer never fires before the deadline; if the
   * loop's clock still runs it early, the callback re-arms. */
  ms = t->deadline > now ? (t->deadline - now + 999999) / 1000000 : 0;
  uv_timer_start(e->timer, tl__on_timer, ms, 0);
}

/* Env thread: the lock request `n` was woken to compete (lock.c). Tries
 * now; returns 1 if it sleeps again in its place (still pending), else 0
 * with *state set for the resolution. Past its deadline it leaves. */
static int
tl__gate_retry(tl_env_t *e, tl_async_t *n, int *state)
{
  /* The timer takes a node out of the heap only once its deadline passed;
   * one that is out of it while the clock says otherwise goes back in,
   * into room reserved before it queues again. Past the deadline, or when
   * the heap cannot grow, the request tries once more and ends. */
  int booked =
      n->timeout.deadline == UINT64_MAX || n->timeout.index != TL_HEAP_NONE;
  int r = tl_gate_retry_async(&n->w);

  if (r == TL_RESULT_PENDING) {
    if (tl_now_ns() < n->timeout.deadline &&
        (booked || tl_heap_reserve(&e->heap, 1) == 0)) {
      if (!booked && tl_heap_push(&e->heap, &n->timeout) == 0 &&
          n->timeout.index == 0)
        tl__arm_timer(e);
      return 1;
    }
    if (tl_cancel(&n->w, TL_TIMED_OUT) == 0)
      return 1; /* granted meanwhile: the grant is on its way here */
  }
  if (r == TL_RESULT_ACQUIRED || r == TL_RESULT_OWNER_DIED) {
    n->w.owner_died = r == TL_RESULT_OWNER_DIED;
    *state = TL_NOTIFIED;
  } else {
    *state = TL_TIMED_OUT;
  }
  return 0;
}

/* The two result strings of plain waits, made once per thread and read
 * into the current scope. Returns -1 once the thread can no longer run
 * JavaScript; teardown then frees the queued nodes. */
static int
tl__results(napi_env env, tl_env_t *e, napi_value *ok, napi_value *timed_out)
{
  napi_value results;

  if (napi_get_reference_value(env, e->results, &results) != napi_ok ||
      napi_get_element(env, results, 0, ok) != napi_ok ||
      napi_get_element(env, results, 1, timed_out) != napi_ok)
    return -1;
  return 0;
}

/* Env thread: handles one node taken off the ready queue: retries a woken
 * gate request, resolves a settled one, delivers a named node's events.
 * `ok` and `timed_out` are the result strings of plain waits. */
static void
tl__handle(napi_env env, tl_env_t *e, tl_async_t *n, napi_value ok,
           napi_value timed_out)
{
  napi_handle_scope scope;
  napi_value result;
  int state = atomic_load(&n->w.state);

  if (n->kind != TL_NODE_NAMED) {
    tl_mutex_lock(&e->ready_lock);
    n->in_ready = 0;
    tl_mutex_unlock(&e->ready_lock);
  }
  if (n->kind == TL_NODE_NAMED) {
    int again;
    tl_mutex_lock(&e->ready_lock);
    n->done_events = n->events;
    n->events = 0;
    tl_mutex_unlock(&e->ready_lock);
    if (!n->done)
      ((tl_named_node_t *)n)->deliver(env, e, (tl_named_node_t *)n);
    /* Events that came while it was handled go around once more. */
    tl_mutex_lock(&e->ready_lock);
    n->in_ready = 0;
    again = n->events != 0;
    tl_mutex_unlock(&e->ready_lock);
    if (again)
      tl__ready_push(n, 0);
    else
      tl__maybe_free(n);
    return;
  }
  if (n->done) {
    /* Its booking failed after a notify took it; the caller has its
     * error already and gave back what the notify brought. */
    tl__maybe_free(n);
    return;
  }
  if (n->kind == TL_NODE_GATE && state == TL_WOKEN &&
      tl__gate_retry(e, n, &state))
    return;
  TL_NAPI_FATAL(napi_open_handle_scope(env, &scope));
  if (n->kind == TL_NODE_GATE) {
    int code;
    /* A granted read lock keeps its buffer for as long as it is held. */
    if (state == TL_NOTIFIED && n->w.gate == TL_GATE_READ && n->keep != NULL)
      tl__keep_more(e, n->keep);
    code = state == TL_NOTIFIED
               ? (n->w.owner_died ? TL_RESULT_OWNER_DIED : TL_RESULT_ACQUIRED)
               : TL_RESULT_TIMED_OUT;
    TL_NAPI_FATAL(napi_create_int32(env, code, &result));
  } else {
    result = state == TL_NOTIFIED ? ok : timed_out;
  }
  /* Resolving fails only when the thread is going away. The node leaves
   * the books below, where teardown would no longer find it, so a grant
   * that could not be delivered is given back now, as teardown gives back
   * the undelivered grants it finds (tl_gate_abandon keeps the news of a
   * dead owner: lock.c, I6), with the buffer reference a read lock took. */
  if (napi_resolve_deferred(env, n->deferred, result) != napi_ok &&
      n->kind == TL_NODE_GATE && state == TL_NOTIFIED) {
    if (n->w.gate == TL_GATE_READ && n->keep != NULL)
      tl__unkeep(e, n->keep);
    tl_gate_abandon(&n->w);
  }
  n->deferred = NULL;
  napi_close_handle_scope(env, scope);
  tl__retire(e, n);
}

/* How many times one drain takes the queue again for nodes that came while
 * it ran, before it leaves the rest to the threadsafe function: enough for
 * a chain of grants (a woken semaphore request that takes its permits
 * wakes the next, sem.c) to go on without a turn of the event loop per
 * grant, few enough that other threads' wake-ups cannot hold the loop. */
#define TL_DRAIN_ROUNDS 16

/* Env thread, with e->draining set by the caller: handles the ready queue,
 * taking it again while nodes come (pushes skip the threadsafe call
 * meanwhile), then clears e->draining, and asks for a threadsafe call if
 * nodes are left. From inside a JavaScript call (`in_js`), named nodes are
 * left for the threadsafe function: their delivery calls JavaScript. */
static void
tl__drain(napi_env env, tl_env_t *e, int in_js)
{
  tl_queue_t batch, skipped, rest;
  napi_value ok = NULL, timed_out = NULL;
  int left, rounds = 0, broken = 0, handled = 0;

  tl_queue_init(&skipped);
  tl_mutex_lock(&e->ready_lock);
  while (!broken && !tl_queue_empty(&e->ready) && rounds++ < TL_DRAIN_ROUNDS) {
    /* Take the batch. A node leaves it before it is handled, so that a
     * retried request can be queued again at once; a named node stays
     * marked in_ready until it was handled, so that neither a release nor
     * its token's finalizer frees it first, and its later events merge. */
    tl_queue_move(&e->ready, &batch);
    tl_mutex_unlock(&e->ready_lock);
    /* The result strings of plain waits. Reading them fails only once the
     * thread can no longer run JavaScript: nothing is handled then, and
     * teardown frees the nodes. From the threadsafe function they are read
     * first, as that test; inside a JavaScript call, which can run
     * JavaScript, only when a plain wait needs them. */
    if (!in_js && ok == NULL && tl__results(env, e, &ok, &timed_out) != 0)
      broken = 1;
    while (!broken && !tl_queue_empty(&batch)) {
      tl_async_t *n = tl_queue_data(tl_queue_head(&batch), tl_async_t, ready);

      if (in_js && n->kind == TL_NODE_NAMED) {
        tl_queue_remove(&n->ready);
        tl_queue_insert_tail(&skipped, &n->ready);
        continue;
      }
      if (n->kind == TL_NODE_WAIT && ok == NULL &&
          tl__results(env, e, &ok, &timed_out) != 0) {
        broken = 1;
        break;
      }
      tl_queue_remove(&n->ready);
      tl__handle(env, e, n, ok, timed_out);
      handled = 1;
    }
    tl_mutex_lock(&e->ready_lock);
    if (broken) {
      while (!tl_queue_empty(&batch)) {
        tl_queue_t *q = tl_queue_head(&batch);
        tl_queue_remove(q);
        tl_queue_insert_tail(&e->ready, q);
      }
      break;
    }
  }
  /* Skipped nodes go first, in their order, still marked in_ready. */
  tl_queue_move(&e->ready, &rest);
  while (!tl_queue_empty(&skipped)) {
    tl_queue_t *q = tl_queue_head(&skipped);
    tl_queue_remove(q);
    tl_queue_insert_tail(&e->ready, q);
  }
  while (!tl_queue_empty(&rest)) {
    tl_queue_t *q = tl_queue_head(&rest);
    tl_queue_remove(q);
    tl_queue_insert_tail(&e->ready, q);
  }
  e->draining = 0;
  left = !tl_queue_empty(&e->ready) && !broken;
  tl_mutex_unlock(&e->ready_lock);
  if (left)
    napi_call_threadsafe_function(e->tsfn, NULL, napi_tsfn_nonblocking);
  /* A retried request that sleeps again may have booked its deadline. */
  if (handled || !in_js)
    tl__arm_timer(e);
}

/* Env thread, from the threadsafe function: resolves every ready node, and
 * those that become ready meanwhile, in one call. `env` is NULL while the
 * function is being torn down; teardown frees the nodes then. */
void
tl__call_js(napi_env env, napi_value js_cb, void *context, void *data)
{
  tl_env_t *e = context;

  (void)js_cb;
  (void)data;
  if (env == NULL)
    return;
  tl_mutex_lock(&e->ready_lock);
  if (e->draining) {
    /* Called from within a drain (a named delivery ran JavaScript that
     * released): that drain looks again before it stops. */
    tl_mutex_unlock(&e->ready_lock);
    return;
  }
  e->draining = 1;
  tl_mutex_unlock(&e->ready_lock);
  tl__drain(env, e, 0);
}

int
tl__drain_begin(tl_env_t *e)
{
  int began;

  tl_mutex_lock(&e->ready_lock);
  began = !e->draining;
  e->draining = 1;
  tl_mutex_unlock(&e->ready_lock);
  return began;
}

void
tl__drain_now(napi_env env, tl_env_t *e)
{
  tl__drain(env, e, 1);
}
