/* Node-API glue for the waiter list and the gates: module init and the
 * exports of wait, notify, waitAsync and the gate requests.
 *
 * Converts already-validated arguments (lib/ does the spec's checks and
 * coercions). The per-thread state lives in env.c, the named-lock exports
 * in binding_names.c, the waiting logic in the core (table.c, gates.c,
 * owners.c).
 */
#include <node_api.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "env.h"
#include "host/shm.h"
#include "singleton.h"

napi_value tl__named_exports(napi_env env, napi_value exports);
napi_value tl__host_exports(napi_env env, napi_value exports);
napi_value tl__shm_exports(napi_env env, napi_value exports);
napi_value tl__shm_napi_wait(napi_env env, void *addr, int width,
                             int64_t expected, double timeout,
                             const tl_probe_t *probe);
napi_value tl__shm_napi_notify(napi_env env, void *addr, double count);
napi_value tl__shm_napi_waiters(napi_env env, void *addr);

/* Reads the typed array and element index: the address and element size.
 * Returns -1 with an exception pending; with `shm` NULL, refuses memory
 * shared with other processes, else says in `*shm` whether it is. */
static int
tl__element_of(napi_env env, napi_value ta, napi_value index, void **addr,
               int *width, int *shm)
{
  napi_typedarray_type type;
  size_t length;
  void *data;
  int64_t i;

  TL_NAPI_CALL_RET(
      env, napi_get_typedarray_info(env, ta, &type, &length, &data, NULL, NULL),
      -1);
  TL_NAPI_CALL_RET(env, napi_get_value_int64(env, index, &i), -1);
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
  /* Memory shared with other processes (threadlock/host's
   * openSharedMemory): this process's waiter list would not reach them.
   * One atomic load while the process maps no such memory. */
  int in_shm = tl_shm_contains(*addr, (size_t)*width);
  if (shm != NULL) {
    *shm = in_shm;
  } else if (in_shm) {
    napi_throw_type_error(
        env, "ENOTSUP",
        "the in-process core does not serve memory from openSharedMemory "
        "(threadlock/host): the primitives and wait, notify and waitAsync "
        "take their cross-process paths there");
    return -1;
  }
  return 0;
}

static int
tl__element(napi_env env, napi_value ta, napi_value index, void **addr,
            int *width)
{
  return tl__element_of(env, ta, index, addr, width, NULL);
}

static int
tl__expected(napi_env env, napi_value v, int width, int64_t *out)
{
  int32_t i32;
  bool lossless;

  if (width == 8) {
    TL_NAPI_CALL_RET(env, napi_get_value_bigint_int64(env, v, out, &lossless),
                     -1);
    return 0;
  }
  TL_NAPI_CALL_RET(env, napi_get_value_int32(env, v, &i32), -1);
  *out = i32;
  return 0;
}

static napi_value
tl__int(napi_env env, int64_t v)
{
  napi_value r;

  TL_NAPI_CALL(env, napi_create_int64(env, v, &r));
  return r;
}

/* Env thread: `r` is what the core said to the request `n` on the typed
 * array `ta`. Unless the request is pending, frees `n` and returns `r`.
 * A pending request's waiter is in the table and may be notified at any
 * moment, but the node still belongs to this thread: keeps its buffer
 * alive, books it and returns its promise, or [promise, token] with
 * `with_token`. On failure the enqueue is undone and NULL returned with an
 * exception pending: the node is freed, or, when a notify took it first,
 * given back what the notify brought (a grant or a wake) and left, retired,
 * to the ready queue that already holds it. Either way it was never
 * booked. */
