/* Node-API glue for the named locks (names.c): request, release, cancel,
 * query, and the delivery of grants and steals on the requesting thread.
 */
#include <node_api.h>
#include <stdint.h>

#include "env.h"

napi_value tl__named_exports(napi_env env, napi_value exports);

static void
tl__named_deliver(napi_env env, tl_env_t *e, tl_named_node_t *nn)
{
  tl_async_t *n = &nn->a;
  napi_handle_scope scope;
  napi_value v, fn, recv;

  TL_NAPI_FATAL(napi_open_handle_scope(env, &scope));
  /* A queued request was granted: its promise resolves to true and it
   * stops keeping the loop alive. The node stays booked until its holder
   * releases it. */
  if ((n->done_events & TL_NAMED_EVENT_GRANTED) && n->deferred != NULL) {
    TL_NAPI_FATAL(napi_get_boolean(env, true, &v));
    napi_resolve_deferred(env, n->deferred, v);
    n->deferred = NULL;
    tl__drop_ref(e, n);
  }
  /* A held lock was stolen: JavaScript hears its id. */
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

/* Reads the name (UTF-16) into `buf` of `cap` units, or into a new block
 * when it does not fit. Returns the name, or NULL with an exception. */
static uint16_t *
tl__read_name(napi_env env, napi_value s, uint16_t *buf, size_t cap,
              size_t *len)
{
  uint16_t *name = buf;

  TL_NAPI_CALL(env, napi_get_value_string_utf16(env, s, NULL, 0, len));
  if (*len >= cap) {
    name = tl__malloc((*len + 1) * sizeof(*name));
    if (name == NULL) {
      tl__throw_enomem(env);
      return NULL;
    }
  }
  if (napi_get_value_string_utf16(env, s, (char16_t *)name, *len + 1, len) !=
      napi_ok) {
    if (name != buf)
      tl__free(name);
    tl__throw_last(env, "napi_get_value_string_utf16");
    return NULL;
  }
  return name;
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
  uint16_t stack_name[64], *name;
  size_t len;
  int phase;

  TL_GET_ARGS(env, info, 5, argv);
  TL_NAPI_CALL(env, napi_get_value_bool(env, argv[1], &exclusive));
  TL_NAPI_CALL(env, napi_get_value_bool(env, argv[2], &if_available));
  TL_NAPI_CALL(env, napi_get_value_bool(env, argv[3], &steal));
  TL_NAPI_CALL(env, napi_get_value_bool(env, argv[4], &ref));
  name = tl__read_name(env, argv[0], stack_name,
                       sizeof(stack_name) / sizeof(stack_name[0]), &len);
  if (name == NULL)
    return NULL;
  n = tl__new_async(env, e, INFINITY, 0, TL_NODE_NAMED, sizeof(*nn),
                    tl__settle);
  if (n == NULL) {
    if (name != stack_name)
      tl__free(name);
    return NULL;
  }
  nn = (tl_named_node_t *)n;
  nn->id = ++e->next_named_id;
  nn->deliver = tl__named_deliver;
  phase = tl_named_request(&nn->r, name, len, exclusive, if_available, steal,
                           e->lock_id, tl__named_event);
  if (name != stack_name)
    tl__free(name);
  if (phase == TL_NAMED_ENOMEM || phase == TL_NAMED_UNAVAILABLE) {
    tl__free(nn);
    if (phase == TL_NAMED_ENOMEM) {
      tl__throw_enomem(env);
      return NULL;
    }
    TL_NAPI_CALL(env, napi_create_array_with_length(env, 1, &out));
    TL_NAPI_CALL(env, napi_create_int32(env, phase, &v));
    TL_NAPI_CALL(env, napi_set_element(env, out, 0, v));
    return out;
  }
  /* Booked in the pending list so that teardown releases it. A queued
   * request keeps the loop alive (if `ref`) until it is granted. */
  n->ref = (uint8_t)(phase == TL_NAMED_QUEUED && ref);
  if (tl__book(e, n))
    tl__arm_timer(e);
  if (phase == TL_NAMED_QUEUED)
    TL_NAPI_CALL(env, napi_create_promise(env, &n->deferred, &promise));
  TL_NAPI_CALL(env, napi_create_array_with_length(env, 4, &out));
  TL_NAPI_CALL(env, napi_create_int32(env, phase, &v));
  TL_NAPI_CALL(env, napi_set_element(env, out, 0, v));
  TL_NAPI_CALL(env, tl__token_new(env, n, &v));
  TL_NAPI_CALL(env, napi_set_element(env, out, 1, v));
  TL_NAPI_CALL(env, napi_create_uint32(env, nn->id, &v));
  TL_NAPI_CALL(env, napi_set_element(env, out, 2, v));
  if (promise != NULL)
    TL_NAPI_CALL(env, napi_set_element(env, out, 3, promise));
  return out;
}

/* Reads a named lock token. Returns NULL with an exception pending. */
static tl_async_t *
tl__named_token(napi_env env, napi_value token)
{
  tl_async_t *n;

  TL_NAPI_CALL(env, napi_get_value_external(env, token, (void **)&n));
  if (n->kind != TL_NODE_NAMED) {
    napi_throw_type_error(env, NULL, "not a named lock token");
    return NULL;
  }
  return n;
}

/* namedRelease(token) -> the phase the request or lock had: HELD (now
 * released), QUEUED (now withdrawn; its promise resolves to false), STOLEN,
 * or 0 when it was released before. */
static napi_value
tl_napi_named_release(napi_env env, napi_callback_info info)
{
  napi_value argv[1], no, v;
  tl_async_t *n;
  int phase = 0;

  TL_GET_ARGS(env, info, 1, argv);
  if ((n = tl__named_token(env, argv[0])) == NULL)
    return NULL;
  TL_NAPI_CALL(env, napi_get_boolean(env, false, &no));
  if (!n->done) {
    phase = tl_named_release(&((tl_named_node_t *)n)->r);
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
  napi_value argv[1], no, v;
  tl_async_t *n;
  bool removed = false;

  TL_GET_ARGS(env, info, 1, argv);
  if ((n = tl__named_token(env, argv[0])) == NULL)
    return NULL;
  TL_NAPI_CALL(env, napi_get_boolean(env, false, &no));
  if (!n->done && tl_named_cancel(&((tl_named_node_t *)n)->r)) {
    removed = true;
    tl__withdraw(env, n, no);
  }
  TL_NAPI_CALL(env, napi_get_boolean(env, removed, &v));
  return v;
}

typedef struct tl_query_s {
  napi_env env;
  napi_value out;
  uint32_t count;
  napi_status status;
} tl_query_t;

/* Copies one entry of the names table into the result. Runs under the
 * table lock but only creates JS values, which never calls back into
 * threadlock. After a failure it does nothing more. */
static void
tl__query_visit(void *data, const uint16_t *name, size_t len, int exclusive,
                uint32_t client, int held)
{
  tl_query_t *q = data;
  napi_env env = q->env;
  napi_value entry, v[4];

  if (q->status != napi_ok ||
      (q->status = napi_create_array_with_length(env, 4, &entry)) != napi_ok ||
      (q->status = napi_create_string_utf16(env, (const char16_t *)name, len,
                                            &v[0])) != napi_ok ||
      (q->status = napi_get_boolean(env, exclusive, &v[1])) != napi_ok ||
      (q->status = napi_create_uint32(env, client, &v[2])) != napi_ok ||
      (q->status = napi_get_boolean(env, held, &v[3])) != napi_ok)
    return;
  for (uint32_t i = 0; i < 4 && q->status == napi_ok; i++)
    q->status = napi_set_element(env, entry, i, v[i]);
  if (q->status == napi_ok)
    q->status = napi_set_element(env, q->out, q->count++, entry);
}

/* namedQuery() -> [[name, exclusive, clientId, held], ...], held first. */
static napi_value
tl_napi_named_query(napi_env env, napi_callback_info info)
{
  tl_query_t q = { env, NULL, 0, napi_ok };

  (void)info;
  TL_NAPI_CALL(env, napi_create_array(env, &q.out));
  tl_named_query(tl__query_visit, &q);
  TL_NAPI_CALL(env, q.status);
  return q.out;
}

static napi_value
tl_napi_named_count(napi_env env, napi_callback_info info)
{
  napi_value v;

  (void)info;
  TL_NAPI_CALL(env, napi_create_int64(env, (int64_t)tl_named_count(), &v));
  return v;
}

/* Adds the named-lock functions to the module's exports. */
napi_value
tl__named_exports(napi_env env, napi_value exports)
{
  static const struct {
    const char *name;
    napi_callback cb;
  } fns[] = {
    { "namedInit", tl_napi_named_init },
    { "namedRequest", tl_napi_named_request },
    { "namedRelease", tl_napi_named_release },
    { "namedCancel", tl_napi_named_cancel },
    { "namedQuery", tl_napi_named_query },
    { "namedCount", tl_napi_named_count },
  };

  for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
    napi_value fn;
    TL_NAPI_CALL(env, napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH,
                                           fns[i].cb, NULL, &fn));
    TL_NAPI_CALL(env, napi_set_named_property(env, exports, fns[i].name, fn));
  }
  return exports;
}
