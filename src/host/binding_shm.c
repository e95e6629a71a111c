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
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bell.h"

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
  /* This process's arrival in the file: the lock waiters asleep before it
   * came look again, and watch it too (tl_shm_watch_all). */
  if (tl_shm_announce(tl_shm_join_of(m)))
    tl_shm_poke(tl_shm_join_of(m));
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

/* shmHeader(typedArray) -> a SharedArrayBuffer over the header of the file
 * whose memory holds the array (TL_SHM_HEADER bytes), for the library's
 * own JavaScript (lib/ShmRWLock.js: the count of read-hold records in use
 * and the records). It holds a reference on the mapping until it is
 * collected. Nothing checks the file's length before a load from it: its
 * user touches the lock word first, which lies after the header, so a
 * file cut short enough to lose the header had lost that word first. */
static napi_value
tl_napi_shm_header(napi_env env, napi_callback_info info)
{
  napi_value argv[1], result;
  void *data;
  tl_shm_t *m;

  TL_GET_ARGS(env, info, 1, argv);
  TL_NAPI_CALL(env, napi_get_typedarray_info(env, argv[0], NULL, NULL, &data,
                                             NULL, NULL));
  m = tl_shm_page_ref(data);
  if (m == NULL) {
    napi_throw_type_error(env, NULL, "not memory from openSharedMemory");
    return NULL;
  }
  if (node_api_create_external_sharedarraybuffer(
          env, tl_shm_base(m), TL_SHM_HEADER, tl__shm_finalize, m, &result) !=
      napi_ok) {
    tl_shm_close(m);
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
  /* The env's thread only: this record keeps one use of its file's bell
   * (tl__shm_bell_use), taken at the thread's first promise wait there and
   * given back at its end, so that the bell, and the process helper that
   * serves it, stay while the thread may wait again instead of being made
   * and joined for every wait (that restart cost about 50 µs of every
   * wake from another process; bench/README.md). The id pins the join as
   * long anyway. */
  int belled;
  /* Protected by tl__threads_lock. */
  struct tl_shm_thread_s *next;
} tl_shm_thread_t;

static pthread_mutex_t tl__threads_lock = PTHREAD_MUTEX_INITIALIZER;
static tl_shm_thread_t *tl__threads; /* protected by tl__threads_lock */

static void tl__shm_bell_unuse(tl_shm_join_t *j);

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
  if (t->belled)
    tl__shm_bell_unuse(t->join);
  tl_shm_thread_remove(t->join, t->id, tl_shm_poke);
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

/* The calling thread's record in the file of `j` (its owner id), made at
 * its first request there. Returns NULL with an exception pending. */
static tl_shm_thread_t *
tl__shm_thread_of(napi_env env, tl_shm_join_t *j)
{
  tl_shm_thread_t *t, *mine = NULL;

  pthread_mutex_lock(&tl__threads_lock);
  for (t = tl__threads; t != NULL; t = t->next)
    if (t->env == env && t->join == j)
      mine = t;
  pthread_mutex_unlock(&tl__threads_lock);
  if (mine != NULL)
    return mine;
  t = calloc(1, sizeof(*t));
  if (t == NULL) {
    napi_throw_error(env, "ENOMEM", "out of memory");
    return NULL;
  }
  int e = tl_shm_thread_add(j, &t->id);
  if (e != 0) {
    free(t);
    napi_throw_error(env, e == TL_HOST_ENODES ? "EFULL" : "ECORRUPT",
                     e == TL_HOST_ENODES
                         ? "this process has given out every owner id of "
                           "its slot in the shared memory"
                         : "the shared-memory file shrank");
    return NULL;
  }
  t->env = env;
  t->join = j;
  if (napi_add_env_cleanup_hook(env, tl__shm_thread_end, t) != napi_ok) {
    tl_shm_thread_remove(j, t->id, tl_shm_poke);
    free(t);
    tl__throw_last(env, "napi_add_env_cleanup_hook");
    return NULL;
  }
  pthread_mutex_lock(&tl__threads_lock);
  t->next = tl__threads;
  tl__threads = t;
  pthread_mutex_unlock(&tl__threads_lock);
  return t;
}

/* The calling thread's owner id in the file of `j`, made at its first
 * request there. Returns 0, or -1 with an exception pending. */
static int
tl__shm_thread_id(napi_env env, tl_shm_join_t *j, uint32_t *out)
{
  tl_shm_thread_t *t = tl__shm_thread_of(env, j);

  if (t == NULL)
    return -1;
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

/* A blocking wait's stop from the env's termination probe: its 10 ms
 * slices, at least 1 ms. */
static void
tl__shm_stop_of(const tl_probe_t *probe, tl_host_stop_t *stop)
{
  stop->fn = probe->fn;
  stop->data = probe->data;
  stop->slice_ms = (int64_t)(probe->slice_ns / 1000000u);
  if (stop->slice_ms < 1)
    stop->slice_ms = 1;
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
  if (probe != NULL)
    tl__shm_stop_of(probe, &stop);
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

/* A test hook (THREADLOCK_SHM_TEST_NOTIFY_DELAY_MS): a pause before a
 * notify of shared memory, after the caller changed the word (casNotify:
 * a Barrier's completion, a latch's last count-down, a condition
 * variable's bump), the window in which the process may be killed. */
static _Atomic int tl__notify_delay = -1;

napi_value
tl__shm_napi_notify(napi_env env, void *addr, double count)
{
  tl_shm_join_t *j;
  char *base;

  tl__hp_test_pause("THREADLOCK_SHM_TEST_NOTIFY_DELAY_MS", &tl__notify_delay);
  j = tl_shm_find_map(addr, &base);
  if (j == NULL)
    return NULL;
  return tl__shm_result(
      env, tl_shm_notify(j, base, addr,
                         count >= 9007199254740992.0 ? -1 : (int64_t)count));
}

/* A count of the file under the typed array argv[0] (`count` of its
 * base), for the tests' leak checks. */
static napi_value
tl__shm_count(napi_env env, napi_callback_info info,
              int64_t (*count)(char *base))
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
  return tl__shm_result(env, count(base));
}

/* shmNodesUsed(typedArray) -> waiter nodes of the file not free. */
static napi_value
tl_napi_shm_nodes_used(napi_env env, napi_callback_info info)
{
  return tl__shm_count(env, info, tl_shm_nodes_used);
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

/* Promise waiters (waitAsync, and the promise requests of lib/ShmLock.js)
 * on shared memory. A waiter is a node of the file (shm_wait.c) and a
 * record of its env here; it hears of its notify through its process's
 * doorbell in the file: one bell per file in which a thread of this
 * process waits, or has waited (kept by its owner-id record, `belled`),
 * with a promise (bell.h), served by the process helper of binding_host.c,
 * whose `ring` queues one call on the threadsafe function of every env that has
 * waiters; that call (on the env's thread) runs lib/shmWait.js's poll,
 * which takes the records whose node was notified (shmAsyncTake). A
 * timeout or abort withdraws the node (shmAsyncCancel), which tells
 * whether a notify counted it first. The env's cleanup hook withdraws
 * every node of its waiters (a terminated worker's promise waiters leave
 * the file, and a notify counts them no more).
 *
 * Invariants:
 * - A record's env counts it in `waiting` (under tl__async_lock) before
 *   its node is published, and its file's bell is in the helper's set by
 *   then: a notify after the publication rings a doorbell whose helper
 *   already read the value before it, and finds the env counted.
 * - A record holds a reference on its join (the header's mapping, where
 *   the node is), so the node stays readable whatever happens to the
 *   SharedArrayBuffer; the bell holds one too.
 * - Lock order: the process lock (the helper, in `ring`) before
 *   tl__async_lock; nothing under tl__async_lock takes another lock. */
typedef struct tl_shm_async_s {
  /* Immutable (`waiting` changes on the env's thread only, when a
   * reserving Semaphore request sleeps again on its node). */
  uint32_t token;
  tl_shm_join_t *join; /* referenced */
  uint32_t index, waiting;
  int ref;
  int kind;
  /* A hand-off waiter's lock word (kind HANDOFF), taken up when its node
   * is found notified (shm_wait.c, L8), or a reserving Semaphore
   * request's word (kind RESERVE), whose permits it takes the same way;
   * NULL otherwise. Its mapping lives while the request does
   * (lib/ShmLock.js and lib/ShmSemaphore.js hold the typed array). */
  void *word;
  /* The env's thread only. */
  struct tl_shm_async_s *next;
} tl_shm_async_t;

typedef struct tl_shm_env_s {
  /* Immutable. */
  napi_env env;
  napi_threadsafe_function tsfn;
  /* Set by the helper, cleared by the env's thread. */
  _Atomic int queued;
  /* The env's thread only. */
  int refs; /* waiters that keep the loop alive */
  uint32_t tokens;
  tl_shm_async_t *pending;
  /* Protected by tl__async_lock. */
  int waiting; /* records (counted before their nodes are published) */
  struct tl_shm_env_s *next;
} tl_shm_env_t;

typedef struct tl_shm_bell_s {
  tl_bell_t bell;      /* first: the helper hands it back */
  tl_shm_join_t *join; /* referenced */
  /* When the helper last had the envs look (tl__hp_monotonic_ms; its
   * thread only). */
  uint64_t looked;
  /* JS threads, under tl__async_lock. */
  int users;
  struct tl_shm_bell_s *next;
} tl_shm_bell_t;

static pthread_mutex_t tl__async_lock = PTHREAD_MUTEX_INITIALIZER;
static tl_shm_env_t *tl__async_envs;   /* protected by tl__async_lock */
static tl_shm_bell_t *tl__async_bells; /* protected by tl__async_lock */
/* Serialises the adding and removing of bells (JS threads), which take
 * the process lock: never held with tl__async_lock. */
static pthread_mutex_t tl__bells_lock = PTHREAD_MUTEX_INITIALIZER;

static int
tl__shm_bell_check(tl_bell_t *b, uint32_t *seen)
{
  tl_shm_bell_t *sb = (tl_shm_bell_t *)b;
  int c = tl_shm_bell_check(sb->join, seen);
  uint64_t now = tl__hp_monotonic_ms();

  /* P3 (shm_wait.c): a look every slice, rung or not. The ring queues a
   * poll only in envs that have promise waiters. */
  if (c == 0 && now - sb->looked >= (uint64_t)b->slice_ms)
    c = 1;
  if (c > 0)
    sb->looked = now;
  return c;
}

/* A doorbell rang: every env with waiters polls (each finds its own). */
static void
tl__shm_bell_ring(tl_bell_t *b)
{
  (void)b;
  pthread_mutex_lock(&tl__async_lock);
  for (tl_shm_env_t *e = tl__async_envs; e != NULL; e = e->next)
    if (e->waiting > 0 && !atomic_exchange(&e->queued, 1))
      napi_call_threadsafe_function(e->tsfn, NULL, napi_tsfn_nonblocking);
  pthread_mutex_unlock(&tl__async_lock);
}

/* One more user of the bell of `j` (made and added when missing). Returns
 * 0, or -1 when no helper thread could be started. */
static int
tl__shm_bell_use(tl_shm_join_t *j)
{
  tl_shm_bell_t *b;

  pthread_mutex_lock(&tl__bells_lock);
  pthread_mutex_lock(&tl__async_lock);
  for (b = tl__async_bells; b != NULL; b = b->next)
    if (b->join == j)
      break;
  if (b != NULL) {
    b->users++;
    pthread_mutex_unlock(&tl__async_lock);
    pthread_mutex_unlock(&tl__bells_lock);
    return 0;
  }
  pthread_mutex_unlock(&tl__async_lock);
  b = calloc(1, sizeof(*b));
  if (b == NULL) {
    pthread_mutex_unlock(&tl__bells_lock);
    return -1;
  }
  tl__shm_join_ref(j);
  b->join = j;
  b->users = 1;
  b->bell.word = tl_shm_bell(j);
  b->bell.check = tl__shm_bell_check;
  b->bell.ring = tl__shm_bell_ring;
  /* P3 (shm_wait.c): a poke whose poker died before its ring. */
  b->bell.slice_ms = TL_SHM_BELL_SLICE_MS;
  b->looked = tl__hp_monotonic_ms();
  if (tl__bell_add(&b->bell) != 0) {
    tl__shm_leave(j);
    free(b);
    pthread_mutex_unlock(&tl__bells_lock);
    return -1;
  }
  pthread_mutex_lock(&tl__async_lock);
  b->next = tl__async_bells;
  tl__async_bells = b;
  pthread_mutex_unlock(&tl__async_lock);
  pthread_mutex_unlock(&tl__bells_lock);
  return 0;
}

static void
tl__shm_bell_unuse(tl_shm_join_t *j)
{
  tl_shm_bell_t *b = NULL;

  pthread_mutex_lock(&tl__bells_lock);
  pthread_mutex_lock(&tl__async_lock);
  for (tl_shm_bell_t **p = &tl__async_bells; *p != NULL; p = &(*p)->next) {
    if ((*p)->join == j) {
      if (--(*p)->users == 0) {
        b = *p;
        *p = b->next;
      }
      break;
    }
  }
  pthread_mutex_unlock(&tl__async_lock);
  if (b != NULL) {
    tl__bell_remove(&b->bell);
    tl__shm_leave(b->join);
    free(b);
  }
  pthread_mutex_unlock(&tl__bells_lock);
}

static tl_shm_env_t *
tl__shm_env_of(napi_env env)
{
  tl_shm_env_t *e;

  pthread_mutex_lock(&tl__async_lock);
  for (e = tl__async_envs; e != NULL; e = e->next)
    if (e->env == env)
      break;
  pthread_mutex_unlock(&tl__async_lock);
  return e;
}

static void
tl__shm_env_count(tl_shm_env_t *e, int delta)
{
  pthread_mutex_lock(&tl__async_lock);
  e->waiting += delta;
  pthread_mutex_unlock(&tl__async_lock);
}

/* Forgets a record whose node is free (or left to its owner's death). */
static void
tl__shm_async_forget(tl_shm_env_t *e, tl_shm_async_t *a, int teardown)
{
  for (tl_shm_async_t **p = &e->pending; *p != NULL; p = &(*p)->next) {
    if (*p == a) {
      *p = a->next;
      break;
    }
  }
  tl__shm_env_count(e, -1);
  if (a->ref && --e->refs == 0 && !teardown)
    napi_unref_threadsafe_function(e->env, e->tsfn);
  tl__shm_bell_unuse(a->join);
  tl__shm_leave(a->join);
  free(a);
}

/* The env's end (a worker terminated, or the process exiting): every
 * waiter's node leaves the file. A lock waiter that a notify had counted
 * passes the wake on (a poke: the file's lock waiters look again). */
static void
tl__shm_env_end(void *arg)
{
  tl_shm_env_t *e = arg;

  while (e->pending != NULL) {
    tl_shm_async_t *a = e->pending;
    /* A hand-off is not taken up by a thread that ends (NULL): its id
     * dies, and the word is taken over without DIED (it never ran). */
    int r = tl_shm_async_cancel(a->join, a->index, a->waiting, NULL, a->kind);
    /* A reserving Semaphore request leaves RESERVED on the word (its
     * mapping may be gone): the poke has its waiters clear it as an
     * orphan (lib/ShmSemaphore.js, S8). */
    if ((r == 0 && (a->kind & TL_SHM_KIND_LOCK)) ||
        (a->kind & TL_SHM_KIND_RESERVE))
      tl_shm_poke(a->join);
    tl__shm_async_forget(e, a, 1);
  }
  pthread_mutex_lock(&tl__async_lock);
  for (tl_shm_env_t **p = &tl__async_envs; *p != NULL; p = &(*p)->next) {
    if (*p == e) {
      *p = e->next;
      break;
    }
  }
  pthread_mutex_unlock(&tl__async_lock);
  napi_release_threadsafe_function(e->tsfn, napi_tsfn_abort);
  free(e);
}

static void
tl__shm_call_js(napi_env env, napi_value fn, void *context, void *data)
{
  tl_shm_env_t *e = context;
  napi_value undefined;

  (void)data;
  if (env == NULL || fn == NULL)
    return;
  atomic_store(&e->queued, 0);
  TL_NAPI_FATAL(napi_get_undefined(env, &undefined));
  napi_call_function(env, undefined, fn, 0, NULL, NULL);
}

/* shmAsyncInit(poll): this thread's promise waiters on shared memory call
 * `poll()` when their process's doorbell rang. Once per thread. */
static napi_value
tl_napi_shm_async_init(napi_env env, napi_callback_info info)
{
  napi_value argv[1], name;
  tl_shm_env_t *e;

  TL_GET_ARGS(env, info, 1, argv);
  if (tl__shm_env_of(env) != NULL)
    return NULL;
  e = calloc(1, sizeof(*e));
  if (e == NULL) {
    napi_throw_error(env, "ENOMEM", "out of memory");
    return NULL;
  }
  e->env = env;
  e->tokens = 16;
  TL_NAPI_CALL(env, napi_create_string_utf8(env, "threadlock shm poll",
                                            NAPI_AUTO_LENGTH, &name));
  if (napi_create_threadsafe_function(env, argv[0], NULL, name, 0, 1, NULL,
                                      NULL, e, tl__shm_call_js,
                                      &e->tsfn) != napi_ok) {
    free(e);
    tl__throw_last(env, "napi_create_threadsafe_function");
    return NULL;
  }
  napi_unref_threadsafe_function(env, e->tsfn);
  if (napi_add_env_cleanup_hook(env, tl__shm_env_end, e) != napi_ok) {
    napi_release_threadsafe_function(e->tsfn, napi_tsfn_abort);
    free(e);
    tl__throw_last(env, "napi_add_env_cleanup_hook");
    return NULL;
  }
  pthread_mutex_lock(&tl__async_lock);
  e->next = tl__async_envs;
  tl__async_envs = e;
  pthread_mutex_unlock(&tl__async_lock);
  return NULL;
}

/* Reads (typedArray, index, value) of shared memory: the element's
 * address, width, expected value, the file's join and mapping. Returns
 * -1 with an exception pending. */
static int
tl__shm_element(napi_env env, napi_value *argv, void **addr, int *width,
                int64_t *expected, tl_shm_join_t **j, char **base)
{
  napi_typedarray_type type;
  size_t length;
  void *data;
  int64_t i;

  TL_NAPI_CALL_RET(
      env,
      napi_get_typedarray_info(env, argv[0], &type, &length, &data, NULL, NULL),
      -1);
  TL_NAPI_CALL_RET(env, napi_get_value_int64(env, argv[1], &i), -1);
  if (type != napi_bigint64_array && type != napi_int32_array) {
    napi_throw_type_error(env, NULL, "expected an Int32Array or BigInt64Array");
    return -1;
  }
  if (i < 0 || (uint64_t)i >= length) {
    napi_throw_range_error(env, NULL, "index out of range");
    return -1;
  }
  *width = type == napi_bigint64_array ? 8 : 4;
  *addr = (char *)data + (size_t)i * (size_t)*width;
  if (*width == 8) {
    bool lossless;
    TL_NAPI_CALL_RET(
        env, napi_get_value_bigint_int64(env, argv[2], expected, &lossless),
        -1);
  } else {
    int32_t v;
    TL_NAPI_CALL_RET(env, napi_get_value_int32(env, argv[2], &v), -1);
    *expected = v;
  }
  *j = tl_shm_find_map(*addr, base);
  if (*j == NULL) {
    napi_throw_type_error(env, NULL, "not memory from openSharedMemory");
    return -1;
  }
  return 0;
}

/* The ticket argument of a lock waiter (shmTicket; 0: none). */
static int
tl__shm_ticket_arg(napi_env env, napi_value arg, uint64_t *ticket)
{
  double d;

  TL_NAPI_CALL_RET(env, napi_get_value_double(env, arg, &d), -1);
  *ticket = d > 0 && d < 18446744073709551616.0 ? (uint64_t)d : 0;
  return 0;
}

/* shmWaitAsync(typedArray, index, value, ref, kind, pokes, ticket) -> a
 * result code (OK, NOT_EQUAL, POKED), or a token (>= 16) of a waiter now
 * in the file. `pokes`: the file's poke counter as a lock waiter read it
 * (shmPokes), else anything; `ticket`: a lock request's (shmTicket), a
 * reserving Semaphore request's need (kind RESERVE), else 0. */
static napi_value
tl_napi_shm_wait_async(napi_env env, napi_callback_info info)
{
  napi_value argv[7], v;
  void *addr;
  int width, kind;
  int64_t expected;
  uint32_t pokes;
  uint64_t ticket;
  bool ref;
  tl_shm_join_t *j;
  tl_shm_env_t *e;
  tl_shm_async_t *a;
  char *base;
  uint32_t id;

  TL_GET_ARGS(env, info, 7, argv);
  if (tl__shm_element(env, argv, &addr, &width, &expected, &j, &base) != 0)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_bool(env, argv[3], &ref));
  TL_NAPI_CALL(env, napi_get_value_int32(env, argv[4], &kind));
  TL_NAPI_CALL(env, napi_get_value_uint32(env, argv[5], &pokes));
  if (tl__shm_ticket_arg(env, argv[6], &ticket) != 0)
    return NULL;
  e = tl__shm_env_of(env);
  if (e == NULL) {
    napi_throw_error(env, NULL, "shmAsyncInit was not called");
    return NULL;
  }
  tl_shm_thread_t *t = tl__shm_thread_of(env, j);
  if (t == NULL)
    return NULL;
  id = t->id;
  /* The record keeps a use of the file's bell from now on (`belled`). A
   * failure here is not one: the wait's own use below starts the helper
   * or says why not. Only this env's thread changes `belled`. */
  if (!t->belled && tl__shm_bell_use(j) == 0)
    t->belled = 1;
  a = calloc(1, sizeof(*a));
  if (a == NULL) {
    napi_throw_error(env, "ENOMEM", "out of memory");
    return NULL;
  }
  if (tl__shm_bell_use(j) != 0) {
    free(a);
    napi_throw_error(env, "EAGAIN",
                     "cannot start the helper thread (the process or user "
                     "has too many threads)");
    return NULL;
  }
  tl__shm_env_count(e, 1);
  int r = tl_shm_wait_async(j, base, addr, width, expected, id, kind, pokes,
                            ticket, &a->index, &a->waiting);
  if (r != TL_SHM_PENDING) {
    tl__shm_env_count(e, -1);
    tl__shm_bell_unuse(j);
    free(a);
    return tl__shm_result(env, r);
  }
  tl__shm_join_ref(j);
  a->join = j;
  a->ref = ref;
  a->kind = kind;
  a->word = (kind & (TL_SHM_KIND_HANDOFF | TL_SHM_KIND_RESERVE)) ? addr : NULL;
  a->token = e->tokens++;
  if (e->tokens < 16)
    e->tokens = 16;
  a->next = e->pending;
  e->pending = a;
  if (ref && e->refs++ == 0)
    napi_ref_threadsafe_function(env, e->tsfn);
  TL_NAPI_CALL(env, napi_create_uint32(env, a->token, &v));
  return v;
}

/* shmAsyncTake() -> [token, result, ...] of this thread's waiters whose
 * node left WAITING (free now): result OK (notified), POKED, ACCEPTED
 * (handed the lock and taken up), or -1 (the file shrank). */
static napi_value
tl_napi_shm_async_take(napi_env env, napi_callback_info info)
{
  napi_value r, v;
  tl_shm_env_t *e = tl__shm_env_of(env);
  uint32_t n = 0;

  (void)info;
  TL_NAPI_CALL(env, napi_create_array(env, &r));
  if (e == NULL)
    return r;
  for (tl_shm_async_t *a = e->pending, *next; a != NULL; a = next) {
    next = a->next;
    int d = tl_shm_async_done(a->join, a->index, &a->waiting, a->word, a->kind);
    if (d == 0)
      continue;
    TL_NAPI_CALL(env, napi_create_uint32(env, a->token, &v));
    TL_NAPI_CALL(env, napi_set_element(env, r, n++, v));
    TL_NAPI_CALL(env, napi_create_int32(env,
                                        d == 1   ? 0
                                        : d == 2 ? TL_SHM_POKED
                                        : d == 3 ? TL_SHM_ACCEPTED
                                                 : -1,
                                        &v));
    TL_NAPI_CALL(env, napi_set_element(env, r, n++, v));
    tl__shm_async_forget(e, a, 0);
  }
  return r;
}

/* shmAsyncCancel(token) -> TIMED_OUT (withdrawn), OK (a notify counted it
 * first), ACCEPTED (a hand-off counted it first, taken up), POKED (a poke
 * freed it first), or -1 (no such waiter: taken already). */
static napi_value
tl_napi_shm_async_cancel(napi_env env, napi_callback_info info)
{
  napi_value argv[1];
  tl_shm_env_t *e = tl__shm_env_of(env);
  uint32_t token;

  TL_GET_ARGS(env, info, 1, argv);
  TL_NAPI_CALL(env, napi_get_value_uint32(env, argv[0], &token));
  if (e != NULL) {
    for (tl_shm_async_t *a = e->pending; a != NULL; a = a->next) {
      if (a->token != token)
        continue;
      int r =
          tl_shm_async_cancel(a->join, a->index, a->waiting, a->word, a->kind);
      tl__shm_async_forget(e, a, 0);
      return tl__shm_result(env, r);
    }
  }
  napi_value none;
  TL_NAPI_CALL(env, napi_create_int32(env, -1, &none));
  return none;
}

/* shmWaitLock(int32Array, index, value, timeout, pokes, ticket[, reader])
 * -> OK, NOT_EQUAL, TIMED_OUT, INTERRUPTED, POKED or ACCEPTED: a blocking
 * lock waiter (shm_wait.c) of the request with that ticket (shmTicket);
 * `reader`: an RWLock's reader, which takes a hand-off up as a read lock
 * (shm_rw.c, R5). */
static napi_value
tl_napi_shm_wait_lock(napi_env env, napi_callback_info info)
{
  napi_value argv[7];
  void *addr;
  int width;
  int64_t expected;
  double timeout;
  uint32_t pokes;
  uint64_t ticket;
  bool reader = false;
  napi_valuetype type;
  tl_shm_join_t *j;
  tl_host_stop_t stop;
  tl_probe_t probe;
  char *base;
  uint32_t id;

  TL_GET_ARGS(env, info, 7, argv);
  if (tl__shm_element(env, argv, &addr, &width, &expected, &j, &base) != 0)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_double(env, argv[3], &timeout));
  TL_NAPI_CALL(env, napi_get_value_uint32(env, argv[4], &pokes));
  if (tl__shm_ticket_arg(env, argv[5], &ticket) != 0)
    return NULL;
  TL_NAPI_CALL(env, napi_typeof(env, argv[6], &type));
  if (type != napi_undefined)
    TL_NAPI_CALL(env, napi_get_value_bool(env, argv[6], &reader));
  if (tl__shm_thread_id(env, j, &id) != 0)
    return NULL;
  tl__probe_init(tl__env(env), &probe);
  tl__shm_stop_of(&probe, &stop);
  return tl__shm_result(env,
                        tl_shm_wait_lock(j, base, addr, expected, timeout, id,
                                         pokes, ticket, reader ? 1 : 0, &stop));
}

/* shmTicket(typedArray) -> a lock request's ticket (shm_wait.c), drawn at
 * its first sleep and passed to each of its waits. */
static napi_value
tl_napi_shm_ticket(napi_env env, napi_callback_info info)
{
  napi_value argv[1], r;
  tl_shm_join_t *j;

  TL_GET_ARGS(env, info, 1, argv);
  j = tl__shm_join_of(env, argv[0]);
  if (j == NULL)
    return NULL;
  TL_NAPI_CALL(env, napi_create_double(env, (double)tl_shm_ticket(j), &r));
  return r;
}

/* shmHasNode(int32Array, index, owner) -> whether that owner has a node
 * of the word waiting or notified (shm_wait.c). */
static napi_value
tl_napi_shm_has_node(napi_env env, napi_callback_info info)
{
  napi_value argv[3], r;
  void *addr;
  int width;
  int64_t owner;
  tl_shm_join_t *j;
  char *base;

  TL_GET_ARGS(env, info, 3, argv);
  if (tl__shm_element(env, argv, &addr, &width, &owner, &j, &base) != 0)
    return NULL;
  int h = tl_shm_has_node(j, base, addr, (uint32_t)owner);
  if (h < 0)
    return tl__shm_result(env, h);
  TL_NAPI_CALL(env, napi_get_boolean(env, h == 1, &r));
  return r;
}

/* shmSemReserved(int32Array, index) -> whether a live reserving request
 * has a node on the Semaphore word (shm_wait.c): RESERVED without one is
 * an orphan. */
static napi_value
tl_napi_shm_sem_reserved(napi_env env, napi_callback_info info)
{
  napi_value argv[3], r;
  void *addr;
  int width;
  int64_t ignored;
  tl_shm_join_t *j;
  char *base;

  TL_GET_ARGS(env, info, 2, argv);
  argv[2] = argv[1]; /* no expected value: the index stands in */
  if (tl__shm_element(env, argv, &addr, &width, &ignored, &j, &base) != 0)
    return NULL;
  int h = tl_shm_sem_reserved(j, base, addr);
  if (h < 0)
    return tl__shm_result(env, h);
  TL_NAPI_CALL(env, napi_get_boolean(env, h == 1, &r));
  return r;
}

/* shmWaitReserve(int32Array, index, value, need, timeout) -> ACCEPTED
 * (the permits taken), NOT_EQUAL, OK (the reservation was lost: compete
 * again), TIMED_OUT or INTERRUPTED: a blocking Semaphore request that
 * reserves the word (shm_wait.c, tl_shm_wait_reserve). */
static napi_value
tl_napi_shm_wait_reserve(napi_env env, napi_callback_info info)
{
  napi_value argv[5];
  void *addr;
  int width;
  int64_t expected;
  uint32_t need;
  double timeout;
  tl_shm_join_t *j;
  tl_host_stop_t stop;
  tl_probe_t probe;
  char *base;
  uint32_t id;

  TL_GET_ARGS(env, info, 5, argv);
  if (tl__shm_element(env, argv, &addr, &width, &expected, &j, &base) != 0)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_uint32(env, argv[3], &need));
  TL_NAPI_CALL(env, napi_get_value_double(env, argv[4], &timeout));
  if (width != 4) {
    napi_throw_type_error(env, NULL, "a Semaphore word must be an Int32Array");
    return NULL;
  }
  if (tl__shm_thread_id(env, j, &id) != 0)
    return NULL;
  tl__probe_init(tl__env(env), &probe);
  tl__shm_stop_of(&probe, &stop);
  return tl__shm_result(env, tl_shm_wait_reserve(j, base, addr, expected, need,
                                                 timeout, id, &stop));
}