static napi_value
tl__start(napi_env env, tl_env_t *e, tl_async_t *n, int r, napi_value ta,
          bool with_token)
{
  napi_value promise, token, pair;

  if (r != TL_RESULT_PENDING) {
    tl__free(n);
    if (r == TL_ENOMEM) {
      tl__throw_enomem(env);
      return NULL;
    }
    return tl__int(env, r);
  }

  /* The typed array is alive in this call, so the buffer cannot go away
   * before the keep is taken, even if a notify already took the node. */
  if (tl__keep(env, e, ta, &n->keep) != 0)
    goto fail;
  if (n->timeout.deadline != UINT64_MAX && tl_heap_reserve(&e->heap, 1) != 0) {
    tl__throw_enomem(env);
    goto fail;
  }
  if (napi_create_promise(env, &n->deferred, &promise) != napi_ok) {
    tl__throw_last(env, "napi_create_promise");
    goto fail;
  }
  if (tl__book(e, n))
    tl__arm_timer(e);
  if (!with_token)
    return promise;
  TL_NAPI_CALL(env, tl__token_new(env, n, &token));
  TL_NAPI_CALL(env, napi_create_array_with_length(env, 2, &pair));
  TL_NAPI_CALL(env, napi_set_element(env, pair, 0, promise));
  TL_NAPI_CALL(env, napi_set_element(env, pair, 1, token));
  return pair;

fail:
  if (n->keep != NULL)
    tl__unkeep(e, n->keep);
  n->keep = NULL;
  if (tl_cancel(&n->w, TL_CANCELLED) == TL_CANCEL_WAITING) {
    tl__free(n);
  } else {
    /* Granted, or woken and on the ready queue already: the queue's
     * drain frees it once it is done. */
    if (n->kind == TL_NODE_GATE)
      tl_gate_abandon(&n->w);
    n->deferred = NULL;
    n->done = 1;
  }
  return NULL;
}

/* wait(ta, index, value, timeoutMs) -> result code. */
static napi_value
tl_napi_wait(napi_env env, napi_callback_info info)
{
  napi_value argv[4];
  tl_probe_t probe;
  void *addr;
  int width;
  int64_t expected;
  double timeout;
  int shm;

  TL_GET_ARGS(env, info, 4, argv);
  if (tl__element_of(env, argv[0], argv[1], &addr, &width, &shm) != 0 ||
      tl__expected(env, argv[2], width, &expected) != 0)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_double(env, argv[3], &timeout));
  tl__probe_init(tl__env(env), &probe);
  if (shm)
    return tl__shm_napi_wait(env, addr, width, expected, timeout, &probe);
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
  int shm;

  TL_GET_ARGS(env, info, 3, argv);
  if (tl__element_of(env, argv[0], argv[1], &addr, &width, &shm) != 0)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_double(env, argv[2], &count));
  if (shm)
    return tl__shm_napi_notify(env, addr, count);
  return tl__int(
      env, tl_notify(addr, count >= 9007199254740992.0 ? -1 : (int64_t)count));
}

/* casNotify(int32Array, index, expected, replacement, count) -> how many
 * waiters it woke after changing the element from `expected` to
 * `replacement`, or -1 when the element was not `expected` (nothing
 * changed, nobody woken). One native call, so that a worker terminated
 * between the change and the wake cannot leave the waiters asleep (V8
 * stops a terminated thread at a call or a loop, never inside one). */
static napi_value
tl_napi_cas_notify(napi_env env, napi_callback_info info)
{
  napi_value argv[5];
  void *addr;
  int width;
  int32_t expected, replacement;
  double count;
  int shm;

  TL_GET_ARGS(env, info, 5, argv);
  if (tl__element_of(env, argv[0], argv[1], &addr, &width, &shm) != 0)
    return NULL;
  if (width != 4) {
    napi_throw_type_error(env, NULL, "casNotify needs an Int32Array");
    return NULL;
  }
  TL_NAPI_CALL(env, napi_get_value_int32(env, argv[2], &expected));
  TL_NAPI_CALL(env, napi_get_value_int32(env, argv[3], &replacement));
  TL_NAPI_CALL(env, napi_get_value_double(env, argv[4], &count));
  if (!atomic_compare_exchange_strong((_Atomic int32_t *)addr, &expected,
                                      replacement))
    return tl__int(env, -1);
  if (shm)
    return tl__shm_napi_notify(env, addr, count);
  return tl__int(
      env, tl_notify(addr, count >= 9007199254740992.0 ? -1 : (int64_t)count));
}

