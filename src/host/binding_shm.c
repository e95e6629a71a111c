/* Node-API glue of threadlock/host's shared memory (lib/host/sharedMemory.js):
 * a mapping of shm_linux.c handed to JavaScript as a SharedArrayBuffer, and
 * the question "is this memory shared with other processes?" that the
 * primitives ask before they accept a buffer.
 *
 * node_api_create_external_sharedarraybuffer exists in Node 22, 24 and 26
 * (still experimental, outside every numbered Node-API version) and not in
 * Node 20. The addon is built once against the Node-API headers and loaded
 * by every major, so the function is declared here as a weak reference:
 * the dynamic loader resolves it to NULL where the running node does not
 * export it, and `shmSupported` says so (a plain reference would end
 * Node 20 with "symbol lookup error" at the first call). NAPI_EXPERIMENTAL
 * is not defined for it: that would change the module's reported Node-API
 * version. The prototype is the one of Node 24's js_native_api.h.
 */
#include <node_api.h>
#include <stdint.h>

#include "../env.h"
#include "shm.h"

napi_value tl__shm_exports(napi_env env, napi_value exports);
napi_value tl__shm_napi_wait(napi_env env, void *addr, int width,
                             int64_t expected, double timeout,
                             const tl_probe_t *probe);
napi_value tl__shm_napi_notify(napi_env env, void *addr, double count);
napi_value tl__shm_napi_waiters(napi_env env, void *addr);

#ifdef TL_HOST_SUPPORTED

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* node_api_noenv_finalize: runs on any thread, after any env is gone. */
typedef void (*tl__noenv_finalize_t)(void *data, void *hint);
extern napi_status node_api_create_external_sharedarraybuffer(
    napi_env env, void *external_data, size_t byte_length,
    tl__noenv_finalize_t finalize_cb, void *finalize_hint, napi_value *result)
    __attribute__((weak));

static int
tl__shm_supported(void)
{
  return node_api_create_external_sharedarraybuffer != NULL;
}

/* The last SharedArrayBuffer over the mapping was collected, in whatever
 * thread: unmap it. */
static void
tl__shm_finalize(void *data, void *hint)
{
  (void)data;
  tl_shm_close(hint);
}

/* [code, errno, message, found]: what lib/host/sharedMemory.js turns into
 * an error. */
static napi_value
tl__shm_error(napi_env env, const tl_host_error_t *e, uint64_t found)
{
  napi_value r, v;

  TL_NAPI_CALL(env, napi_create_array_with_length(env, 4, &r));
  TL_NAPI_CALL(env, napi_create_int32(env, e->code, &v));
  TL_NAPI_CALL(env, napi_set_element(env, r, 0, v));
  TL_NAPI_CALL(env, napi_create_int32(env, e->sys, &v));
  TL_NAPI_CALL(env, napi_set_element(env, r, 1, v));
  TL_NAPI_CALL(env,
               napi_create_string_utf8(env, e->message, NAPI_AUTO_LENGTH, &v));
  TL_NAPI_CALL(env, napi_set_element(env, r, 2, v));
  TL_NAPI_CALL(env, napi_create_double(env, (double)found, &v));
  TL_NAPI_CALL(env, napi_set_element(env, r, 3, v));
  return r;
}

/* shmOpen(dir, file, size) -> SharedArrayBuffer, or [code, errno, message,
 * found]. Arguments arrive checked by lib/host/sharedMemory.js. */