/* shmLockRelease(int32Array, index, held, mode) -> 1 (handed to a
 * waiter), 0 (freed, one waiter woken), 2 (the word is not `held`: read
 * it again): the release of a lock word with waiters (shm_wait.c). */
static napi_value
tl_napi_shm_lock_release(napi_env env, napi_callback_info info)
{
  napi_value argv[4];
  void *addr;
  int width;
  int64_t held;
  int32_t mode;
  tl_shm_join_t *j;
  char *base;

  TL_GET_ARGS(env, info, 4, argv);
  if (tl__shm_element(env, argv, &addr, &width, &held, &j, &base) != 0)
    return NULL;
  if (width != 4) {
    napi_throw_type_error(env, NULL, "a lock word must be an Int32Array");
    return NULL;
  }
  TL_NAPI_CALL(env, napi_get_value_int32(env, argv[3], &mode));
  if (mode < TL_SHM_RELEASE_LOCK || mode > TL_SHM_RELEASE_RW) {
    napi_throw_range_error(env, NULL, "unknown release mode");
    return NULL;
  }
  return tl__shm_result(
      env, tl_shm_lock_release(j, base, addr, (uint32_t)held, (int)mode));
}

/* shmPokes(typedArray) -> the file's poke counter (shm_wait.c). */
static napi_value
tl_napi_shm_pokes(napi_env env, napi_callback_info info)
{
  napi_value argv[1], r;
  tl_shm_join_t *j;

  TL_GET_ARGS(env, info, 1, argv);
  j = tl__shm_join_of(env, argv[0]);
  if (j == NULL)
    return NULL;
  TL_NAPI_CALL(env, napi_create_uint32(env, tl_shm_pokes(j), &r));
  return r;
}