/* waitAsync(ta, index, value, timeoutMs, ref, withToken) -> code, or a
 * Promise, or [Promise, token] when withToken is set. */
static napi_value
tl_napi_wait_async(napi_env env, napi_callback_info info)
{
  napi_value argv[6];
  tl_env_t *e = tl__env(env);
  tl_async_t *n;
  void *addr;
  int width, r;
  int64_t expected;
  double timeout;
  bool ref, with_token;

  int shm;

  TL_GET_ARGS(env, info, 6, argv);
  if (tl__element_of(env, argv[0], argv[1], &addr, &width, &shm) != 0)
    return NULL;
  /* Shared memory: lib/shmWait.js makes the request (a node in the file,
   * woken through the process's doorbell). No cost for other memory. */
  if (shm)
    return tl__int(env, TL_SHM_ROUTE);
  if (tl__expected(env, argv[2], width, &expected) != 0)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_double(env, argv[3], &timeout));
  TL_NAPI_CALL(env, napi_get_value_bool(env, argv[4], &ref));
  TL_NAPI_CALL(env, napi_coerce_to_bool(env, argv[5], &argv[5]));
  TL_NAPI_CALL(env, napi_get_value_bool(env, argv[5], &with_token));
  n = tl__new_async(env, e, timeout, ref, TL_NODE_WAIT, sizeof(*n), tl__settle);
  if (n == NULL)
    return NULL;
  r = tl_wait_async(&n->w, addr, width, expected, timeout == 0);
  return tl__start(env, e, n, r, argv[0], with_token);
}

/* waiterCount(ta, index) -> waiters enqueued on that element. */
static napi_value
tl_napi_waiter_count(napi_env env, napi_callback_info info)
{
  napi_value argv[2];
  void *addr;
  int width;

  int shm;

  TL_GET_ARGS(env, info, 2, argv);
  if (tl__element_of(env, argv[0], argv[1], &addr, &width, &shm) != 0)
    return NULL;
  if (shm)
    return tl__shm_napi_waiters(env, addr);
  return tl__int(env, (int64_t)tl_waiter_count(addr));
}

/* wordKey(ta, index) -> the element's address, as a number: the same for
 * every typed array, buffer object and thread that sees that memory, so
 * that JavaScript can keep one thread's state per lock word (an address
 * fits a double's 53 bits on every platform Node runs on). */
static napi_value
tl_napi_word_key(napi_env env, napi_callback_info info)
{
  napi_value argv[2], r;
  void *addr;
  int width, shm;

  /* Memory shared by processes too (`shm` is not needed): one process maps
   * a file once, so an address names one word there as well
   * (lib/ShmOrder.js). */
  TL_GET_ARGS(env, info, 2, argv);
  if (tl__element_of(env, argv[0], argv[1], &addr, &width, &shm) != 0)
    return NULL;
  TL_NAPI_CALL(env, napi_create_double(env, (double)(uintptr_t)addr, &r));
  return r;
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
  TL_NAPI_CALL_RET(env, napi_get_value_int32(env, argv[2], gate), -1);
  TL_NAPI_CALL_RET(env, napi_get_value_uint32(env, argv[3], id), -1);
  TL_NAPI_CALL_RET(env, napi_get_value_uint32(env, argv[4], amount), -1);
  return 0;
}

/* A read lock just granted to this thread (`r`) keeps its buffer alive
 * until it is released. Returns 0, or -1 with an exception pending and the
 * read lock given back. */
static int
tl__read_kept(napi_env env, napi_value ta, void *addr, uint32_t id, int r)
{
  const void *base;

  if (r != TL_RESULT_ACQUIRED && r != TL_RESULT_OWNER_DIED)
    return 0;
  if (tl__keep(env, tl__env(env), ta, &base) == 0)
    return 0;
  tl_gate_release(addr, TL_GATE_READ, id, 0);
  return -1;
}