static napi_value
tl_napi_shm_open(napi_env env, napi_callback_info info)
{
  napi_value argv[3], result;
  char dir[4096], file[256];
  size_t len;
  double size;
  uint64_t found = 0;
  tl_host_error_t e;
  tl_shm_t *m;
  napi_status s;

  TL_GET_ARGS(env, info, 3, argv);
  TL_NAPI_CALL(
      env, napi_get_value_string_utf8(env, argv[0], dir, sizeof(dir), &len));
  TL_NAPI_CALL(
      env, napi_get_value_string_utf8(env, argv[1], file, sizeof(file), &len));
  TL_NAPI_CALL(env, napi_get_value_double(env, argv[2], &size));
  memset(&e, 0, sizeof(e));
  if (!tl__shm_supported()) {
    tl__host_fail(&e, TL_SHM_ENOTSUP, 0,
                  "this Node.js has no "
                  "node_api_create_external_sharedarraybuffer (Node.js 22 "
                  "and later have it)");
    return tl__shm_error(env, &e, 0);
  }
  m = tl_shm_open(dir, file, (uint64_t)size, &found, &e);
  if (m == NULL)
    return tl__shm_error(env, &e, found);
  s = node_api_create_external_sharedarraybuffer(env, tl_shm_data(m),
                                                 (size_t)tl_shm_size(m),
                                                 tl__shm_finalize, m, &result);
  if (s != napi_ok) {
    tl_shm_close(m);
    if (s == napi_no_external_buffers_allowed) {
      tl__host_fail(&e, TL_SHM_ENOTSUP, 0,
                    "this runtime does not allow "
                    "memory outside its heap in a SharedArrayBuffer (the V8 "
                    "sandbox of Electron)");
      return tl__shm_error(env, &e, 0);
    }
    tl__throw_last(env, "node_api_create_external_sharedarraybuffer");
    return NULL;
  }
  return result;
}

/* shmContains(typedArray) -> whether any of its bytes is shared memory. */
static napi_value
tl_napi_shm_contains(napi_env env, napi_callback_info info)
{
  napi_value argv[1], r;
  napi_typedarray_type type;
  size_t length;
  void *data;

  TL_GET_ARGS(env, info, 1, argv);
  TL_NAPI_CALL(env, napi_get_typedarray_info(env, argv[0], &type, &length,
                                             &data, NULL, NULL));
  size_t width = type == napi_bigint64_array || type == napi_float64_array ||
                         type == napi_biguint64_array
                     ? 8
                 : type == napi_int32_array || type == napi_uint32_array ||
                         type == napi_float32_array
                     ? 4
                 : type == napi_int16_array || type == napi_uint16_array ? 2
                                                                         : 1;
  TL_NAPI_CALL(
      env, napi_get_boolean(env, tl_shm_contains(data, length * width), &r));
  return r;
}

/* A thread's owner id in one file: made at its first shmOwnerId there,
 * removed by its env's cleanup hook (the worker's end, or the process's),
 * which marks the id dead for every process. */
typedef struct tl_shm_thread_s {
  /* Immutable. */
  napi_env env;
  tl_shm_join_t *join;
  uint32_t id;
  /* Protected by tl__threads_lock. */
  struct tl_shm_thread_s *next;
} tl_shm_thread_t;

static pthread_mutex_t tl__threads_lock = PTHREAD_MUTEX_INITIALIZER;
static tl_shm_thread_t *tl__threads; /* protected by tl__threads_lock */

static void
tl__shm_thread_end(void *arg)
{
  tl_shm_thread_t *t = arg;

  pthread_mutex_lock(&tl__threads_lock);
  for (tl_shm_thread_t **p = &tl__threads; *p != NULL; p = &(*p)->next) {
    if (*p == t) {
      *p = t->next;
      break;
    }
  }
  pthread_mutex_unlock(&tl__threads_lock);
  tl_shm_thread_remove(t->join, t->id);
  free(t);
}

/* The join of the shared memory under a typed array; NULL with a TypeError
 * thrown when it is not such memory. */
static tl_shm_join_t *
tl__shm_join_of(napi_env env, napi_value ta)
{
  napi_typedarray_type type;
  size_t length;
  void *data;
  tl_shm_join_t *j;

  TL_NAPI_CALL(env, napi_get_typedarray_info(env, ta, &type, &length, &data,
                                             NULL, NULL));
  j = tl_shm_find(data);
  if (j == NULL)
    napi_throw_type_error(env, NULL, "not memory from openSharedMemory");
  return j;
}

/* The calling thread's owner id in the file of `j`, made at its first
 * request there. Returns 0, or -1 with an exception pending. */