/* shmWatch(typedArray) -> undefined: the deaths that matter to a sleeper
 * on the memory, those of every other process of its file, are watched
 * (tl_shm_watch_all in shm_owners.c; the holder of its word is among
 * them). */
static napi_value
tl_napi_shm_watch(napi_env env, napi_callback_info info)
{
  napi_value argv[1];
  tl_shm_join_t *j;

  TL_GET_ARGS(env, info, 1, argv);
  j = tl__shm_join_of(env, argv[0]);
  if (j == NULL)
    return NULL;
  int r = tl_shm_watch_all(j, tl_shm_poke);
  if (r == TL_HOST_ENODES) {
    napi_throw_error(env, "EAGAIN",
                     "cannot start a watcher thread (the process or user "
                     "has too many threads)");
    return NULL;
  }
  if (r != 0)
    return tl__shm_result(env, r);
  return NULL;
}

/* The RWLock word under (typedArray, index) with the caller's owner id;
 * -1 with an exception pending. */
static int
tl__shm_rw_args(napi_env env, napi_callback_info info, size_t argc,
                napi_value *argv, void **addr, tl_shm_join_t **j, char **base,
                uint32_t *id)
{
  napi_value args[3];
  int width;
  int64_t ignored;
  size_t n = argc;

  TL_NAPI_CALL_RET(env, napi_get_cb_info(env, info, &n, argv, NULL, NULL), -1);
  args[0] = argv[0];
  args[1] = argv[1];
  args[2] = argv[1]; /* no expected value: the index stands in */
  if (tl__shm_element(env, args, addr, &width, &ignored, j, base) != 0)
    return -1;
  if (width != 4) {
    napi_throw_type_error(env, NULL, "expected an Int32Array");
    return -1;
  }
  return tl__shm_thread_id(env, *j, id);
}