/* gateAcquire(i32, index, gate, id, amount, timeoutMs) -> code. */
static napi_value
tl_napi_gate_acquire(napi_env env, napi_callback_info info)
{
  napi_value argv[6];
  tl_probe_t probe;
  void *addr;
  int32_t gate;
  uint32_t id, amount;
  double timeout;
  int r;

  TL_GET_ARGS(env, info, 6, argv);
  if (tl__gate_args(env, argv, &addr, &gate, &id, &amount) != 0)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_double(env, argv[5], &timeout));
  tl__probe_init(tl__env(env), &probe);
  r = tl_gate_acquire(addr, gate, id, amount, timeout, &probe);
  if (r == TL_ENOMEM) {
    tl__throw_enomem(env);
    return NULL;
  }
  if (gate == TL_GATE_READ && tl__read_kept(env, argv[0], addr, id, r) != 0)
    return NULL;
  return tl__int(env, r);
}

/* An optional argument: milliseconds a request has waited in its thread's
 * queue (lib/ThreadQueue.js), as nanoseconds; 0 when absent. */
static int
tl__waited_ns(napi_env env, napi_value v, uint64_t *out)
{
  napi_valuetype type;
  double ms;

  *out = 0;
  TL_NAPI_CALL_RET(env, napi_typeof(env, v, &type), -1);
  if (type != napi_number)
    return 0;
  TL_NAPI_CALL_RET(env, napi_get_value_double(env, v, &ms), -1);
  if (ms > 0 && ms < 1e12)
    *out = (uint64_t)(ms * 1e6);
  return 0;
}

/* gateRelease(i32, index, gate, id, amount) -> 0 or a TL_E* code. */
static napi_value
tl_napi_gate_release(napi_env env, napi_callback_info info)
{
  napi_value argv[5];
  void *addr;
  int32_t gate;
  uint32_t id, amount;
  int r;

  TL_GET_ARGS(env, info, 5, argv);
  if (tl__gate_args(env, argv, &addr, &gate, &id, &amount) != 0)
    return NULL;
  if (gate == TL_GATE_LOCK || gate == TL_GATE_WRITE) {
    /* The answer, and how long until the oldest waiter starves, in one
     * number: r + 16 * (1 + microseconds left) while a request is queued
     * (lib/LockWord.js decodes it). */
    int64_t left_ns;
    r = tl_lock_release_ex(addr, gate, id, amount, &left_ns);
    if (r >= 0 && left_ns >= 0) {
      int64_t us = left_ns / 1000;
      return tl__int(env, r + 16 * (1 + (us < (1 << 24) ? us : (1 << 24))));
    }
    return tl__int(env, r);
  }
  if (gate == TL_GATE_SEM) {
    /* The same encoding, for the semaphore's woken shortcut (sem.c). A
     * request of this thread that the release wakes or grants is handled
     * before the call returns (ready.c), not a turn of the loop later. */
    tl_env_t *e = tl__env(env);
    int drain = tl__drain_begin(e);
    int64_t left_ns;
    int64_t us;
    r = tl_sem_release_ex(addr, amount, &left_ns);
    if (drain)
      tl__drain_now(env, e);
    if (r < 0)
      return tl__int(env, r);
    us = left_ns / 1000;
    return tl__int(env, r + 16 * (1 + (us < (1 << 24) ? us : (1 << 24))));
  }
  r = tl_gate_release(addr, gate, id, amount);
  if (gate == TL_GATE_READ && r == 0)
    tl__unkeep_ta(env, tl__env(env), argv[0]);
  return tl__int(env, r);
}

/* gateAcquireAsync(i32, index, gate, id, amount, timeoutMs, ref, withToken
 * [, waitedMs]) -> a code when decided at once, else a Promise of a code, or
 * [Promise, token] when withToken is set. `waitedMs`: how long the request
 * has waited in its thread's queue already (it takes its place in the
 * core's queue by its first arrival). */