static int
tl__shm_thread_id(napi_env env, tl_shm_join_t *j, uint32_t *out)
{
  tl_shm_thread_t *t;
  uint32_t id = 0;

  pthread_mutex_lock(&tl__threads_lock);
  for (t = tl__threads; t != NULL; t = t->next)
    if (t->env == env && t->join == j)
      id = t->id;
  pthread_mutex_unlock(&tl__threads_lock);
  if (id != 0) {
    *out = id;
    return 0;
  }
  t = calloc(1, sizeof(*t));
  if (t == NULL) {
    napi_throw_error(env, "ENOMEM", "out of memory");
    return -1;
  }
  int e = tl_shm_thread_add(j, &t->id);
  if (e != 0) {
    free(t);
    napi_throw_error(env, e == TL_HOST_ENODES ? "EFULL" : "ECORRUPT",
                     e == TL_HOST_ENODES
                         ? "this process has given out every owner id of "
                           "its slot in the shared memory"
                         : "the shared-memory file shrank");
    return -1;
  }
  t->env = env;
  t->join = j;
  if (napi_add_env_cleanup_hook(env, tl__shm_thread_end, t) != napi_ok) {
    tl_shm_thread_remove(j, t->id);
    free(t);
    tl__throw_last(env, "napi_add_env_cleanup_hook");
    return -1;
  }
  pthread_mutex_lock(&tl__threads_lock);
  t->next = tl__threads;
  tl__threads = t;
  pthread_mutex_unlock(&tl__threads_lock);
  *out = t->id;
  return 0;
}

/* shmOwnerId(typedArray) -> the calling thread's owner id in the file of
 * the shared memory under the typed array, made at the first call. */
static napi_value
tl_napi_shm_owner_id(napi_env env, napi_callback_info info)
{
  napi_value argv[1], r;
  tl_shm_join_t *j;
  uint32_t id;

  TL_GET_ARGS(env, info, 1, argv);
  j = tl__shm_join_of(env, argv[0]);
  if (j == NULL || tl__shm_thread_id(env, j, &id) != 0)
    return NULL;
  TL_NAPI_CALL(env, napi_create_uint32(env, id, &r));
  return r;
}

static napi_value
tl__shm_result(napi_env env, int64_t r)
{
  napi_value v;

  if (r == TL_HOST_ENODES) {
    napi_throw_error(env, "EFULL",
                     "every waiter node of the shared-memory file is in use");
    return NULL;
  }
  if (r < 0) {
    napi_throw_error(env, "ECORRUPT",
                     "the shared-memory file shrank under this process");
    return NULL;
  }
  TL_NAPI_CALL(env, napi_create_int64(env, r, &v));
  return v;
}

napi_value
tl__shm_napi_wait(napi_env env, void *addr, int width, int64_t expected,
                  double timeout, const tl_probe_t *probe)
{
  tl_shm_join_t *j;
  tl_host_stop_t stop;
  char *base;
  uint32_t id;

  j = tl_shm_find_map(addr, &base);
  if (j == NULL || tl__shm_thread_id(env, j, &id) != 0)
    return NULL;
  if (probe != NULL) {
    stop.fn = probe->fn;
    stop.data = probe->data;
    stop.slice_ms = (int64_t)(probe->slice_ns / 1000000u);
    if (stop.slice_ms < 1)
      stop.slice_ms = 1;
  }
  return tl__shm_result(env,
                        tl_shm_wait(j, base, addr, width, expected, timeout, id,
                                    probe != NULL ? &stop : NULL));
}

napi_value
tl__shm_napi_waiters(napi_env env, void *addr)
{
  tl_shm_join_t *j;
  char *base;

  j = tl_shm_find_map(addr, &base);
  if (j == NULL)
    return NULL;
  return tl__shm_result(env, tl_shm_waiters(j, base, addr));
}

napi_value
tl__shm_napi_notify(napi_env env, void *addr, double count)
{
  tl_shm_join_t *j;
  char *base;

  j = tl_shm_find_map(addr, &base);
  if (j == NULL)
    return NULL;
  return tl__shm_result(
      env, tl_shm_notify(j, base, addr,
                         count >= 9007199254740992.0 ? -1 : (int64_t)count));
}

/* shmNodesUsed(typedArray) -> waiter nodes of the file not free. */
static napi_value
tl_napi_shm_nodes_used(napi_env env, napi_callback_info info)
{
  napi_value argv[1];
  napi_typedarray_type type;
  size_t length;
  void *data;
  char *base;
  tl_shm_join_t *j;

  TL_GET_ARGS(env, info, 1, argv);
  TL_NAPI_CALL(env, napi_get_typedarray_info(env, argv[0], &type, &length,
                                             &data, NULL, NULL));
  j = tl_shm_find_map(data, &base);
  if (j == NULL) {
    napi_throw_type_error(env, NULL, "not memory from openSharedMemory");
    return NULL;
  }
  if (tl_shm_header_ok(j) != 0)
    return tl__shm_result(env, TL_HOST_ECORRUPT);
  return tl__shm_result(env, tl_shm_nodes_used(base));
}