static napi_value
tl__shm_rw_result(napi_env env, int64_t r)
{
  if (r == TL_HOST_ENODES) {
    napi_throw_error(env, "EFULL",
                     "every read-hold record of the shared-memory file is in "
                     "use");
    return NULL;
  }
  return tl__shm_result(env, r);
}

/* A call of shm_rw.c on the element (int32Array, index), for the calling
 * thread's owner id. */
static napi_value
tl__shm_rw_call(napi_env env, napi_callback_info info,
                int (*fn)(tl_shm_join_t *j, char *base, void *word,
                          uint32_t owner))
{
  napi_value argv[2];
  void *addr;
  tl_shm_join_t *j;
  char *base;
  uint32_t id;

  if (tl__shm_rw_args(env, info, 2, argv, &addr, &j, &base, &id) != 0)
    return NULL;
  return tl__shm_rw_result(env, fn(j, base, addr, id));
}

/* shmReadEnter(int32Array, index) -> 0, 1 (a dead writer's id cleared),
 * BLOCKED or DEADLK: one more read lock of the calling thread (shm_rw.c). */
static napi_value
tl_napi_shm_read_enter(napi_env env, napi_callback_info info)
{
  return tl__shm_rw_call(env, info, tl_shm_read_enter);
}

/* shmReadLeave(int32Array, index) -> 0 or NOTOWNER. */
static napi_value
tl_napi_shm_read_leave(napi_env env, napi_callback_info info)
{
  return tl__shm_rw_call(env, info, tl_shm_read_leave);
}