static napi_value
tl_napi_gate_acquire_async(napi_env env, napi_callback_info info)
{
  napi_value argv[9];
  uint64_t waited;
  tl_env_t *e = tl__env(env);
  tl_async_t *n;
  void *addr;
  int32_t gate;
  uint32_t id, amount;
  double timeout;
  bool ref, with_token;
  int r;

  TL_GET_ARGS(env, info, 9, argv);
  if (tl__gate_args(env, argv, &addr, &gate, &id, &amount) != 0)
    return NULL;
  if (tl__waited_ns(env, argv[8], &waited) != 0)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_double(env, argv[5], &timeout));
  TL_NAPI_CALL(env, napi_get_value_bool(env, argv[6], &ref));
  TL_NAPI_CALL(env, napi_get_value_bool(env, argv[7], &with_token));
  n = tl__new_async(env, e, timeout, ref, TL_NODE_GATE, sizeof(*n), tl__settle);
  if (n == NULL)
    return NULL;
  r = tl_gate_acquire_async_at(&n->w, addr, gate, id, amount, waited);
  if (gate == TL_GATE_READ && r != TL_RESULT_PENDING &&
      tl__read_kept(env, argv[0], addr, id, r) != 0) {
    tl__free(n);
    return NULL;
  }
  return tl__start(env, e, n, r, argv[0], with_token);
}

/* gateQueued(i32, index, id) -> whether thread `id` has a request queued
 * for that gate word. */
static napi_value
tl_napi_gate_queued(napi_env env, napi_callback_info info)
{
  napi_value argv[3], result;
  void *addr;
  int width;
  uint32_t id;

  TL_GET_ARGS(env, info, 3, argv);
  if (tl__element(env, argv[0], argv[1], &addr, &width) != 0)
    return NULL;
  TL_NAPI_CALL(env, napi_get_value_uint32(env, argv[2], &id));
  TL_NAPI_CALL(env,
               napi_get_boolean(env, tl_gate_queued(addr, id) != 0, &result));
  return result;
}

/* threadAlive(id) -> whether lock owner `id` is a live thread (one that
 * registered and has not been torn down). */
static napi_value
tl_napi_thread_alive(napi_env env, napi_callback_info info)
{
  napi_value argv[1], result;
  uint32_t id;

  TL_GET_ARGS(env, info, 1, argv);
  TL_NAPI_CALL(env, napi_get_value_uint32(env, argv[0], &id));
  TL_NAPI_CALL(env, napi_get_boolean(env, tl_thread_alive(id) != 0, &result));
  return result;
}

/* cancel(token) -> true if the request (a wait or a gate request) was
 * withdrawn before a notify or grant; its promise then resolves with
 * TL_RESULT_INTERRUPTED, which the caller ignores. */
