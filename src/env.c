/* Per-env state of the glue: its setup, the buffers kept alive, the books
 * of pending requests and the teardown that runs when the env's thread goes
 * away. The ready queue and the timer are in ready.c.
 */
#include "env.h"

#include <stddef.h>

/* How often a sync waiter checks whether its thread is being terminated. */
#define TL_PROBE_SLICE_NS (10 * 1000 * 1000)

void
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

void
tl__throw_enomem(napi_env env)
{
  bool pending = false;

  napi_is_exception_pending(env, &pending);
  if (!pending)
    napi_throw_error(env, "ENOMEM", "threadlock: out of memory");
}

/* Buffers kept alive. Env thread only. */

static tl_keep_t **
tl__keep_slot(tl_env_t *e, const void *base)
{
  tl_keep_t **p = &e->keeps[tl__addr_hash((uintptr_t)base, TL_KEEP_BITS)];

  while (*p != NULL && (*p)->base != base)
    p = &(*p)->next;
  return p;
}

int
tl__keep(napi_env env, tl_env_t *e, napi_value ta, const void **base)
{
  void *data;
  size_t offset;
  const void *b;
  tl_keep_t **p, *k;

  TL_NAPI_CALL_RET(
      env, napi_get_typedarray_info(env, ta, NULL, NULL, &data, NULL, &offset),
      -1);
  b = (const char *)data - offset;
  p = tl__keep_slot(e, b);
  if (*p != NULL) {
    (*p)->count++;
    *base = b;
    return 0;
  }
  k = tl__malloc(sizeof(*k));
  if (k == NULL) {
    tl__throw_enomem(env);
    return -1;
  }
  if (napi_create_reference(env, ta, 1, &k->ref) != napi_ok) {
    tl__free(k);
    tl__throw_last(env, "napi_create_reference");
    return -1;
  }
  k->next = NULL;
  k->base = b;
  k->count = 1;
  *p = k;
  *base = b;
  return 0;
}

void
tl__keep_more(tl_env_t *e, const void *base)
{
  tl_keep_t *k = *tl__keep_slot(e, base);

  if (k != NULL)
    k->count++;
}

void
tl__unkeep_ta(napi_env env, tl_env_t *e, napi_value ta)
{
  void *data;
  size_t offset;

  if (napi_get_typedarray_info(env, ta, NULL, NULL, &data, NULL, &offset) ==
      napi_ok)
    tl__unkeep(e, (const char *)data - offset);
}

void
tl__unkeep(tl_env_t *e, const void *base)
{
  tl_keep_t **p = tl__keep_slot(e, base), *k = *p;

  if (k == NULL || --k->count > 0)
    return;
  *p = k->next;
  napi_delete_reference(e->env, k->ref);
  tl__free(k);
}

/* The books. Env thread only. */

/* Keeps the loop alive while ref'd nodes are booked. */
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

void
tl__drop_ref(tl_env_t *e, tl_async_t *n)
{
  tl__ref(e, n, -1);
  n->ref = 0;
}

int
tl__book(tl_env_t *e, tl_async_t *n)
{
  tl_queue_insert_tail(&e->pending, &n->pending);
  tl__ref(e, n, +1);
  if (n->timeout.deadline == UINT64_MAX)
    return 0;
  /* The caller reserved the room before it enqueued the waiter. */
  if (tl_heap_push(&e->heap, &n->timeout) != 0)
    abort();
  return n->timeout.index == 0;
}

/* Frees a retired node once nothing refers to it: no token (whose finalizer
 * frees it otherwise) and, for a named node, no event on its way through
 * the ready queue (tl__call_js frees it then). A retired node is out of
 * every shared table, so only this thread still writes in_ready and no lock
 * is needed; nor is the env, which may be gone when a token's finalizer
 * runs at teardown. */
void
tl__maybe_free(tl_async_t *n)
{
  if (n->done && !n->has_token && !n->in_ready)
    tl__free(n);
}

void
tl__retire(tl_env_t *e, tl_async_t *n)
{
  tl_heap_remove(&e->heap, &n->timeout);
  /* Only a booked node holds a loop reference: a request whose booking
   * failed after a notify took it reaches here without one. */
  if (!tl_queue_empty(&n->pending)) {
    tl_queue_remove(&n->pending);
    tl__ref(e, n, -1);
  }
  if (n->keep != NULL) {
    tl__unkeep(e, n->keep);
    n->keep = NULL;
  }
  n->done = 1;
  tl__maybe_free(n);
}