/* shmReadHolds(int32Array, index, mode) -> the live read locks of the
 * word. Mode 0: all of them; 1 and 2 (a writer waiting for them): -1 when
 * the caller holds some, and with 1 the holders' processes are watched. */
static napi_value
tl_napi_shm_read_holds(napi_env env, napi_callback_info info)
{
  napi_value argv[3];
  void *addr;
  tl_shm_join_t *j;
  char *base;
  uint32_t id, mode;
  int64_t mine;

  if (tl__shm_rw_args(env, info, 3, argv, &addr, &j, &base, &id) != 0)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_uint32(env, argv[2], &mode));
  int64_t r = tl_shm_read_holds(j, base, addr, id, mode == 1, &mine);
  if (r >= 0 && mode != 0 && mine > 0) {
    napi_value v;
    TL_NAPI_CALL(env, napi_create_int32(env, -1, &v));
    return v;
  }
  return tl__shm_rw_result(env, r);
}

/* shmWakeWriter(int32Array, index) -> 0: R2 after a read hold that
 * JavaScript gave back itself (lib/ShmRWLock.js). */
static napi_value
tl_napi_shm_wake_writer(napi_env env, napi_callback_info info)
{
  return tl__shm_rw_call(env, info, tl_shm_wake_writer);
}

/* shmHoldsUsed(typedArray) -> read-hold records of the file in use. */
static napi_value
tl_napi_shm_holds_used(napi_env env, napi_callback_info info)
{
  return tl__shm_count(env, info, tl_shm_holds_used);
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
    { "shmHeader", tl_napi_shm_header },
    { "shmCount", tl_napi_shm_count },
    { "shmOwnerId", tl_napi_shm_owner_id },
    { "shmOwnerAlive", tl_napi_shm_owner_alive },
    { "shmNodesUsed", tl_napi_shm_nodes_used },
    { "shmAsyncInit", tl_napi_shm_async_init },
    { "shmWaitAsync", tl_napi_shm_wait_async },
    { "shmAsyncTake", tl_napi_shm_async_take },
    { "shmAsyncCancel", tl_napi_shm_async_cancel },
    { "shmWaitLock", tl_napi_shm_wait_lock },
    { "shmWatch", tl_napi_shm_watch },
    { "shmPokes", tl_napi_shm_pokes },
    { "shmTicket", tl_napi_shm_ticket },
    { "shmLockRelease", tl_napi_shm_lock_release },
    { "shmHasNode", tl_napi_shm_has_node },
    { "shmSemReserved", tl_napi_shm_sem_reserved },
    { "shmWaitReserve", tl_napi_shm_wait_reserve },
    { "shmReadEnter", tl_napi_shm_read_enter },
    { "shmReadLeave", tl_napi_shm_read_leave },
    { "shmReadHolds", tl_napi_shm_read_holds },
    { "shmHoldsUsed", tl_napi_shm_holds_used },
    { "shmWakeWriter", tl_napi_shm_wake_writer },
  };
  static const struct {
    const char *name;
    int32_t value;
  } constants[] = {
    { "ESIZE", TL_SHM_ESIZE },
    { "ENOTSUP", TL_SHM_ENOTSUP },
    { "HEADER", TL_SHM_HEADER },
    { "POKED", TL_SHM_POKED },
    { "KIND_LOCK", TL_SHM_KIND_LOCK },
    { "KIND_HANDOFF", TL_SHM_KIND_HANDOFF },
    { "KIND_RESERVE", TL_SHM_KIND_RESERVE },
    { "SEM_RESERVED", (int32_t)TL_SHM_SEM_RESERVED },
    { "SEM_WAITERS", (int32_t)TL_SHM_SEM_WAITERS },
    { "SEM_MASK", (int32_t)TL_SHM_SEM_MASK },
    { "STARVING_US", TL_SHM_STARVING_US },
    { "KIND_PRESENT", TL_SHM_KIND_PRESENT },
    { "KIND_READER", TL_SHM_KIND_READER },
    { "ACCEPTED", TL_SHM_ACCEPTED },
    { "LOCK_ID", (int32_t)TL_SHM_LOCK_ID },
    { "LOCK_WAITERS", (int32_t)TL_SHM_LOCK_WAITERS },
    { "LOCK_DIED", (int32_t)TL_SHM_LOCK_DIED },
    { "LOCK_HANDED", (int32_t)TL_SHM_LOCK_HANDED },
    { "RELEASE_FIFO", TL_SHM_RELEASE_FIFO },
    { "RELEASE_RW", TL_SHM_RELEASE_RW },
    { "RW_DRAINING", (int32_t)TL_SHM_RW_DRAINING },
    { "ROUTE", TL_SHM_ROUTE },
    { "RW_BLOCKED", TL_SHM_RW_BLOCKED },
    { "RW_DEADLK", TL_SHM_RW_DEADLK },
    { "RW_NOTOWNER", TL_SHM_RW_NOTOWNER },
    { "READERS", TL_SHM_READERS_AT / 4 },
    { "HOLDS_AT", TL_SHM_HOLDS_AT },
    { "HOLDS", TL_SHM_HOLDS },
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
  /* The RWLock reader's take-up of a hand-off (shm_rw.c, above the waiter
   * list that calls it). */
  tl_shm_set_reader_take_up(tl_shm_read_take_up);
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