static napi_value
tl_napi_cancel(napi_env env, napi_callback_info info)
{
  napi_value argv[1], code, result;
  tl_async_t *n;
  bool removed = false;

  TL_GET_ARGS(env, info, 1, argv);
  TL_NAPI_CALL(env, napi_get_value_external(env, argv[0], (void **)&n));
  TL_NAPI_CALL(env, napi_create_int32(env, TL_RESULT_INTERRUPTED, &code));
  if (!n->done && tl_cancel(&n->w, TL_CANCELLED)) {
    removed = true;
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
  if (tl_thread_register(id) != 0) {
    tl__throw_enomem(env);
    return NULL;
  }
  e->lock_id = id;
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

#ifdef TL_FAULT_INJECTION
/* The address that faultArm notifies when the armed allocation fails. */
static void *_Atomic tl__fault_notify_addr;

static void
tl__fault_notify(void *data)
{
  (void)data;
  tl_notify(atomic_load(&tl__fault_notify_addr), -1);
}

/* faultArm(n[, ta, index]): the nth allocation from now fails (0: none);
 * with an element, a notify of it runs at the moment of the failure, as if
 * another thread had notified just then. Only in TL_FAULT_INJECTION builds,
 * like faultFired() and allocLive(). */
static napi_value
tl_napi_fault_arm(napi_env env, napi_callback_info info)
{
  napi_value argv[3];
  size_t argc = 3;
  double n;
  void *addr = NULL;
  int width;

  TL_NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  TL_NAPI_CALL(env, napi_get_value_double(env, argv[0], &n));
  if (argc >= 3 && tl__element(env, argv[1], argv[2], &addr, &width) != 0)
    return NULL;
  atomic_store(&tl__fault_notify_addr, addr);
  tl_fault_arm((uint64_t)n, addr != NULL ? tl__fault_notify : NULL, NULL);
  return NULL;
}

static napi_value
tl_napi_fault_fired(napi_env env, napi_callback_info info)
{
  napi_value result;

  (void)info;
  TL_NAPI_CALL(env, napi_get_boolean(env, tl_fault_fired(), &result));
  return result;
}

static napi_value
tl_napi_alloc_live(napi_env env, napi_callback_info info)
{
  (void)info;
  return tl__int(env, tl_alloc_live());
}
#endif

/* binding.constants: every table of waiters.h and names.h, frozen, so that
 * lib/ reads the values instead of repeating them. */
static napi_value
tl__constants(napi_env env)
{
  static const struct {
    const char *name;
    int32_t value;
  } table[] = {
#define TL__CONSTANT(name, value) { #name, TL_##name },
    TL_RESULT_MAP(TL__CONSTANT) TL_ERRNO_MAP(TL__CONSTANT)
        TL_GATE_MAP(TL__CONSTANT) TL_WORD_MAP(TL__CONSTANT)
            TL_POLICY_MAP(TL__CONSTANT) TL_NAMED_MAP(TL__CONSTANT)
#undef TL__CONSTANT
  };
  napi_value constants, v;

  TL_NAPI_CALL(env, napi_create_object(env, &constants));
  for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
    TL_NAPI_CALL(env, napi_create_int32(env, table[i].value, &v));
    TL_NAPI_CALL(env,
                 napi_set_named_property(env, constants, table[i].name, v));
  }
  TL_NAPI_CALL(env, napi_object_freeze(env, constants));
  return constants;
}

NAPI_MODULE_INIT()
{
  static const struct {
    const char *name;
    napi_callback cb;
  } fns[] = {
    { "wait", tl_napi_wait },
    { "notify", tl_napi_notify },
    { "casNotify", tl_napi_cas_notify },
    { "waitAsync", tl_napi_wait_async },
    { "waiterCount", tl_napi_waiter_count },
    { "wordKey", tl_napi_word_key },
    { "totalWaiters", tl_napi_total_waiters },
    { "cancel", tl_napi_cancel },
    { "gateAcquire", tl_napi_gate_acquire },
    { "gateAcquireAsync", tl_napi_gate_acquire_async },
    { "gateRelease", tl_napi_gate_release },
    { "gateQueued", tl_napi_gate_queued },
    { "threadAlive", tl_napi_thread_alive },
    { "register", tl_napi_register },
    { "isDetached", tl_napi_is_detached },
    { "setSpin", tl_napi_set_spin },
#ifdef TL_FAULT_INJECTION
    { "faultArm", tl_napi_fault_arm },
    { "faultFired", tl_napi_fault_fired },
    { "allocLive", tl_napi_alloc_live },
#endif
  };
  napi_value constants;
  char *refusal = NULL;

  /* A second copy of threadlock in the process refuses to load. */
  if (tl_singleton_claim(&refusal) != 0) {
    napi_throw_error(env, "ERR_THREADLOCK_DUPLICATE",
                     refusal ? refusal : "threadlock: another copy is loaded");
    free(refusal);
    return NULL;
  }
  /* Loading the same file again in one thread reuses that thread's state. */
  if (tl__env(env) == NULL && tl__env_new(env, tl__call_js) == NULL)
    return NULL;
  for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
    napi_value fn;
    TL_NAPI_CALL(env, napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH,
                                           fns[i].cb, NULL, &fn));
    TL_NAPI_CALL(env, napi_set_named_property(env, exports, fns[i].name, fn));
  }
  constants = tl__constants(env);
  if (constants == NULL)
    return NULL;
  TL_NAPI_CALL(env,
               napi_set_named_property(env, exports, "constants", constants));
  if (tl__named_exports(env, exports) == NULL)
    return NULL;
  if (tl__host_exports(env, exports) == NULL)
    return NULL;
  return tl__shm_exports(env, exports);
}