/* shmOwnerAlive(typedArray, id) -> whether owner `id` of the file lives. */
static napi_value
tl_napi_shm_owner_alive(napi_env env, napi_callback_info info)
{
  napi_value argv[2], r;
  tl_shm_join_t *j;
  uint32_t id;

  TL_GET_ARGS(env, info, 2, argv);
  j = tl__shm_join_of(env, argv[0]);
  if (j == NULL)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_uint32(env, argv[1], &id));
  int alive = tl_shm_owner_alive(j, id);
  if (alive < 0) {
    napi_throw_error(env, "ECORRUPT", "the shared-memory file shrank");
    return NULL;
  }
  TL_NAPI_CALL(env, napi_get_boolean(env, alive, &r));
  return r;
}

/* shmCount() -> the mappings alive in this process (for the tests). */
static napi_value
tl_napi_shm_count(napi_env env, napi_callback_info info)
{
  napi_value r;

  (void)info;
  TL_NAPI_CALL(env, napi_create_int32(env, tl_shm_count(), &r));
  return r;
}

napi_value
tl__shm_exports(napi_env env, napi_value exports)
{
  static const struct {
    const char *name;
    napi_callback fn;
  } fns[] = {
    { "shmOpen", tl_napi_shm_open },
    { "shmContains", tl_napi_shm_contains },
    { "shmCount", tl_napi_shm_count },
    { "shmOwnerId", tl_napi_shm_owner_id },
    { "shmOwnerAlive", tl_napi_shm_owner_alive },
    { "shmNodesUsed", tl_napi_shm_nodes_used },
  };
  static const struct {
    const char *name;
    int32_t value;
  } constants[] = {
    { "ESIZE", TL_SHM_ESIZE },
    { "ENOTSUP", TL_SHM_ENOTSUP },
    { "HEADER", TL_SHM_HEADER },
  };
  napi_value v, table;

  for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
    TL_NAPI_CALL(env, napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH,
                                           fns[i].fn, NULL, &v));
    TL_NAPI_CALL(env, napi_set_named_property(env, exports, fns[i].name, v));
  }
  TL_NAPI_CALL(env, napi_create_object(env, &table));
  for (size_t i = 0; i < sizeof(constants) / sizeof(constants[0]); i++) {
    TL_NAPI_CALL(env, napi_create_int32(env, constants[i].value, &v));
    TL_NAPI_CALL(env,
                 napi_set_named_property(env, table, constants[i].name, v));
  }
  TL_NAPI_CALL(env, napi_object_freeze(env, table));
  TL_NAPI_CALL(env,
               napi_set_named_property(env, exports, "shmConstants", table));
  TL_NAPI_CALL(env, napi_get_boolean(env, tl__shm_supported(), &v));
  TL_NAPI_CALL(env, napi_set_named_property(env, exports, "shmSupported", v));
  return exports;
}

#else

napi_value
tl__shm_napi_wait(napi_env env, void *addr, int width, int64_t expected,
                  double timeout, const tl_probe_t *probe)
{
  (void)addr;
  (void)width;
  (void)expected;
  (void)timeout;
  (void)probe;
  napi_throw_error(env, NULL, "no shared memory on this platform");
  return NULL;
}

napi_value
tl__shm_napi_waiters(napi_env env, void *addr)
{
  (void)addr;
  napi_throw_error(env, NULL, "no shared memory on this platform");
  return NULL;
}

napi_value
tl__shm_napi_notify(napi_env env, void *addr, double count)
{
  (void)addr;
  (void)count;
  napi_throw_error(env, NULL, "no shared memory on this platform");
  return NULL;
}

/* No shared memory here: no address is in it. */
int
tl_shm_contains(const void *addr, size_t len)
{
  (void)addr;
  (void)len;
  return 0;
}

napi_value
tl__shm_exports(napi_env env, napi_value exports)
{
  napi_value v;

  TL_NAPI_CALL(env, napi_get_boolean(env, false, &v));
  TL_NAPI_CALL(env, napi_set_named_property(env, exports, "shmSupported", v));
  return exports;
}

#endif