void
tl__withdraw(napi_env env, tl_async_t *n, napi_value value)
{
  if (n->deferred != NULL && value != NULL)
    napi_resolve_deferred(env, n->deferred, value);
  n->deferred = NULL;
  tl__retire(n->env, n);
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

napi_status
tl__token_new(napi_env env, tl_async_t *n, napi_value *token)
{
  napi_status status =
      napi_create_external(env, n, tl__token_finalize, NULL, token);

  if (status == napi_ok)
    n->has_token = 1;
  return status;
}

static void
tl__timer_closed(uv_handle_t *handle)
{
  tl__free(handle);
}

/* Deletes the env's references to JavaScript values. */
static void
tl__delete_refs(tl_env_t *e)
{
  napi_ref *refs[] = { &e->noop, &e->on_stolen, &e->results };

  for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++) {
    if (*refs[i] != NULL)
      napi_delete_reference(e->env, *refs[i]);
    *refs[i] = NULL;
  }
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
  tl_queue_t *q;

  tl_queue_foreach (q, &e->pending) {
    tl_async_t *n = tl_queue_data(q, tl_async_t, pending);
    if (n->kind == TL_NODE_NAMED)
      tl_named_release(&((tl_named_node_t *)n)->r);
    else if (!tl_cancel(&n->w, TL_CANCELLED) && n->kind == TL_NODE_GATE)
      tl_gate_abandon(&n->w); /* granted or woken, but never delivered */
  }
  if (e->lock_id != 0)
    tl_thread_unregister(e->lock_id);

  /* Nothing else reaches the nodes now. A node still on the ready queue
   * that was retired already (a released named lock, a failed booking) is
   * on no other list; the booked ones are freed below. */
  while (!tl_queue_empty(&e->ready)) {
    tl_async_t *n = tl_queue_data(tl_queue_head(&e->ready), tl_async_t, ready);
    tl_queue_remove(&n->ready);
    n->in_ready = 0;
    if (n->done)
      tl__maybe_free(n);
  }
  while (!tl_queue_empty(&e->pending)) {
    tl_async_t *n =
        tl_queue_data(tl_queue_head(&e->pending), tl_async_t, pending);
    tl_queue_remove(&n->pending);
    n->timeout.index = TL_HEAP_NONE;
    n->keep = NULL;
    n->done = 1;
    tl__maybe_free(n);
  }
  for (size_t i = 0; i < sizeof(e->keeps) / sizeof(e->keeps[0]); i++) {
    tl_keep_t *k, *knext;
    for (k = e->keeps[i]; k != NULL; k = knext) {
      knext = k->next;
      napi_delete_reference(e->env, k->ref);
      tl__free(k);
    }
    e->keeps[i] = NULL;
  }
  tl_heap_free(&e->heap);
  uv_close((uv_handle_t *)e->timer, tl__timer_closed);
  tl__delete_refs(e);
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
  tl__free(e);
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

void
tl__probe_init(tl_env_t *e, tl_probe_t *probe)
{
  probe->fn = tl__probe;
  probe->data = e;
  probe->slice_ns = TL_PROBE_SLICE_NS;
}

static napi_value
tl__noop(napi_env env, napi_callback_info info)
{
  (void)env;
  (void)info;
  return NULL;
}

tl_env_t *
tl__env(napi_env env)
{
  void *data = NULL;

  napi_get_instance_data(env, &data);
  return data;
}

tl_async_t *
tl__new_async(napi_env env, tl_env_t *e, double timeout, int ref, int kind,
              size_t size, tl_settle_cb settle)
{
  tl_async_t *n = tl__calloc(1, size);

  if (n == NULL) {
    tl__throw_enomem(env);
    return NULL;
  }
  tl_waiter_init_async(&n->w, settle);
  n->env = e;
  tl_queue_init(&n->ready);
  tl_queue_init(&n->pending);
  tl_heap_node_init(&n->timeout);
  n->timeout.deadline = tl__deadline(timeout);
  n->ref = (uint8_t)(ref != 0);
  n->kind = (uint8_t)kind;
  return n;
}

/* Sets up this thread's state: the threadsafe function (unref'd until a
 * ref'd waiter is pending), the deadline timer and the cleanup hook, which
 * is added last so that it runs before the function's own teardown.
 * Returns NULL with an exception pending. */
tl_env_t *
tl__env_new(napi_env env, napi_threadsafe_function_call_js call_js)
{
  tl_env_t *e = tl__calloc(1, sizeof(*e));
  napi_value name, noop, results, ok, timed_out;
  uv_loop_t *loop;

  if (e == NULL) {
    tl__throw_enomem(env);
    return NULL;
  }
  e->env = env;
  tl_mutex_init(&e->ready_lock);
  tl_queue_init(&e->ready);
  tl_queue_init(&e->pending);
  e->timer = tl__malloc(sizeof(*e->timer));
  if (e->timer == NULL) {
    tl__throw_enomem(env);
    goto fail;
  }
  if (napi_get_uv_event_loop(env, &loop) != napi_ok ||
      uv_timer_init(loop, e->timer) != 0) {
    tl__throw_last(env, "uv_timer_init");
    goto fail;
  }
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
                                      tl__tsfn_finalize, e, call_js,
                                      &e->tsfn) != napi_ok) {
    tl__throw_last(env, "threadlock: cannot set up this thread");
    goto fail_timer;
  }
  napi_unref_threadsafe_function(env, e->tsfn);
  if (napi_add_env_cleanup_hook(env, tl__env_cleanup, e) != napi_ok ||
      napi_set_instance_data(env, e, NULL, NULL) != napi_ok)
    napi_fatal_error("threadlock", NAPI_AUTO_LENGTH,
                     "cannot register the thread's cleanup", NAPI_AUTO_LENGTH);
  return e;

fail_timer:
  tl__delete_refs(e);
  uv_close((uv_handle_t *)e->timer, tl__timer_closed);
  e->timer = NULL;
fail:
  tl__free(e->timer);
  tl_mutex_destroy(&e->ready_lock);
  tl__free(e);
  return NULL;
}
